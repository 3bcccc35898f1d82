"""OCR accuracy on real media (issue #14 item 4): the detection-size cap must never take away the
upscaling RapidOCR gives a small frame. Real RapidOCR on frames of ../shared/eval/media."""

from __future__ import annotations

from pathlib import Path

import pytest

from talkthrough_assets.stages import ocr

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
    engine, status = ocr.engine_status(True)
    assert status == "rapidocr"
    lines = [ocr.read_image(engine, p)["text"].splitlines() for p in small_frames]
    title = [next((ln for ln in ls if "JPEG" in ln.upper()), None) for ls in lines]
    assert title == [TITLE] * len(small_frames), title  # before the fix: '1024x76825fpsPhotoJPEG75%'
