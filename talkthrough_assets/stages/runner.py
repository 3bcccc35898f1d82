"""What every stage's ``run()`` shares: the typed result it returns, and the reads of other stages'
outputs it needs (the probe row, a stage's recorded reason, the cached WAV, the source file).

A stage module holds its pure function(s), its ``CODE_VERSION`` and ``run(rid, opts)`` (``run(rid, opts,
engines)`` when its ``StageSpec`` says ``engines=True``; ``opts``: its frozen ``Options``, built by
``pipeline.options``, or None; a keyword ``ctx``, the :class:`RunContext`, when it says ``context=True``): read its inputs from the store, call the function,
write its tables, return a :class:`StageResult`. ``pipeline.run_stage`` records it; Dagster turns it into a
materialization. No Dagster here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from talkthrough_assets import store
from talkthrough_assets.core.errors import StageError
from talkthrough_assets.model.media import ProbeRow, Source
from talkthrough_assets.model.runs import StageRun


@dataclass
class CheckResult:
    """One asset check's outcome (its name is the check's ``stagespec.Check.name``)."""

    name: str
    passed: bool
    description: str


@dataclass
class StageResult:
    """What one stage run produced: the run metadata shown in Dagster and the CLI, a version of its data
    (changes when its output does), its checks, and ``reason``: why it produced less than it wanted (an
    unreadable stream ...) while still succeeding."""

    metadata: dict[str, Any]
    data_version: str
    checks: list[CheckResult] = field(default_factory=list)
    reason: str | None = None
    manifest: dict | None = None  # the manifest stage: the document it published


@dataclass(frozen=True)
class RunContext:
    """What the pipeline tells one stage run besides its settings, passed explicitly as ``run(..., ctx=)`` to a
    stage whose StageSpec says ``context=True`` (a stage run on its own gets :meth:`alone`'s).

    ``beside``: the other branches (``StageSpec.branch``) this run works on at the same time as the stage's own
    (empty when its stages run one at a time): the segments stage then leaves cores to the visual branch.
    ``on_progress``: the run's own listener of the stage's progress reports (the scheduler's event queue)."""

    recording_id: str
    stage: str
    beside: frozenset[str] = frozenset()
    on_progress: Callable[[dict], None] | None = None

    @classmethod
    def alone(cls, recording_id: str, stage: str) -> "RunContext":
        return cls(recording_id, stage)

    def progress(self, info: dict) -> None:
        """A progress report (``{"share": 0..1, "eta_s": seconds or None, "text": "3 of 10 chunks", ...}``) to the
        run (its scheduler, which tells whoever watches it)."""
        if self.on_progress is not None:
            try:
                self.on_progress(info)
            except Exception:  # noqa: BLE001 - a report never breaks a stage
                pass


def hms(seconds: float) -> str:
    """Recording time for reading: ``M:SS``, or ``H:MM:SS`` from an hour on (whole seconds, truncated)."""
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def digest(obj: Any) -> str:
    """A short hash of ``obj``'s JSON; a typed record hashes as its stored row (the same hash as that mapping)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=_plain).encode()).hexdigest()[:16]


def _plain(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def probe_row(rid: str) -> ProbeRow:
    row = store.read_one("probe", rid, record=ProbeRow)
    if row is None:
        raise StageError("probe output missing: materialize `probe` first")
    return row


def stage_state(rid: str) -> dict[str, StageRun]:
    """The stage_runs rows of one recording, by stage."""
    return {r.stage: r for r in store.read_rows("stage_runs", rid, part=None, record=StageRun)}


def stage_reason(rid: str, stage: str) -> str | None:
    """Why a stage that ran produced less than it wanted (an unreadable stream ...), or None."""
    run = stage_state(rid).get(stage)
    return run.reason if run else None


def wav_path(rid: str) -> Path:
    """The recording's 16 kHz WAV as a local file (this machine's copy when the data root is remote)."""
    return store.local_file(store.audio_key(rid))


def source_path(rid: str) -> Path:
    """The newest registered path that still exists (aliases are fallbacks)."""
    rows = store.read_rows("sources", rid, record=Source)
    if not rows:
        raise StageError(f"recording {rid} has no registered source file", stage="probe")
    for r in sorted(rows, key=lambda r: r.seen_at, reverse=True):
        if Path(r.path).exists():
            return Path(r.path)
    raise StageError(f"source file is gone: {rows[-1].path} (moved or deleted since it was registered)",
                     stage="probe")

