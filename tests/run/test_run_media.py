"""evalkit.run.media: a dataset's images read into image parts and bound into its fingerprint; a provider that takes
no images refused before any call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_provider_contract import tiny_png

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import DatasetLimits, load_dataset
from evalkit.core.errors import InputError
from evalkit.records.call import ImagePart, Message, Request, TextPart
from evalkit.run.media import attach_media, refuse_media
from evalkit.run.recording import request_fingerprint

RECEIPT = {"receipt": "image"}


def _dataset(tmp_path: Path, pixels: dict[str, int] | None = None) -> Path:
    (tmp_path / "images").mkdir(exist_ok=True)
    cases = []
    for case_id, red in (pixels or {"a": 10, "b": 20}).items():
        (tmp_path / "images" / f"{case_id}.png").write_bytes(tiny_png(red))
        cases.append({"id": case_id, "receipt": f"images/{case_id}.png", "total": "1.00"})
    path = tmp_path / "v1.json"
    path.write_text(json.dumps({"name": "r", "version": "1", "cases": cases}))
    return path


def _load(path: Path, limits: DatasetLimits | None = None) -> object:
    return attach_media(load_dataset(path), RECEIPT, path, limits or DatasetLimits())


def test_a_named_field_becomes_an_image_part_and_its_description(tmp_path: Path) -> None:
    path = _dataset(tmp_path)
    case = _load(path).cases[0]  # type: ignore[attr-defined]
    part = case.receipt
    assert isinstance(part, ImagePart) and part.data() == tiny_png(10)
    # what the checks and the reports see: the description, never the bytes
    assert case.fields["receipt"] == part.model_dump(mode="json")
    assert set(case.fields["receipt"]) == {"kind", "media_type", "sha256", "size", "path"}
    assert case.fields["receipt"]["path"] == "images/a.png"


def test_one_changed_pixel_changes_the_dataset_fingerprint_and_the_request_fingerprint(tmp_path: Path) -> None:
    path = _dataset(tmp_path)
    before = _load(path)
    (tmp_path / "images" / "b.png").write_bytes(tiny_png(21))
    after = _load(path)
    assert before.sha != after.sha  # type: ignore[attr-defined]
    assert load_dataset(path).sha == load_dataset(path).sha  # the JSON itself did not change: the image did

    def request(dataset: object) -> Request:
        case = dataset.cases[1]  # type: ignore[attr-defined]
        return Request(model="m", messages=(Message(role="user", content=(TextPart(text="Total?"), case.receipt)),))

    assert request_fingerprint(request(before)) != request_fingerprint(request(after))


def test_without_images_the_dataset_is_unchanged(tmp_path: Path) -> None:
    path = _dataset(tmp_path)
    plain = load_dataset(path)
    assert attach_media(plain, {}, path, DatasetLimits()) is plain


def test_a_case_without_the_named_field_is_refused(tmp_path: Path) -> None:
    path = _dataset(tmp_path)
    data = json.loads(path.read_text())
    del data["cases"][1]["receipt"]
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="case 'b', field 'receipt': missing; dataset.images names it"):
        _load(path)


def test_the_images_of_one_request_are_limited_in_all(tmp_path: Path) -> None:
    path = _dataset(tmp_path)
    size = len(tiny_png(10))
    limits = DatasetLimits(max_image_bytes=size, max_request_media_bytes=size - 1)
    with pytest.raises(InputError, match=r"case 'a' names \d+ bytes of images and audio, more than "
                                         r"dataset.limits.max_request_media_bytes"):
        _load(path, limits)
    with pytest.raises(InputError, match="dataset.limits.max_image_bytes"):
        _load(path, DatasetLimits(max_image_bytes=size - 1))


def test_the_parts_stay_out_of_what_the_checks_are_handed(tmp_path: Path) -> None:
    import msgspec
    case = _load(_dataset(tmp_path)).cases[0]  # type: ignore[attr-defined]
    handed = msgspec.to_builtins(case)
    assert handed == {"id": "a", "fields": case.fields}


def test_a_provider_that_takes_no_images_is_refused_up_front_naming_it_and_the_part(tmp_path: Path) -> None:
    dataset = _load(_dataset(tmp_path))
    with pytest.raises(InputError, match=r"^model.provider=llamacpp takes no image, and case 'a' sends the image "
                                         r"part 'receipt' \(images/a.png\); choose a model whose provider takes image "
                                         r"\(anthropic, azure, bedrock, gemini, ollama, openai\)"):
        refuse_media(ModelConfig(name="smollm2", provider="llamacpp"), dataset, RECEIPT)  # type: ignore[arg-type]
    refuse_media(ModelConfig(name="gpt", provider="openai"), dataset, RECEIPT)  # type: ignore[arg-type]


def test_the_reports_media_block_carries_each_small_image_as_its_own_thumbnail(tmp_path: Path) -> None:
    import base64

    from evalkit.run.media import THUMBNAIL_MAX_BYTES, media_section
    dataset = _load(_dataset(tmp_path))
    section = media_section(dataset, RECEIPT)  # type: ignore[arg-type]
    assert list(section) == ["a", "b"]
    (image,) = section["a"]
    head, _, data = str(image["thumbnail"]).partition(",")
    assert head == "data:image/png;base64" and base64.b64decode(data) == tiny_png(10)
    assert {k: image[k] for k in ("field", "path", "media_type", "size")} == {
        "field": "receipt", "path": "images/a.png", "media_type": "image/png", "size": len(tiny_png(10))}
    assert len(tiny_png(10)) < THUMBNAIL_MAX_BYTES


def test_a_large_image_is_drawn_down_or_shown_by_its_description(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    import sys

    from evalkit.run import media
    monkeypatch.setattr(media, "THUMBNAIL_MAX_BYTES", 10)  # every image is "large" now
    dataset = _load(_dataset(tmp_path))
    monkeypatch.setitem(sys.modules, "PIL", None)  # Pillow not installed
    (image,) = media.media_section(dataset, RECEIPT)["a"]  # type: ignore[arg-type]
    assert image["thumbnail"] is None and "install Pillow (the media extra)" in str(image["why"])


def test_a_report_carries_thumbnails_up_to_a_total(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalkit.run import media
    dataset = _load(_dataset(tmp_path, {f"c{i}": i for i in range(5)}))
    full = media.media_section(dataset, RECEIPT)  # type: ignore[arg-type]
    monkeypatch.setattr(media, "THUMBNAILS_MAX_TOTAL", sum(len(str(full[c][0]["thumbnail"])) for c in ("c0", "c1")))
    section = media.media_section(dataset, RECEIPT)  # type: ignore[arg-type]
    carried = [case_id for case_id, (image,) in section.items() if image["thumbnail"] is not None]
    assert carried == ["c0", "c1"]
    assert "at most" in str(section["c4"][0]["why"])


def _wav(sample: int) -> bytes:
    """A valid one-sample 8-bit mono WAV file."""
    import struct
    data = bytes([sample])
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def test_an_audio_field_becomes_an_audio_part_in_the_fingerprint(tmp_path: Path) -> None:
    from evalkit.records.call import AudioPart
    path = _dataset(tmp_path)
    data = json.loads(path.read_text())
    for case in data["cases"]:
        (tmp_path / f"{case['id']}.wav").write_bytes(_wav(128))
        case["note"] = f"{case['id']}.wav"
    path.write_text(json.dumps(data))
    fields = {"receipt": "image", "note": "audio"}
    both = attach_media(load_dataset(path), fields, path, DatasetLimits())
    part = both.cases[0].note
    assert isinstance(part, AudioPart) and part.media_type == "audio/wav" and part.data() == _wav(128)
    images_only = attach_media(load_dataset(path), RECEIPT, path, DatasetLimits())
    (tmp_path / "b.wav").write_bytes(_wav(129))
    changed = attach_media(load_dataset(path), fields, path, DatasetLimits())
    assert len({both.sha, images_only.sha, changed.sha}) == 3
    with pytest.raises(InputError, match="dataset.limits.max_audio_bytes"):
        attach_media(load_dataset(path), fields, path, DatasetLimits(max_audio_bytes=8))
    with pytest.raises(InputError, match=r"^model.provider=anthropic takes no audio, and case 'a' sends the audio "
                                         r"part 'note' \(a.wav\); choose a model whose provider takes audio "
                                         r"\(gemini, openai\)"):
        refuse_media(ModelConfig(name="claude", provider="anthropic"), both, fields)  # type: ignore[arg-type]
    refuse_media(ModelConfig(name="gemini", provider="gemini"), both, fields)  # type: ignore[arg-type]
