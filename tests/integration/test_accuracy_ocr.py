"""OCR accuracy on real media (issue #14 item 4): the detection-size cap must never take away the
upscaling RapidOCR gives a small frame. Real RapidOCR on frames of ../shared/eval/media."""

from __future__ import annotations

from pathlib import Path

import pytest

from talkthrough_assets.model.frames import Band
from talkthrough_assets.stages import ocr
from talkthrough_assets.stages.ocr import engine as ocr_engine
from talkthrough_assets.stages.ocr.records import FrameToRead

MEDIA = Path(__file__).resolve().parents[3] / "shared" / "eval" / "media"
LONG_EXAMPLE = MEDIA / "video" / "moviepy_long_example.mp4"  # 640x480, title on every frame
TITLE = "1024 x 768 25 fps Photo JPEG 75%"


@pytest.fixture(scope="module")
def small_frames(tmp_path_factory) -> list[Path]:
    """Four 640x480 frames (0, 4, 8, 12 s) saved as JPEG the way keyframes are."""
    import av

    assert LONG_EXAMPLE.is_file(), f"evaluation media missing: {LONG_EXAMPLE}"
    out = tmp_path_factory.mktemp("ocr_small")
    paths = []
    with av.open(str(LONG_EXAMPLE)) as c:
        for i, frame in enumerate(c.decode(c.streams.video[0])):
            if i % 100 == 0:
                p = out / f"f{i:04d}.jpg"
                frame.to_image().save(p, quality=90)
                paths.append(p)
    assert [Image_size(p) for p in paths] == [(640, 480)] * 4
    return paths


def Image_size(p: Path) -> tuple[int, int]:
    from PIL import Image

    with Image.open(p) as im:
        return im.size


def test_small_frame_title_words_are_not_glued(small_frames):
    engine, status = ocr_engine.engine_status(True)
    assert status == "rapidocr"
    lines = [ocr.read_image(engine, p).text.splitlines() for p in small_frames]
    title = [next((ln for ln in ls if "JPEG" in ln.upper()), None) for ls in lines]
    assert title == [TITLE] * len(small_frames), title  # before the fix: '1024x76825fpsPhotoJPEG75%'


def _terminal(lines: list[str], spacing: int, size=(1280, 360)):
    from PIL import Image, ImageDraw

    im = Image.new("RGB", size, (250, 250, 250))
    d = ImageDraw.Draw(im)
    for i, line in enumerate(lines):
        d.text((24, 40 + spacing * i), line, fill=(20, 20, 20), font_size=28)
    return im


def _box_of(result, text: str) -> tuple:
    return next(b.box for b in result.boxes if text in b.text)


def _squeezed(text: str) -> list[str]:  # RapidOCR may or may not read a space between words
    return ["".join(line.split()) for line in text.splitlines()]


@pytest.mark.parametrize("spacing", [36, 34])
def test_a_band_re_read_keeps_a_line_across_the_band_edge(tt_home, tmp_path, spacing):
    """Issue #23: a re-read band is grown to the whole lines it touches, so a line that straddles
    the band's edge (here the line above the changed one) is re-read whole, not cut or dropped.
    Before the fix, line spacing 36 px lost "echo $password" and 34 px read it "ecro$passwora"."""
    from talkthrough_assets.stages import dedup

    before = ["deploy --target staging", "cat config.yaml", "echo $password", "export user=admin"]
    after = before[:3] + ["export user=root"]
    a, b = tmp_path / "a.jpg", tmp_path / "b.jpg"
    _terminal(before, spacing).save(a, quality=90)
    _terminal(after, spacing).save(b, quality=90)
    bands = dedup.changed_bands(dedup.signature(a), dedup.signature(b))
    assert bands and len(bands) == 1, bands

    engine, status = ocr_engine.engine_status(True)
    assert status == "rapidocr"
    full_a, full_b = ocr.read_image(engine, a), ocr.read_image(engine, b)
    want = _squeezed("\n".join(after))
    assert _squeezed(full_b.text) == want, full_b.text  # what a full read of the new frame gives
    # the setup is the case in question: dedup's band edge cuts through the "echo $password" line
    ys = [p[1] for p in _box_of(full_a, "echo")]
    assert min(ys) < bands[0][1] < max(ys), (bands, ys)

    out = ocr.read_frames(engine, [FrameToRead(ms=0, path=a),
                                   FrameToRead(ms=1000, path=b, bands=tuple(Band(*band) for band in bands))])
    assert [r.read for r in out] == ["full", "bands"]
    assert _squeezed(out[1].text) == want, out[1].text


NO_NETWORK = r"""
import socket, sys
def _audit(event, args):  # any connection or name lookup attempt fails, as on a machine without network
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.sendto"):
        addr = args[1] if event in ("socket.connect", "socket.sendto") else args[0]
        if not (isinstance(addr, str) and addr.startswith("/")):  # AF_UNIX stays allowed
            raise OSError(101, f"network unreachable (test): {event} {addr!r}")
sys.addaudithook(_audit)
try:
    socket.create_connection(("pypi.org", 443), timeout=2)
    sys.exit("the network block did not hold")
except OSError:
    pass
from talkthrough_assets.stages import ocr
from talkthrough_assets.stages.ocr import engine as ocr_engine
engine, status = ocr_engine.engine_status(True)
print(status)
print(ocr.read_image(engine, sys.argv[1]).text)
"""


def test_ocr_loads_its_bundled_models_with_the_network_unreachable(tmp_path):
    """Issue #20: rapidocr 3.x is given the model files inside its wheel; nothing is downloaded at run
    time. A fresh process whose every network attempt fails (audit hook) and whose HOME is empty loads
    the engine and reads a frame."""
    import os
    import subprocess
    import sys

    img = tmp_path / "frame.jpg"
    _terminal(["make deploy ENV=staging", "echo $password"], 40).save(img, quality=90)
    env = dict(os.environ, HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-c", NO_NETWORK, str(img)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    status, *lines = p.stdout.strip().splitlines()
    assert status == "rapidocr", p.stdout
    assert _squeezed("\n".join(lines)) == ["makedeployENV=staging", "echo$password"], p.stdout
    assert all(Path(m).is_file() for m in ocr_engine.bundled_models().values())
