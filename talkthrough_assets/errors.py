"""Errors with a one-line human reason; surfaces show `reason`, never a bare traceback."""


class StageError(Exception):
    """A stage could not produce output for this input; ``reason`` is one human-readable line."""

    def __init__(self, reason: str, *, stage: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.stage = stage


class BadMediaError(StageError):
    pass


class DiskSpaceError(StageError):
    pass
