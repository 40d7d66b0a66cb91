"""A dataset's media: the case fields dataset.images and dataset.audio name, read, checked and bound into the
dataset's identity.

Each named field becomes a media part (evalkit.records.ImagePart, AudioPart) the task sends as `case.<field>`, while
the case's field keeps the part's description (media type, SHA-256, size, path), which is what run_input, the checks
and the reports carry; the bytes stay in their files. The dataset's fingerprint then covers every file's SHA-256,
so an image changed by one pixel is a changed dataset, and its recorded requests are stale.
"""

from __future__ import annotations

import base64
import io
from dataclasses import replace
from pathlib import Path

from evalkit.core.config import DatasetConfig, ModelConfig
from evalkit.core.dataset import Case, Dataset, DatasetLimits
from evalkit.core.errors import InputError
from evalkit.core.files import MAX_INPUT_BYTES_ENV, max_input_bytes
from evalkit.core.fingerprint import fingerprint
from evalkit.core.media import read_media
from evalkit.core.provider_specs import provider_spec, provider_specs
from evalkit.records.call import AudioPart, ImagePart, MediaPart

__all__ = ["THUMBNAIL_MAX_BYTES", "THUMBNAILS_MAX_TOTAL", "attach_media", "media_fields", "media_section",
           "refuse_media"]

THUMBNAIL_MAX_BYTES = 48 * 1024
"""The largest image a report carries as its own thumbnail (a `data:` URI, shown sized down by report.html). A larger
one is drawn down to 128 pixels with Pillow when it is installed (the `media` extra), and otherwise shown by its
description alone: a report must stay small enough to read and review."""
THUMBNAILS_MAX_TOTAL = 4 * 1024 * 1024
"""The most thumbnail bytes one report carries in all; the images past it are shown by their description."""


def media_fields(config: DatasetConfig) -> dict[str, str]:
    """Case field -> the kind of file it names (`image`, `audio`), in the config's order."""
    return {**{name: "image" for name in config.images}, **{name: "audio" for name in config.audio}}


def attach_media(dataset: Dataset, fields: dict[str, str], dataset_file: Path, limits: DatasetLimits) -> Dataset:
    """`dataset` with each case's media `fields` (field -> `image` or `audio`) read from `dataset_file`'s folder
    under `limits`; the dataset itself when `fields` is empty (its fingerprint, and so every key and recording made
    before media existed, unchanged)."""
    if not fields:
        return dataset
    folder = dataset_file.parent
    cases: list[Case] = []
    hashes: dict[str, list[list[str]]] = {"image": [], "audio": []}
    for case in dataset.cases:
        media: dict[str, MediaPart] = {}
        for name, kind in fields.items():
            where = f"{dataset_file}: case {case.id!r}, field {name!r}"
            setting = "dataset.images" if kind == "image" else "dataset.audio"
            if name not in case.fields:
                raise InputError(f"{where}: missing; {setting} names it, so every case needs it (or remove it from "
                                 f"{setting})")
            limit, limit_setting = _part_limit(limits, kind)
            found = read_media(case.fields[name], folder, where, kind=kind, limit=limit, setting=limit_setting)
            part_type = ImagePart if kind == "image" else AudioPart
            media[name] = part_type.model_validate({"media_type": found.media_type, "sha256": found.sha256,
                                                    "size": found.size, "path": found.path}).located(found.source)
            hashes[kind].append([case.id, name, found.sha256])
        total = sum(part.size for part in media.values())
        if total > limits.max_request_media_bytes:
            raise InputError(f"{dataset_file}: case {case.id!r} names {total:,} bytes of images and audio, more "
                             f"than dataset.limits.max_request_media_bytes ({limits.max_request_media_bytes:,}), what "
                             "one request may carry; use smaller files, or raise the limit")
        described = {name: part.model_dump(mode="json") for name, part in media.items()}
        cases.append(replace(case, fields={**case.fields, **described}).with_media(media))
    images = [name for name, kind in fields.items() if kind == "image"]
    identity: dict[str, object] = {"dataset": dataset.sha, "images": images, "image_sha256": hashes["image"]}
    if hashes["audio"]:  # only then: the fingerprint of a dataset of images is as it was before audio existed
        identity |= {"audio": [name for name, kind in fields.items() if kind == "audio"],
                     "audio_sha256": hashes["audio"]}
    return replace(dataset, sha=fingerprint(identity), cases=tuple(cases))


