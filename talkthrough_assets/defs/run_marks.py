"""Ending, from outside, a run whose process is gone (a killed UI or run worker): its steps still open
get a STEP_FAILURE with the reason (the run page no longer shows them executing), the run gets the
``talkthrough/failure`` tag every failed run carries, then its RUN_FAILURE (or RUN_CANCELED). Also tags
failed runs that Dagster itself ended (run monitoring, an interrupted worker) without that tag."""

from __future__ import annotations

import logging

from talkthrough_assets.defs.jobs import FAILURE_TAG

_STEP_ENDS = ("STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED")


def close_open_steps(inst, run, reason: str) -> list[str]:
    """A STEP_FAILURE (framework error, the reason alone, no stack) for each step of ``run`` that started
    and never ended; returns their keys."""
    from dagster import DagsterEventType
    from dagster._core.events import DagsterEvent
    from dagster._core.execution.plan.objects import ErrorSource, StepFailureData
    from dagster._utils.error import SerializableErrorInfo

    kinds = {DagsterEventType.STEP_START, *(getattr(DagsterEventType, k) for k in _STEP_ENDS)}
    started: dict[str, object] = {}
    ended: set[str] = set()
    for entry in inst.all_logs(run.run_id, of_type=kinds):
        ev = entry.dagster_event
        if ev.event_type == DagsterEventType.STEP_START:
            started[ev.step_key] = ev
        else:
            ended.add(ev.step_key)
    closed = []
    for key, start in started.items():
        if key in ended:
            continue
        error = SerializableErrorInfo(message=reason, stack=[], cls_name="RunProcessGone")
        event = DagsterEvent(
            event_type_value=DagsterEventType.STEP_FAILURE.value, job_name=run.job_name,
            step_handle=start.step_handle, node_handle=start.node_handle, step_kind_value=start.step_kind_value,
            logging_tags=start.logging_tags, message=f'Step "{key}" ended: {reason}',
            event_specific_data=StepFailureData(error=error, user_failure_data=None,
                                                error_source=ErrorSource.FRAMEWORK_ERROR))
        inst.report_dagster_event(event, run_id=run.run_id, log_level=logging.ERROR)
        closed.append(key)
    return closed


def end_run(inst, run, reason: str, *, canceled: bool = False) -> None:
    """Mark ``run`` (whose process is gone) failed, or canceled, with ``reason`` everywhere the UI shows it."""
    from dagster._core.events import JobFailureData, RunFailureReason
    from dagster._utils.error import SerializableErrorInfo

    close_open_steps(inst, run, reason)
    if canceled:
        inst.report_run_canceled(run, f"run canceled: {reason}")
        return
    inst.add_run_tags(run.run_id, {FAILURE_TAG: reason[:200]})
    error = SerializableErrorInfo(message=reason, stack=[], cls_name="RunProcessGone")
    inst.report_run_failed(run, f"run failed: {reason}", job_failure_data=JobFailureData(
        error=error, failure_reason=RunFailureReason.UNEXPECTED_TERMINATION))


def tag_untagged_failures(inst, limit: int = 100) -> list[str]:
    """The newest ``limit`` failed runs that carry no ``talkthrough/failure`` tag (failed by Dagster itself:
    run monitoring, a worker interrupted) get one, from their RUN_FAILURE event, and their open steps are
    closed. Returns their ids."""
    from dagster import DagsterEventType, DagsterRunStatus, RunsFilter

    done = []
    for run in inst.get_runs(RunsFilter(statuses=[DagsterRunStatus.FAILURE]), limit=limit):
        if FAILURE_TAG in run.tags:
            continue
        reason = failure_reason(inst, run.run_id)
        close_open_steps(inst, run, reason)
        inst.add_run_tags(run.run_id, {FAILURE_TAG: reason[:200]})
        done.append(run.run_id)
    return done


def failure_reason(inst, run_id: str) -> str:
    """One line saying why a run failed: its first step failure's error, else its run failure's."""
    from dagster import DagsterEventType

    kinds = {DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE}
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
