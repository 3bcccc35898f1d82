"""Stopping a run promptly (Ctrl-C, SIGTERM, a cancelled Dagster run).

A run's stages work in threads; Python cannot interrupt a thread, so a stop is a flag the long loops look at
(:func:`checkpoint`: between Whisper windows and chunks, per OCR frame, per decoded video frame). The scheduler
(``pipeline.run_stages``) gives each run a :class:`threading.Event`, binds it in every stage thread with
:func:`bound`, and sets it when its caller stops listening (an exception or interrupt in the caller's thread,
the generator closed). The stage in flight then raises :class:`Interrupted` at its next checkpoint: its
reason is recorded like any failure, and what was already stored (finished Whisper chunks, OCR results)
stays, so a re-run resumes from there. An abort loses at most the chunk or frame in flight."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar

from talkthrough_assets.core.errors import StageError

_current: ContextVar[threading.Event | None] = ContextVar("talkthrough_stop", default=None)

REASON = ("interrupted: the run was stopped (Ctrl-C, SIGTERM or a cancelled run) before this stage finished; "
          "what it had finished is kept and a re-run resumes from there")


class Interrupted(StageError):
    """The run this stage belongs to was asked to stop."""

    def __init__(self, stage: str | None = None):
        super().__init__(REASON, stage=stage)


@contextmanager
def bound(event: threading.Event | None):
    """Make ``event`` the stop flag of the code run in this thread inside the block."""
    token = _current.set(event)
    try:
        yield
    finally:
        _current.reset(token)


def requested() -> bool:
    ev = _current.get()
    return ev is not None and ev.is_set()


def checkpoint() -> None:
    """Raise :class:`Interrupted` if this thread's run was asked to stop (cheap: call it per frame)."""
    ev = _current.get()
    if ev is not None and ev.is_set():
        raise Interrupted()