def _part_limit(limits: DatasetLimits, kind: str) -> tuple[int, str]:
    """The byte limit of one file of `kind`, and the setting its refusal names (EVALKIT_MAX_INPUT_BYTES where
    lower)."""
    own, setting = ((limits.max_image_bytes, "dataset.limits.max_image_bytes") if kind == "image"
                    else (limits.max_audio_bytes, "dataset.limits.max_audio_bytes"))
    everything = max_input_bytes()
    return (everything, MAX_INPUT_BYTES_ENV) if everything < own else (own, setting)


def refuse_media(model: ModelConfig, dataset: Dataset, fields: dict[str, str]) -> None:
    """Refuse, before any call, a run whose dataset names a kind of media its model's provider does not take (its
    spec's `media`: llama.cpp in process takes none, Anthropic no audio), naming the provider and the part."""
    takes = provider_spec(model.provider).media or ()
    for name, kind in fields.items():
        if kind not in takes:
            case = dataset.cases[0]
            part = case.media[name]
            which = sorted(spec.name for spec in provider_specs().values() if kind in (spec.media or ()))
            raise InputError(f"model.provider={model.provider} takes no {kind}, and case {case.id!r} sends the "
                             f"{kind} part {name!r} ({part.path}); choose a model whose provider takes {kind} "
                             f"({', '.join(which)}), or remove it from dataset.{'images' if kind == 'image' else kind}")


def media_section(dataset: Dataset, fields: dict[str, str]) -> dict[str, list[dict[str, object]]]:
    """The run report's `media` block: per case, each media field's kind, description and, for an image, its
    thumbnail (a `data:` URI of at most THUMBNAIL_MAX_BYTES, or None, with `why`). Empty without media fields."""
    section: dict[str, list[dict[str, object]]] = {}
    total = 0
    for case in dataset.cases:
        shown = []
        for name in fields:
            part: MediaPart = case.media[name]
            thumbnail, why = _thumbnail(part) if isinstance(part, ImagePart) else (None, "audio: no thumbnail")
            if thumbnail is not None and total + len(thumbnail) > THUMBNAILS_MAX_TOTAL:
                thumbnail, why = None, f"the report carries at most {THUMBNAILS_MAX_TOTAL:,} bytes of thumbnails"
            total += len(thumbnail or "")
            shown.append({"field": name, **part.model_dump(mode="json"), "thumbnail": thumbnail,
                          **({"why": why} if why else {})})
        if shown:
            section[case.id] = shown
    return section


_MAX_PIXELS = 40_000_000
"""Pixels past which an image is not decoded for its thumbnail (a small PNG can hold a huge, empty canvas)."""


def _thumbnail(part: ImagePart) -> tuple[str | None, str | None]:
    data = part.data()
    if len(data) <= THUMBNAIL_MAX_BYTES:
        return f"data:{part.media_type};base64,{base64.b64encode(data).decode('ascii')}", None
    try:
        from PIL import Image
    except ImportError:
        return None, (f"{part.size:,} bytes, over the {THUMBNAIL_MAX_BYTES:,} a report carries as it is; install "
                      "Pillow (the media extra) for a drawn-down thumbnail")
    try:
        with Image.open(io.BytesIO(data)) as image:  # reads the header only, so far
            if image.width * image.height > _MAX_PIXELS:
                return None, f"{image.width}x{image.height} pixels, too many to draw down"
            image.thumbnail((128, 128))
            out = io.BytesIO()
            image.convert("RGB").save(out, format="PNG")
    except (OSError, ValueError, Image.DecompressionBombError) as error:
        return None, f"Pillow could not draw it down ({type(error).__name__})"
    small = out.getvalue()
    if len(small) > THUMBNAIL_MAX_BYTES:
        return None, "its 128-pixel thumbnail is still too large to carry"
    return f"data:image/png;base64,{base64.b64encode(small).decode('ascii')}", None
