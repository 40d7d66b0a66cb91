"""evalkit.core.media: an image or audio file is what its bytes say, read only from inside the dataset's folder, under a limit."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from evalkit.core.errors import InputError
from evalkit.core.media import read_media, sniff_audio, sniff_image

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 24
GIF = b"GIF89a" + b"\x00" * 24
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 16


@pytest.mark.parametrize("data, media_type", [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"),
                                              (b"GIF87a" + b"\x00" * 8, "image/gif"), (WEBP, "image/webp")])
def test_the_bytes_say_what_an_image_is(data: bytes, media_type: str) -> None:
    assert sniff_image(data) == media_type


@pytest.mark.parametrize("data", [b"<!doctype html><html>", b"", b"RIFF\x10\x00\x00\x00WAVEfmt ", b"\x89PNG",
                                  b"%PDF-1.7"])
def test_anything_else_is_no_image(data: bytes) -> None:
    assert sniff_image(data) is None


def _read(folder: Path, value: object, limit: int = 1 << 20) -> object:
    return read_media(value, folder, "data.json: case 'c1', field 'receipt'", kind="image", limit=limit,
                      setting="dataset.limits.max_image_bytes")


def test_a_png_named_jpg_is_a_png_with_its_hash_size_and_relative_path(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "r1.jpg").write_bytes(PNG)
    found = _read(tmp_path, "images/r1.jpg")
    assert (found.path, found.media_type, found.size, found.sha256) == (  # type: ignore[attr-defined]
        "images/r1.jpg", "image/png", len(PNG), hashlib.sha256(PNG).hexdigest())


def test_an_html_file_named_png_is_one_line_naming_the_case_and_field(tmp_path: Path) -> None:
    (tmp_path / "r1.png").write_bytes(b"<!doctype html><html><body>not a receipt</body></html>")
    with pytest.raises(InputError, match=r"^data.json: case 'c1', field 'receipt': 'r1.png' is not a PNG, JPEG, "
                                         r"WebP or GIF image \(its first bytes are b'<!doctyp'") as refused:
        _read(tmp_path, "r1.png")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("value", ["../secret.png", "/etc/passwd", "images/../../secret.png"])
def test_a_path_out_of_the_dataset_folder_is_refused(tmp_path: Path, value: str) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (tmp_path / "secret.png").write_bytes(PNG)
    with pytest.raises(InputError, match="must stay inside the dataset's folder"):
        _read(folder, value)


def test_a_link_out_of_the_dataset_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (tmp_path / "secret.png").write_bytes(PNG)
    os.symlink(tmp_path / "secret.png", folder / "r1.png")
    with pytest.raises(InputError, match="leads outside the dataset's folder through a link"):
        _read(folder, "r1.png")


def test_an_oversized_image_names_the_setting_to_raise(tmp_path: Path) -> None:
    (tmp_path / "r1.png").write_bytes(PNG + b"\x00" * 100)
    with pytest.raises(InputError, match="dataset.limits.max_image_bytes"):
        _read(tmp_path, "r1.png", limit=64)


@pytest.mark.parametrize("value", [None, 3, "", "   ", ["r1.png"]])
def test_a_field_that_names_no_file_is_refused(tmp_path: Path, value: object) -> None:
    with pytest.raises(InputError, match="expected the path of an image file relative to the dataset"):
        _read(tmp_path, value)


def test_a_missing_image_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="r1.png: image file not found"):
        _read(tmp_path, "r1.png")


WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 16
MP3_ID3 = b"ID3\x04\x00" + b"\x00" * 16
MP3_FRAME = b"\xff\xfb\x90\x64" + b"\x00" * 16


@pytest.mark.parametrize("data, media_type", [(WAV, "audio/wav"), (MP3_ID3, "audio/mpeg"), (MP3_FRAME, "audio/mpeg")])
def test_the_bytes_say_what_audio_is(data: bytes, media_type: str) -> None:
    assert sniff_audio(data) == media_type
    assert sniff_image(data) is None


@pytest.mark.parametrize("data", [JPEG, PNG, WEBP, b"<html>", b"\xff\xf1\x50\x80", b"OggS\x00\x02"])
def test_anything_else_is_no_audio(data: bytes) -> None:
    assert sniff_audio(data) is None  # a JPEG's FF D8 is no MPEG frame; AAC (layer 0) and Ogg are not taken


def test_an_image_named_wav_is_no_audio(tmp_path: Path) -> None:
    (tmp_path / "note.wav").write_bytes(PNG)
    with pytest.raises(InputError, match="'note.wav' is not WAV or MP3 audio"):
        read_media("note.wav", tmp_path, "d.json: case 'c1', field 'note'", kind="audio", limit=1 << 20,
                   setting="dataset.limits.max_audio_bytes")
    (tmp_path / "note.mp3").write_bytes(WAV)
    found = read_media("note.mp3", tmp_path, "w", kind="audio", limit=1 << 20, setting="s")
    assert found.media_type == "audio/wav"
