"""Ending, from outside, a run whose process is gone (a killed UI or run worker): its steps still open
get a STEP_FAILURE with the reason (the run page no longer shows them executing), the run gets the
``talkthrough/failure`` tag every failed run carries, then its RUN_FAILURE (or RUN_CANCELED). Also tags
failed runs that Dagster itself ended (run monitoring, an interrupted worker) without that tag."""

from __future__ import annotations

import logging

from talkthrough_assets.defs.partitions import FAILURE_TAG

_STEP_ENDS = ("STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED")


def close_open_steps(inst, run, reason: str) -> list[str]:
    """A STEP_FAILURE (framework error, the reason alone, no stack) for each step of ``run`` that started
    and never ended; returns their keys."""
    import dagster as dg  # here: importing this module (`talkthrough ui`'s start) does not import Dagster

    from talkthrough_assets.defs import step_failure

    kinds = {dg.DagsterEventType.STEP_START, *(getattr(dg.DagsterEventType, k) for k in _STEP_ENDS)}
    started: dict[str, object] = {}
    ended: set[str] = set()
    for entry in inst.all_logs(run.run_id, of_type=kinds):
        ev = entry.dagster_event
        if ev.event_type == dg.DagsterEventType.STEP_START:
            started[ev.step_key] = ev
        else:
            ended.add(ev.step_key)
    closed = []
    for key, start in started.items():
        if key in ended:
            continue
        inst.report_dagster_event(step_failure.step_failure_event(run, start, reason), run_id=run.run_id,
                                  log_level=logging.ERROR)
        closed.append(key)
    return closed


def end_run(inst, run, reason: str, *, canceled: bool = False) -> None:
    """Mark ``run`` (whose process is gone) failed, or canceled, with ``reason`` everywhere the UI shows it."""
    from talkthrough_assets.defs import step_failure

    close_open_steps(inst, run, reason)
    if canceled:
        inst.report_run_canceled(run, f"run canceled: {reason}")
        return
    inst.add_run_tags(run.run_id, {FAILURE_TAG: reason[:200]})
    step_failure.report_run_failed(inst, run, reason)


def tag_untagged_failures(inst, limit: int = 100) -> list[str]:
    """The newest ``limit`` failed runs that carry no ``talkthrough/failure`` tag (failed by Dagster itself:
    run monitoring, a worker interrupted) get one, from their RUN_FAILURE event, and their open steps are
    closed. Returns their ids."""
    import dagster as dg

    done = []
    for run in inst.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]), limit=limit):
        if FAILURE_TAG in run.tags:
            continue
        reason = failure_reason(inst, run.run_id)
        close_open_steps(inst, run, reason)
        inst.add_run_tags(run.run_id, {FAILURE_TAG: reason[:200]})
        done.append(run.run_id)
    return done


def failure_reason(inst, run_id: str) -> str:
    """One line saying why a run failed: its first step failure's error, else its run failure's."""
    import dagster as dg

    kinds = {dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.RUN_FAILURE}
    for entry in inst.all_logs(run_id, of_type=kinds):
        ev = entry.dagster_event
        error = getattr(ev.event_specific_data, "error", None)
        text = (_innermost(error) if error else None) or (ev.message if ev.is_run_failure else None)
        if text and text.strip():
            return text.strip().splitlines()[0]
    return "run failed (see the run log)"


def _innermost(error) -> str | None:
    """The message of the error a step raised, not Dagster's wrapper around it."""
    while getattr(error, "cause", None) is not None:
        error = error.cause
    return getattr(error, "message", None)
