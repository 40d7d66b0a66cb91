"""A minimal PEP 517 build backend: the wheel of evalkit-toy-provider, written with zipfile (authored for tests)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

NAME, VERSION = "evalkit_toy_provider", "0.1.0"
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
HERE = Path(__file__).parent


def _files() -> dict[str, bytes]:
    files = {f"{NAME}/__init__.py": (HERE / NAME / "__init__.py").read_bytes()}
    files[f"{DIST_INFO}/METADATA"] = (f"Metadata-Version: 2.1\nName: evalkit-toy-provider\nVersion: {VERSION}\n"
                                      "Summary: an authored evalkit provider plugin for tests\n").encode()
    files[f"{DIST_INFO}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: toy_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{DIST_INFO}/entry_points.txt"] = b"[evalkit.providers]\ntoy = evalkit_toy_provider:SPEC\n"
    return files


def build_wheel(wheel_directory: str, config_settings: object = None, metadata_directory: object = None) -> str:
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    files = _files()
    record = []
    with zipfile.ZipFile(Path(wheel_directory) / name, "w") as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        record.append(f"{DIST_INFO}/RECORD,,")
        wheel.writestr(f"{DIST_INFO}/RECORD", "\n".join(record) + "\n")
    return name
