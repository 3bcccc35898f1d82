"""The stop flag a run's stage threads look at (talkthrough_assets/core/stop.py)."""

from __future__ import annotations

import threading

import pytest

from talkthrough_assets.core import stop
from talkthrough_assets.core.errors import StageError

pytestmark = pytest.mark.unit


def test_checkpoint_raises_only_in_threads_bound_to_a_set_flag():
    stop.checkpoint()  # no run: nothing to stop
    ev = threading.Event()
    seen = {}

    def stage():
        with stop.bound(ev):
            stop.checkpoint()
            seen["before"] = stop.requested()
            ev.set()
            try:
                stop.checkpoint()
            except stop.Interrupted as e:
                seen["raised"] = e
        stop.checkpoint()  # unbound again: no longer this run's

    t = threading.Thread(target=stage)
    t.start()
    t.join()
    assert seen["before"] is False
    assert isinstance(seen["raised"], StageError) and "interrupted" in seen["raised"].reason
    stop.checkpoint()  # another thread's flag never reaches this one
