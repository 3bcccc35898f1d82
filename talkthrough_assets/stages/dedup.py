"""dedup: mark keyframes whose content did not change since the head of their run.

A frame is a duplicate only when nothing a reader could notice changed. It is compared with the
first frame of its run (so slow drift accumulates instead of hiding) at 1/4 scale in grey: more
than ``MAX_CHANGED_PX`` pixels moving by more than ``PX_DELTA`` grey levels (one changed digit of
28 px text moves ~10; decoding the same picture twice moves none) or any cell of a 16x9 colour
thumbnail shifting by more than ``COLOR_DELTA`` (a recoloured banner) makes it new, with one exception:

A small thing that moves or keeps changing (a mouse pointer, a blinking caret, a clock in a corner) is not a
new scene. A frame whose change since the head covers at most ``SMALL_SHARE`` of the frame is a duplicate
when every changed pixel is either volatile (it changed between consecutive keyframes at least twice in
the stretch of small changes around the frame, up to ``LOOKAHEAD`` keyframes on: a caret, a clock, the
pointer's path) or part of a blob whose picture shows up at another changed place of the other frame (the
pointer where it was or where it went: the ends of its path), or a tick (it changed a little in at least
``TICK_SCENES`` other scenes too: a clock ticks on every slide; but not ink put where the head was blank,
as a line typed at the same spot in every scene is: a clock's change rubs out the digit that was there),
or a solid bar shaped like a caret. A real edit (one changed word, a changed digit) changes once and
stays, and no other place holds its picture, so it stays new, clock or not. A slide shows in only a few keyframes (a quiet stretch gives one per I-frame,
1-2 s or more apart): hence the picture and scene-wide evidence, not a long history. What this gives
up: a lone appended "l", "|" or small "!" (a bar, like a caret, at 1/4 scale) and an edit under the
pointer's path or over a clock's digits are taken for those. Of a new frame, the OCR stage reads only the bands that changed (``changed``), so
being strict costs little.

The 1/4-scale grey image comes from the JPEG's DCT scaling (``draft``), ~3 ms a 1568 px frame.
The stored ``dhash`` (9x8 difference hash) stays as a compact fingerprint for consumers.
"""

from __future__ import annotations

from talkthrough_assets import store
from talkthrough_assets.model.frames import Band, FrameChange, Keyframe
from talkthrough_assets.stages.runner import StageResult, digest

CODE_VERSION = "6"  # 6: text written on blank background is new even where other scenes change; 5: changed bands stored as a list of structs, not JSON; 4: a small moving or blinking thing (pointer, caret, clock) is not a new scene
SCALE = 4
PX_DELTA = 40
MAX_CHANGED_PX = 2
COLOR_W, COLOR_H = 16, 9
COLOR_DELTA = 12
# A changed area is widened to whole text bands: rows of this many px (frame scale) around the change.
BAND_MARGIN_PX = 24
# ... and this many px left and right of the changed columns.
BAND_MARGIN_X_PX = 48
# A change of at most this share of the frame's pixels is small: a pointer (~0.07 % of a 1280x720
# screen at two places), a caret, a corner clock's digits; a timecode that fills the picture changes ~1 %.
SMALL_SHARE = 0.005
# Keyframes after a frame that may still show one of its changed pixels changing again.
LOOKAHEAD = 2
# A pixel that changed a little in this many other scenes keeps changing (a clock), wherever it is.
TICK_SCENES = 2
# ... counting a change this many grey px (x SCALE frame px) around it: the next digit of a clock.
TICK_GROW_PX = 4
# A changed blob's box in the head frame holding at most this share of ink is blank: what changed there is
# new writing (a typed line), not a tick, even where other scenes change too.
BLANK_INK_SHARE = 0.05
# Mean grey difference under which a blob's picture is the same thing at another place.
MOVED_DELTA = 48
# ... and how many grey px its box may differ in size and place from the blob it is matched with.
MOVED_SLACK_PX = 3
# Above this share of the frame's area in bands, the OCR stage reads the whole frame anyway.
MAX_BAND_SHARE = 0.5


class Signature:
    __slots__ = ("gray", "color", "dhash", "size")

    def __init__(self, gray, color, dhash: int, size: tuple[int, int]):
        self.gray, self.color, self.dhash, self.size = gray, color, dhash, size


def _dhash_bits(gray_img, size: int = 8) -> int:
    from PIL import Image

    g = gray_img.resize((size + 1, size), Image.Resampling.BOX)
    w, h = g.size
    px = g.tobytes()
    bits = 0
    for row in range(h):
        for col in range(w - 1):
            bits = (bits << 1) | (px[row * w + col] > px[row * w + col + 1])
    return bits


