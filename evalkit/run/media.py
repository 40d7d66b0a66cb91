"""A dataset's images: the case fields dataset.images names, read, checked and bound into the dataset's identity.

Each named field becomes an image part (evalkit.records.ImagePart) the task sends as `case.<field>`, while the
case's field keeps the part's description (media type, SHA-256, size, path), which is what run_input, the checks
and the reports carry; the bytes stay in their files. The dataset's fingerprint then covers every image's SHA-256,
so an image changed by one pixel is a changed dataset, and its recorded requests are stale.
"""

from __future__ import annotations

import base64
import io
from dataclasses import replace
from pathlib import Path

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case, Dataset, DatasetLimits
from evalkit.core.errors import InputError
from evalkit.core.files import MAX_INPUT_BYTES_ENV, max_input_bytes
from evalkit.core.fingerprint import fingerprint
from evalkit.core.media import read_image
from evalkit.core.provider_specs import provider_spec
from evalkit.records.call import ImagePart

__all__ = ["THUMBNAIL_MAX_BYTES", "attach_images", "media_section", "refuse_images"]

THUMBNAIL_MAX_BYTES = 48 * 1024
"""The largest image a report carries as its own thumbnail (a `data:` URI, shown sized down by report.html). A larger
one is drawn down to 128 pixels with Pillow when it is installed (the `media` extra), and otherwise shown by its
description alone: a report must stay small enough to read and review."""
THUMBNAILS_MAX_TOTAL = 4 * 1024 * 1024
"""The most thumbnail bytes one report carries in all; the images past it are shown by their description."""


def attach_images(dataset: Dataset, fields: tuple[str, ...], dataset_file: Path, limits: DatasetLimits) -> Dataset:
    """`dataset` with each case's image `fields` read from `dataset_file`'s folder under `limits`; the dataset
    itself when `fields` is empty (its fingerprint, and so every key and recording made before images existed,
    unchanged)."""
    if not fields:
        return dataset
    folder = dataset_file.parent
    limit, setting = _part_limit(limits)
    cases: list[Case] = []
    hashes: list[list[str]] = []
    for case in dataset.cases:
        media: dict[str, ImagePart] = {}
        for name in fields:
            where = f"{dataset_file}: case {case.id!r}, field {name!r}"
            if name not in case.fields:
                raise InputError(f"{where}: missing; dataset.images names it, so every case needs it (or remove it "
                                 "from dataset.images)")
            found = read_image(case.fields[name], folder, where, limit=limit, setting=setting)
            media[name] = ImagePart(media_type=found.media_type,
                                    sha256=found.sha256, size=found.size, path=found.path).located(found.source)
            hashes.append([case.id, name, found.sha256])
        total = sum(part.size for part in media.values())
        if total > limits.max_request_image_bytes:
            raise InputError(f"{dataset_file}: case {case.id!r} names {total:,} bytes of images, more than "
                             f"dataset.limits.max_request_image_bytes ({limits.max_request_image_bytes:,}), what one "
                             "request may carry; use smaller images, or raise the limit")
        described = {name: part.model_dump(mode="json") for name, part in media.items()}
        cases.append(replace(case, fields={**case.fields, **described}).with_media(media))
    sha = fingerprint({"dataset": dataset.sha, "images": list(fields), "image_sha256": hashes})
    return replace(dataset, sha=sha, cases=tuple(cases))


def _part_limit(limits: DatasetLimits) -> tuple[int, str]:
    """The byte limit of one image, and the setting its refusal names (EVALKIT_MAX_INPUT_BYTES where lower)."""
    everything = max_input_bytes()
    if everything < limits.max_image_bytes:
        return everything, MAX_INPUT_BYTES_ENV
    return limits.max_image_bytes, "dataset.limits.max_image_bytes"


def refuse_images(model: ModelConfig, dataset: Dataset, fields: tuple[str, ...]) -> None:
    """Refuse, before any call, a run whose dataset names images for a model whose provider takes none (its
    spec's `media` lacks `image`: llama.cpp in process), naming the provider and the part."""
    if not fields or "image" in provider_spec(model.provider).media:
        return
    case = dataset.cases[0]
    part = case.media[fields[0]]
    raise InputError(f"model.provider={model.provider} takes no images, and case {case.id!r} sends the image part "
                     f"{fields[0]!r} ({part.path}); choose a model whose provider takes images (openai, azure, "
                     "anthropic, gemini, bedrock, ollama), or remove dataset.images")


def media_section(dataset: Dataset, fields: tuple[str, ...]) -> dict[str, list[dict[str, object]]]:
    """The run report's `media` block: per case, each image's field, description and thumbnail (a `data:` URI of at
    most THUMBNAIL_MAX_BYTES, or None, with `why`). Empty when the dataset names no images."""
    section: dict[str, list[dict[str, object]]] = {}
    total = 0
    for case in dataset.cases:
        shown = []
        for name in fields:
            part: ImagePart = case.media[name]
            thumbnail, why = _thumbnail(part)
            if thumbnail is not None and total + len(thumbnail) > THUMBNAILS_MAX_TOTAL:
                thumbnail, why = None, f"the report carries at most {THUMBNAILS_MAX_TOTAL:,} bytes of thumbnails"
            total += len(thumbnail or "")
            shown.append({"field": name, **part.model_dump(mode="json", exclude={"kind"}), "thumbnail": thumbnail,
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
