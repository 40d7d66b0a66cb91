"""The installed version of evalkit (from the package metadata, so pyproject.toml is the one source)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("evalkit")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0+unknown"
