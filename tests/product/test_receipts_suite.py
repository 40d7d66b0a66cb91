"""The receipt-reading example suite end to end: images in requests, replayed from the shipped authored recording,
gated against the shipped baseline; a changed image, a mislabelled file and a provider that takes no images each
refused in one line, exit 3, before any call."""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from helpers.bounded import evalkit_bounded

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "suites" / "receipts"

pytestmark = pytest.mark.slow


def _run(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    done = evalkit_bounded("run", "suite=receipts", f"hydra.run.dir={tmp_path / 'job'}", *args, cwd=ROOT,
                           timeout_s=240)
    return done.returncode, done.stdout, done.stderr


def _copy_datasets(tmp_path: Path) -> Path:
    copy = tmp_path / "datasets"
    shutil.copytree(SUITE / "datasets", copy)
    return copy


def _one_pixel_changed(png: bytes) -> bytes:
    """The PNG with its first pixel's first byte changed: its chunks decoded, edited and written again by hand."""
    chunks, at = [], 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at:at + 4])
        chunks.append((png[at + 4:at + 8], png[at + 8:at + 8 + length]))
        at += 12 + length
    raw = bytearray(zlib.decompress(b"".join(data for kind, data in chunks if kind == b"IDAT")))
    raw[1] ^= 0xFF  # byte 0 of each row is its filter type; byte 1 is the first pixel
    out = png[:8]
    written = False
    for kind, data in chunks:
        if kind == b"IDAT":
            if written:
                continue
            data, written = zlib.compress(bytes(raw)), True
        out += struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return out


def test_the_shipped_suite_replays_images_and_goes_against_its_baseline(tmp_path: Path) -> None:
    code, out, err = _run(tmp_path)
    assert code == 0, err
    assert "decision: GO" in out
    report = json.loads((tmp_path / "job" / "report.json").read_text(encoding="utf-8"))
    taxi = next(c for c in report["cases"] if c["id"] == "taxi")
    assert taxi["input"]["receipt"]["path"] == "images/taxi.png"  # the part's description, in the case's input
    assert taxi["checks"]["reads_the_total"] == "failed"  # the authored fixture's one misread, on main too
    recording = next((ROOT / "recordings" / "receipts").glob("*.json")).read_text(encoding="utf-8")
    assert '"kind": "authored"' in recording  # an authored fixture, and it says so
    assert '"kind": "image"' in recording and "base64" not in recording  # the hash and size, never the bytes


def test_an_image_changed_by_one_pixel_is_a_changed_dataset_and_the_replay_refuses(tmp_path: Path) -> None:
    copy = _copy_datasets(tmp_path)
    taxi = copy / "images" / "taxi.png"
    taxi.write_bytes(_one_pixel_changed(taxi.read_bytes()))
    code, out, err = _run(tmp_path, f"dataset.file={copy / 'v1.json'}")
    assert code == 3, out + err
    line = err.strip().splitlines()[-1]
    assert "no recording of this identity" in line and "dataset_sha" in line, line


def test_an_html_file_named_png_is_refused_in_one_line(tmp_path: Path) -> None:
    copy = _copy_datasets(tmp_path)
    (copy / "images" / "taxi.png").write_text("<!doctype html><script>alert(1)</script>", encoding="utf-8")
    code, out, err = _run(tmp_path, f"dataset.file={copy / 'v1.json'}")
    assert code == 3, out + err
    assert err.strip().count("\n") == 0
    assert "case 'taxi', field 'receipt': 'images/taxi.png' is not a PNG, JPEG, WebP or GIF image" in err


def test_a_provider_that_takes_no_images_refuses_before_any_call(tmp_path: Path) -> None:
    code, out, err = _run(tmp_path, "model=smollm2", "mode=live")
    assert code == 3, out + err
    assert "model.provider=llamacpp takes no image, and case" in err and "the image part 'receipt'" in err
    assert err.strip().count("\n") == 0
