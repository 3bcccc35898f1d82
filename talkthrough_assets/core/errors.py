"""Every error Talkthrough raises on purpose derives from :class:`TalkthroughError`: ``reason`` is one human
line saying what happened and what to do about it; surfaces show it, never a bare traceback.

- :class:`StageError`: a stage could not produce output for this input (the recording is the cause).
  :class:`BadMediaError` (unreadable or unsupported media) and :class:`DiskSpaceError` are its kinds.
- :class:`InternalError`: a stage failed on something that is not the input's fault (a bug, a broken install);
  surfaces keep its stack and point at ``talkthrough doctor``.
- :class:`UsageError`: a request names what does not exist or cannot be (an unknown recording, person, label or
  format, an empty name); surfaces answer it with its reason and exit 2.
- :class:`RebuildFailed`: re-making a published output (the manifest after naming speakers) failed.
- :class:`ModelUnavailable`: a model file cannot be found, joined or verified (nothing is downloaded at run time).
"""

from __future__ import annotations


class TalkthroughError(Exception):
    """The root of Talkthrough's own errors; ``reason`` is the one-line message."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class StageError(TalkthroughError):
    """A stage could not produce output for this input; ``reason`` is one human-readable line."""

    def __init__(self, reason: str, *, stage: str | None = None):
        super().__init__(reason)
        self.stage = stage


class BadMediaError(StageError):
    pass


class DiskSpaceError(StageError):
    pass


class InternalError(StageError):
    """A stage failed on an unexpected exception: a bug or a broken dependency, never the input's fault.
    Its reason reads ``internal error (<Type>: <message>)``; the original exception is its ``__cause__``."""

    @classmethod
    def wrap(cls, e: BaseException, stage: str | None = None) -> "InternalError":
        reason = f"internal error ({type(e).__name__}: {e})".splitlines()[0][:500]
        return cls(reason, stage=stage)


class ModelUnavailable(TalkthroughError, RuntimeError):
    """A model cannot be found, joined or verified; ``str(e)`` is the one-line reason recorded in outputs."""


class UsageError(TalkthroughError, ValueError):
    """A request names what does not exist or cannot be (unknown recording, person, speaker label, format ...)."""


class RebuildFailed(TalkthroughError, RuntimeError):
    """Re-making a published output failed; ``reason`` is the failed run's reason."""
