"""stages.cpu_plan.aside: a stage that gives way runs in a thread of its own at a lower scheduling priority, with the
caller's context (the run's stop flag), and hands back its result or its error; the caller's priority is untouched."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from talkthrough_assets.core import stop
from talkthrough_assets.stages import cpu_plan

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a per-thread nice value is Linux's")


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@linux
def test_aside_runs_lower_in_a_thread_of_its_own_and_leaves_the_caller_as_it_was():
    before = _nice()
    seen = {}

    def work():
        seen["thread"] = threading.current_thread().name
        seen["nice"] = _nice()
        child = threading.Thread(target=lambda: seen.setdefault("child", _nice()))  # as FFmpeg's threads
        child.start()
        child.join()
        return 42

    assert cpu_plan.aside(work, name="ocr (gives way)") == 42
    assert seen["thread"] == "ocr (gives way)"
    assert seen["nice"] == min(19, before + cpu_plan.GIVE_WAY_NICE) == seen["child"]
    assert _nice() == before


def test_aside_hands_back_the_error_and_carries_the_stop_flag():
    flag = threading.Event()
    flag.set()

    def stopped():
        stop.checkpoint()  # the run's stop flag, a context variable of the caller's thread

    with stop.bound(flag), pytest.raises(stop.Interrupted):
        cpu_plan.aside(stopped)

    def broken():
        raise ValueError("bad frame")

    with pytest.raises(ValueError, match="bad frame"):
        cpu_plan.aside(broken)
