"""A stage's bookkeeping row (the ``stage_runs`` table, one file per stage): what config and code produced its
current output, whether it succeeded, and why it did less than it wanted or failed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class StageRun:
    stage: str
    status: str  # "ok" | "failed"
    config_hash: str | None = None
    code_version: str | None = None
    reason: str | None = None  # an ok stage that produced less than it wanted keeps its reason too
    finished_at: str | None = None  # ISO-8601 UTC, set when the row is written
    elapsed_s: float | None = None
    internal: bool | None = None  # a failure that is not the input's fault (a bug, a broken install)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


__all__ = ["StageRun"]
