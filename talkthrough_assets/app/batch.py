"""`talkthrough process` over many paths: which files there are (skipped and missing paths told apart), and each
file processed in turn through ``service.process``, its stages reported to whoever watches, a file that fails to
hash or register recorded as failed while the others go on. Plain data; the CLI draws and prints it."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable


@dataclass(frozen=True)
class Inputs:
    files: list[Path]  # media files to process, folders expanded
    skipped: list[tuple[Path, str]]  # (path, why): present but not processed (not a media file extension)
    missing: list[tuple[Path, str]]  # (path, why): no such file or folder (a mistyped path: an error, not a skip)


@dataclass(frozen=True)
class Watch:
    """What one file's run reports to whoever watches it: a stage's state, the stages planned, and the long
    stages' progress (None: not asked for). Passed with that file's run (its observer), nowhere else."""
    on_stage: Callable[[str, str, str, dict], None]  # (stage, recording id, state, info)
    on_stages: Callable[[str, list[str]], None]  # (recording id, stages to run)
    on_progress: Callable[[str, str, dict], None] | None = None  # (stage, recording id, info)


def inputs(paths: Iterable[str | os.PathLike]) -> Inputs:
    from talkthrough_assets.app import service

    files, skipped = service.collect(paths)
    missing = [(p, why) for p, why in skipped if not p.exists()]
    return Inputs(files, [s for s in skipped if s not in missing], missing)


def process_files(files: list[Path], *, overrides: dict | None = None, force: bool = False,
                  watch: Callable[[Path], AbstractContextManager[Watch | None]] = lambda f: nullcontext()
                  ) -> list[dict]:
    """One summary per file, in order (``service.process``'s, or a failed one for a file that could not be hashed
    or registered); ``watch(file)`` gives who watches that file's run (its observer), for as long as it runs."""
    from talkthrough_assets.app import service
    from talkthrough_assets.pipeline.events import NOBODY, Observer

    results = []
    for f in files:
        with watch(f) as w:
            observer = Observer(w.on_stage, w.on_progress) if w is not None else NOBODY
            try:
                results.append(service.process(f, overrides=overrides, force=force,
                                               on_stages=w.on_stages if w is not None else None, observer=observer))
            except Exception as e:  # hashing/registration errors: report, continue with the next file
                results.append({"source": str(f), "status": "failed", "recording_id": None,
                                "reason": f"{type(e).__name__}: {e}"})
    return results


def internal(results: list[dict]) -> list[dict]:
    """The summaries of files that hit ``errors.InternalError``: a bug or a broken install, not bad input."""
    return [r for r in results if r.get("internal")]
