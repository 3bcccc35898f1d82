"""The thread plan: who gets how many CPU threads while the audio and visual branches share the cores.

* Whisper (``segments``) takes a quarter of the cores while the visual branch runs beside it, half of them alone,
  at least one (``segments.engine.cpu_threads``, fixed when its model loads: its beam search does not scale with
  threads, see there).
* OCR takes the cores Whisper leaves: ``cores - max(1, cores // 4)`` while a ``segments`` stage is running in this
  process, every core once it is not (a video whose audio is done, or a silent one). The choice is made per
  keyframe, so OCR widens the moment Whisper ends.

The pipeline marks the stages it runs (:func:`running`); nothing else is shared. ONNX Runtime's worker
threads never spin here (``ocr``): on a loaded 2-core machine a spinning thread takes CPU from Whisper.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from contextlib import contextmanager

_lock = threading.Lock()
_running: Counter = Counter()


@contextmanager
def running(stage: str):
    """Mark ``stage`` as running in this process for the duration of the block."""
    with _lock:
        _running[stage] += 1
    try:
        yield
    finally:
        with _lock:
            _running[stage] -= 1
            if _running[stage] <= 0:
                del _running[stage]


def is_running(stage: str) -> bool:
    with _lock:
        return _running.get(stage, 0) > 0


def cores() -> int:
    return os.cpu_count() or 1


def ocr_threads(beside_whisper: bool | None = None) -> int:
    """OCR's intra-op threads now: what Whisper leaves while it decodes, else every core. ``beside_whisper``:
    whether Whisper will be decoding (the OCR prewarm, before either stage runs); default: whether it is now."""
    n = cores()
    busy = is_running("segments") if beside_whisper is None else beside_whisper
    return max(1, n - max(1, n // 4)) if busy else n
