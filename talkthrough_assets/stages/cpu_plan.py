"""The thread plan: who gets how many CPU threads while the audio and visual branches share the cores.

* Whisper (``segments``) takes a quarter of the cores while the visual branch runs beside it, half of them alone,
  at least one (``segments.engine.cpu_threads``, fixed when its model loads: its beam search does not scale with
  threads, see there).
* OCR takes the cores Whisper leaves: ``cores - max(1, cores // 4)`` while a ``segments`` stage is running in this
  process, every core once it is not (a video whose audio is done, or a silent one). The choice is made per
  keyframe, so OCR widens the moment Whisper ends.

* A stage that gives way (``StageSpec.gives_way``: the visual branch to the audio branch, which a narrated
  recording waits for) runs in a thread of its own at a lower scheduling priority while that branch runs beside it
  (:func:`aside`): where both want the same core (FFmpeg's decoder threads, a loaded machine) the kernel gives it
  to Whisper, and the visual branch takes what Whisper leaves. Linux only (a thread's own nice value).

The pipeline marks the stages it runs (:func:`running`); nothing else is shared. ONNX Runtime's worker
threads never spin here (``ocr``): on a loaded 2-core machine a spinning thread takes CPU from Whisper.
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from collections import Counter
from contextlib import contextmanager
from typing import Callable, TypeVar

T = TypeVar("T")

# The nice value a stage that gives way adds to its thread: Linux's scheduler weighs nice 10 at ~1/9 of nice 0,
# so where the two branches share a core the one that gives way gets ~10 % of it (docs/benchmarks.md).
GIVE_WAY_NICE = 10

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


def aside(fn: Callable[[], T], name: str = "aside") -> T:
    """``fn()`` run in a new thread whose scheduling priority is :data:`GIVE_WAY_NICE` lower (threads it starts,
    FFmpeg's decoders and ONNX Runtime's pools, inherit it), with this thread's context (the run's stop flag);
    its result, or what it raised. A thread cannot raise its priority again, hence one of its own, which ends
    with ``fn`` (named ``name``). Elsewhere than on Linux (no per-thread nice value), ``fn()`` here."""
    if not sys.platform.startswith("linux"):
        return fn()
    box: dict[str, object] = {}
    ctx = contextvars.copy_context()

    def target() -> None:
        lower(GIVE_WAY_NICE)
        try:
            box["result"] = ctx.run(fn)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread, raised there
            box["error"] = e

    t = threading.Thread(target=target, name=name, daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]


def lower(by: int) -> None:
    """This thread's scheduling priority lowered: its nice value raised ``by`` (at most 19); as it was where the
    system refuses."""
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + by))
    except OSError:
        pass
