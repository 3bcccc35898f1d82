"""stages/segments/chunk_decode.Beside without a model: each chunk's coverage pass runs on a worker thread with a
second copy of the model (or at once in the caller's thread), hands back what it returns or raises, and hears the
run's stop flag; segments.engine.Whisper keeps one decode lock per model, so two copies decode at the same time."""

from __future__ import annotations

import threading

import pytest

from talkthrough_assets.core import stop
from talkthrough_assets.stages.segments import chunk_decode
from talkthrough_assets.stages.segments.engine import Engine, Whisper


class _Model:
    """What the loader gives (a model that is never asked to decode here)."""

    def __init__(self, *a, **kw):
        pass


def _engine() -> Engine:
    return Engine(Whisper(load=_Model), "tiny.en", "tiny.en", threads=1)


def _where(tag, *, engine):
    return tag, engine.copy, threading.current_thread() is threading.main_thread()


def test_beside_runs_on_a_second_copy_in_its_own_thread_and_inline_on_the_first():
    with chunk_decode.Beside(_engine(), concurrent=True) as beside:
        assert [beside.start(_where, k).result() for k in range(3)] == [(k, 1, False) for k in range(3)]
    with chunk_decode.Beside(_engine(), concurrent=False) as beside:
        assert beside.start(_where, "a").result() == ("a", 0, True)


@pytest.mark.parametrize("concurrent", [True, False])
def test_a_failure_is_handed_back_with_the_result_and_the_next_chunk_still_runs(concurrent):
    def fail(*, engine):
        raise RuntimeError("decoder crashed")

    with chunk_decode.Beside(_engine(), concurrent=concurrent) as beside:
        bad, good = beside.start(fail), beside.start(_where, "next")
        with pytest.raises(RuntimeError, match="decoder crashed"):
            bad.result()
        assert good.result()[0] == "next"


def test_the_worker_hears_the_stop_flag_of_the_run_that_started_it():
    flag = threading.Event()

    def checks(*, engine):
        stop.checkpoint()
        return "ran"

    with stop.bound(flag), chunk_decode.Beside(_engine(), concurrent=True) as beside:
        assert beside.start(checks).result() == "ran"
        flag.set()
        with pytest.raises(stop.Interrupted):
            beside.start(checks).result()


def test_two_copies_of_a_model_decode_at_once_and_one_copy_one_call_at_a_time():
    w = Whisper(load=_Model)
    first, second = w.model("tiny", 1), w.model("tiny", 1, copy=1)
    assert first is not second and w.model("tiny", 1) is first  # the copy is kept beside, not instead
    inside = threading.Event()

    def other():
        with w.decoding(second):
            inside.set()

    with w.decoding(first):
        t = threading.Thread(target=other)
        t.start()
        t.join(5)
        assert inside.is_set()  # the second copy was not held up by the first
        blocked = threading.Event()

        def same():
            with w.decoding(first):
                blocked.set()

        u = threading.Thread(target=same)
        u.start()
        assert not blocked.wait(0.2)  # the same copy waits
    u.join(5)
    assert blocked.is_set()


def test_the_next_chunk_starts_on_a_sure_guess_and_waits_for_an_unsure_one():
    from concurrent.futures import Future

    from talkthrough_assets.model.transcript import Decoded
    from talkthrough_assets.stages.segments import chunks

    pending: Future = Future()
    assert chunks._context(None, wait=False) is None
    assert chunks._context((pending, (1, 2), True), wait=False) == [1, 2]  # sure: no waiting
    finished = chunk_decode.done(Decoded(model=None, audio_ms=0, tail=(3, 4)))
    assert chunks._context((finished, (1, 2), True), wait=False) == [3, 4]  # there already: the result's own
    assert chunks._context((finished, (1, 2), False), wait=False) == [3, 4]
    failed = chunk_decode.done(error=RuntimeError("decoder crashed"))
    assert chunks._context((failed, (1, 2), True), wait=True) is None  # after a failed chunk: no context
    threading.Timer(0.2, lambda: pending.set_result(Decoded(model=None, audio_ms=0, tail=(5,)))).start()
    assert chunks._context((pending, (1, 2), False), wait=False) == [5]  # unsure: waits for the result