def signature(image) -> Signature:
    """Quarter-scale grey + colour thumbnail + dHash of a PIL image or a path to a JPEG/PNG."""
    from PIL import Image

    if not isinstance(image, Image.Image):
        with Image.open(image) as im:
            size = im.size
            im.draft("RGB", (max(1, size[0] // SCALE), max(1, size[1] // SCALE)))  # JPEG: DCT-scaled decode
            return _signature(im.convert("RGB"), size)
    return _signature(image.convert("RGB"), image.size)


def _signature(rgb, size: tuple[int, int]) -> Signature:
    import numpy as np
    from PIL import Image

    w, h = max(1, size[0] // SCALE), max(1, size[1] // SCALE)
    if rgb.size != (w, h):
        rgb = rgb.resize((w, h), Image.Resampling.BOX)
    gray = rgb.convert("L")
    color = rgb.resize((COLOR_W, COLOR_H), Image.Resampling.BOX)
    return Signature(np.asarray(gray, dtype=np.int16), np.asarray(color, dtype=np.int16), _dhash_bits(gray), size)


def _mask(a: Signature, b: Signature):
    if a.gray.shape != b.gray.shape:
        return None
    return abs(a.gray - b.gray) > PX_DELTA


def changed_px(a: Signature, b: Signature) -> int:
    m = _mask(a, b)
    return int(m.sum()) if m is not None else a.gray.size


def color_shift(a: Signature, b: Signature) -> int:
    return int(abs(a.color - b.color).max())


def is_duplicate(head: Signature, cur: Signature) -> bool:
    return changed_px(head, cur) <= MAX_CHANGED_PX and color_shift(head, cur) <= COLOR_DELTA


def changed_bands(prev: Signature, cur: Signature) -> list[list[int]] | None:
    """Bands [x0, y0, x1, y1] (frame px) that hold every change from ``prev`` to ``cur``: rows of change
    widened by ``BAND_MARGIN_PX``, each as wide as the changed columns in it plus ``BAND_MARGIN_X_PX`` (a
    blinking cursor is a small box, not a strip across the frame: OCR grows a band to the whole lines it
    touches anyway). None when the change is too large (or the sizes differ) for a partial re-read to pay."""
    import numpy as np

    m = _mask(prev, cur)
    if m is None:
        return None
    w, h = cur.size
    gh, gw = cur.gray.shape
    # (y0, y1, x0, x1) in frame px of each changed grey row (its changed columns) ...
    spans = [(r * h / gh, (r + 1) * h / gh, c[0] * w / gw, (c[-1] + 1) * w / gw)
             for r in np.flatnonzero(m.any(axis=1)) for c in [np.flatnonzero(m[r])]]
    # ... and of colour-only changes (a recoloured banner keeps its grey level): the changed colour cells
    cmask = (abs(prev.color - cur.color) > COLOR_DELTA).any(axis=2)
    for r in np.flatnonzero(cmask.any(axis=1)):
        c = np.flatnonzero(cmask[r])
        spans.append((r * h / COLOR_H, (r + 1) * h / COLOR_H, c[0] * w / COLOR_W, (c[-1] + 1) * w / COLOR_W))
    if not spans:
        return []
    bands: list[list[float]] = []
    for y0, y1, x0, x1 in sorted((a - BAND_MARGIN_PX, b + BAND_MARGIN_PX, c, d) for a, b, c, d in spans):
        if bands and y0 <= bands[-1][1]:
            bands[-1][1] = max(bands[-1][1], y1)
            bands[-1][2], bands[-1][3] = min(bands[-1][2], x0), max(bands[-1][3], x1)
        else:
            bands.append([y0, y1, x0, x1])
    out = [[max(0, int(x0 - BAND_MARGIN_X_PX)), max(0, int(y0)), min(w, int(np.ceil(x1 + BAND_MARGIN_X_PX))),
            min(h, int(np.ceil(y1)))] for y0, y1, x0, x1 in bands]
    if sum((b[2] - b[0]) * (b[3] - b[1]) for b in out) > MAX_BAND_SHARE * w * h:
        return None
    return out


def _small_diffs(sigs: list[Signature]) -> list:
    """Per frame, the flat indices of the (1/4-scale) pixels changed since the previous frame when that
    change is small, else None (a cut, the first frame). Indices: a long recording keeps little."""
    import numpy as np

    out = [None]
    for a, b in zip(sigs, sigs[1:]):
        m = _mask(a, b)
        out.append(np.flatnonzero(m) if m is not None and m.mean() <= SMALL_SHARE else None)
    return out


def _volatiles(small: list, sigs: list[Signature]):
    """Per frame, in order: the pixels that changed at least twice among the small consecutive changes
    from the last large change before it (a cut) up to ``LOOKAHEAD`` frames after it (a caret, a clock,
    a pointer's path), or None. One running count per stretch between cuts."""
    import numpy as np

    count, added = None, 0
    for i in range(len(small)):
        if small[i] is None:
            count, added = None, i
        hi = i
        while hi + 1 < len(small) and hi < i + LOOKAHEAD and small[hi + 1] is not None:
            hi += 1
        while added < hi:
            added += 1
            if count is None:
                count = np.zeros(sigs[added].gray.size, np.int16)
            count[small[added]] += 1
        yield None if count is None else (count >= 2).reshape(sigs[i].gray.shape)


def _grow(m, px: int = 1):
    """``m`` with every pixel's neighbours up to ``px`` away set too (anti-aliased edges of a moving thing)."""
    import numpy as np

    p = np.pad(m, px)
    h, w = m.shape
    return np.logical_or.reduce([p[dy:dy + h, dx:dx + w] for dy in range(2 * px + 1) for dx in range(2 * px + 1)])


def _blobs(m) -> list:
    """Connected (8-neighbour) groups of set pixels of a small mask: a list of (ys, xs) index arrays."""
    import numpy as np

    left = {(int(y), int(x)) for y, x in zip(*np.nonzero(m))}
    out = []
    while left:
        todo, group = [left.pop()], []
        while todo:
            y, x = todo.pop()
            group.append((y, x))
            for n in [(y + dy, x + dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]:
                if n in left:
                    left.remove(n)
                    todo.append(n)
        ys, xs = zip(*group)
        out.append((np.array(ys), np.array(xs)))
    return out


def _box(blob) -> tuple[int, int, int, int]:
    ys, xs = blob
    return int(ys.min()), int(xs.min()), int(ys.max()) + 1, int(xs.max()) + 1


def _moved(a, b, blob, others: list) -> bool:
    """Whether ``blob`` (pixels changed from grey image ``a`` to ``b``) is a thing that moved: another
    changed blob of about its size holds its picture (from one frame in the other): where it went, or
    where it came from. A pointer over text changes only where it differs from the text, hence the
    loose ``MOVED_DELTA``; two blobs of different size (an edit and a clock digit) never match."""
    y0, x0, y1, x1 = _box(blob)
    for other in others:
        oy0, ox0, oy1, ox1 = _box(other)
        if abs((oy1 - oy0) - (y1 - y0)) > MOVED_SLACK_PX or abs((ox1 - ox0) - (x1 - x0)) > MOVED_SLACK_PX:
            continue
        for dy in range(oy0 - y0 - MOVED_SLACK_PX, oy0 - y0 + MOVED_SLACK_PX + 1):
            for dx in range(ox0 - x0 - MOVED_SLACK_PX, ox0 - x0 + MOVED_SLACK_PX + 1):
                if _same_at(a, b, blob, dy, dx) or _same_at(b, a, blob, dy, dx):
                    return True
    return False


def _same_at(thing, other, blob, dy: int, dx: int) -> bool:
    ys, xs = blob[0] + dy, blob[1] + dx
    h, w = other.shape
    if ys.min() < 0 or xs.min() < 0 or ys.max() >= h or xs.max() >= w:
        return False
    return abs(other[ys, xs] - thing[blob]).mean() < MOVED_DELTA


def _caret(ys, xs) -> bool:
    """Changed pixels shaped like a text caret: a solid bar one or two grey px wide, at least three times
    as tall (a large "!" has a gap, a "1" a flag; a small "!" is a bar at 1/4 scale)."""
    h, w = int(ys.max() - ys.min()) + 1, int(xs.max() - xs.min()) + 1
    return w <= 2 and h >= max(3, 3 * w) and ys.size >= 0.9 * h * w


def is_transient(head: Signature, cur: Signature, still=None, ticks=None) -> bool:
    """A small change since ``head`` whose every blob is still (``still``: pixels known to keep changing, a
    mask or None; ``ticks``: pixels that change in other scenes, still unless the blob is writing on blank
    background), a caret or a thing that moved: a pointer, a caret, a clock, not a new scene."""
    import numpy as np

    m = _mask(head, cur)
    if m is None or not m.any() or m.mean() > SMALL_SHARE:
        return False
    grown = _grow(m)
    whole = _blobs(grown)
    if ticks is not None:
        ticks = ticks & ~_written(head.gray, m, whole)
        still = ticks if still is None else still | ticks
    for blob in _blobs(grown & ~still) if still is not None else whole:
        core = np.nonzero(m & _spot(m.shape, blob))  # its changed pixels, not the grown edge
        if not core[0].size or _caret(*core):
            continue
        mine = set(zip(*blob))
        others = [o for o in whole if not mine <= set(zip(*o))]
        if not _moved(head.gray, cur.gray, core, others):
            return False
    # a colour cell that shifted must hold some of the change (a recoloured banner elsewhere is new)
    gh, gw = m.shape
    cmask = (abs(head.color - cur.color) > COLOR_DELTA).any(axis=2)
    return all(grown[r * gh // COLOR_H:(r + 1) * gh // COLOR_H + 1,
                     c * gw // COLOR_W:(c + 1) * gw // COLOR_W + 1].any() for r, c in zip(*np.nonzero(cmask)))


def _written(a, m, blobs):
    """The blobs (of changed pixels ``m``) that are ink put where grey image ``a`` was blank: in the box of
    their changed pixels, ``a`` holds (almost) nothing but one background level. A typed line lands at the
    same spot scene after scene, like a clock's digits; but a clock's change always rubs out the digit that
    was there, so its box holds ink before the change."""
    import numpy as np

    out = np.zeros(m.shape, dtype=bool)
    for blob in blobs:
        ys, xs = np.nonzero(m & _spot(m.shape, blob))
        if not ys.size:
            continue
        box = a[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
        if (abs(box - np.median(box)) > PX_DELTA).mean() <= BLANK_INK_SHARE:
            out[blob] = True
    return out


def _spot(shape, blob):
    import numpy as np

    out = np.zeros(shape, dtype=bool)
    out[blob] = True
    return out


def _tickers(small: list, sigs: list[Signature]):
    """A function of a frame's index: the pixels that changed a little in at least ``TICK_SCENES`` other
    scenes (stretches between cuts) of the recording, or None. A clock in a corner ticks on every
    slide; an edit happens once."""
    import numpy as np

    scene_of, scenes = [], []
    for i, d in enumerate(small):
        if d is None:
            scenes.append(None)
        scene_of.append(len(scenes) - 1)
        if d is not None:
            m = np.zeros(sigs[i].gray.shape, dtype=bool)
            m.flat[d] = True
            scenes[-1] = m if scenes[-1] is None else scenes[-1] | m
    masks = {k: _grow(m, TICK_GROW_PX) for k, m in enumerate(scenes) if m is not None}
    if len(masks) <= TICK_SCENES or len({m.shape for m in masks.values()}) != 1:
        return lambda i: None
    count = np.sum(list(masks.values()), axis=0, dtype=np.int16)
    return lambda i: (count - masks.get(scene_of[i], 0)) >= TICK_SCENES


def mark(times_ms: list[int], sigs: list[Signature]) -> list[FrameChange]:
    """Each frame (its time and signature) vs the head of the current run; a duplicate points at that head's ``ms``. A new
    head records the bands that changed since the previous head (``changed``; None = all)."""
    out = []
    small = _small_diffs(sigs)
    tickers = _tickers(small, sigs)
    head_ms, head = None, None
    for i, (ms, s, volatile) in enumerate(zip(times_ms, sigs, _volatiles(small, sigs))):
        dup_of, bands = None, None
        if head is not None and (is_duplicate(head, s) or is_transient(head, s, _volatile(volatile), tickers(i))):
            dup_of = head_ms
        else:
            if head is not None:
                bands = changed_bands(head, s)
            head_ms, head = ms, s
        out.append(FrameChange(ms=ms, dhash=f"{s.dhash:016x}", duplicate_of=dup_of,
                               changed=tuple(Band(*b) for b in bands) if bands is not None and dup_of is None
                               else None))
    return out


def _volatile(volatile):
    """Pixels a small change may touch and stay no new scene: around the volatile ones."""
    return _grow(volatile) if volatile is not None else None


def run(rid: str, opts: None = None) -> StageResult:  # no options
    frames = store.read_rows("keyframes", rid, record=Keyframe)
    sigs = [signature(store.local_file(f.file, immutable=True)) for f in frames]
    rows = mark([f.ms for f in frames], sigs)
    store.write_table("dedup", rid, rows)
    unique = sum(1 for r in rows if r.duplicate_of is None)
    return StageResult({"frames": len(rows), "unique": unique}, digest(rows))
