"""BASELINE (frozen copy of v1, for bench/bench_accuracy.py only). dedup: dHash (9x8 grey, 64 bits) on consecutive keyframes; Hamming <= threshold -> duplicate_of."""

from __future__ import annotations

CODE_VERSION = "1"
HAMMING_MAX = 4


# Screen recordings often keep one layout while the text changes (slide decks, dashboards):
# a 9x8 dHash alone calls such frames equal and OCR would skip the new text. A finer 17x16
# dHash must agree too before a frame counts as a duplicate.
FINE_SIZE = 16
FINE_HAMMING_MAX = 12


def _dhash_bits(gray, size: int) -> int:
    from PIL import Image

    g = gray.resize((size + 1, size), Image.Resampling.LANCZOS)
    w, h = g.size
    px = g.tobytes()
    bits = 0
    for row in range(h):
        for col in range(w - 1):
            bits = (bits << 1) | (px[row * w + col] > px[row * w + col + 1])
    return bits


def hashes(image) -> tuple[int, int]:
    """(64-bit 9x8 dHash, 256-bit 17x16 dHash) of a PIL image or a path to one."""
    from PIL import Image

    if not isinstance(image, Image.Image):
        with Image.open(image) as im:
            return hashes(im.convert("L"))
    gray = image.convert("L")
    return _dhash_bits(gray, 8), _dhash_bits(gray, FINE_SIZE)


def dhash(image) -> int:
    """64-bit difference hash (9x8 grey) of a PIL image or a path to one."""
    return hashes(image)[0]


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def is_duplicate(prev: tuple[int, int], cur: tuple[int, int], threshold: int = HAMMING_MAX) -> bool:
    return hamming(prev[0], cur[0]) <= threshold and hamming(prev[1], cur[1]) <= FINE_HAMMING_MAX


def mark(frames: list[dict], frame_hashes: list[tuple[int, int]], threshold: int = HAMMING_MAX) -> list[dict]:
    """Compare each frame with the previous one; a near-identical frame points at the first of its run."""
    out = []
    run_head_ms = None
    prev = None
    for f, h in zip(frames, frame_hashes):
        dup_of = None
        if prev is not None and is_duplicate(prev, h, threshold):
            dup_of = run_head_ms
        else:
            run_head_ms = f["ms"]
        out.append({"ms": f["ms"], "dhash": f"{h[0]:016x}", "duplicate_of": dup_of})
        prev = h
    return out
