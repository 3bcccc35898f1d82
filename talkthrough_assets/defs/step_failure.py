"""How a run's failure reads in the UI: the reason alone, with no Python stack and no Dagster wrapper.

The one module under ``defs/`` that reaches into Dagster's internals, because Dagster 1.13 has no public API
for either thing below (checked against its source: ``execute_plan.dagster_event_sequence_for_step`` gives
every exception a step raises, ``dagster.Failure`` included, the stack it was raised through; only an error
already serialized by a code server is recorded as it is, and ``DagsterInstance.report_run_failed`` takes its
error only as a ``JobFailureData``). Everything else uses the public ``dagster`` API; the serialized error
comes from ``dagster_shared``, the public package Dagster's own serialized errors come from.
"""

from __future__ import annotations

import dagster as dg
from dagster_shared.error import SerializableErrorInfo


def error(reason: str, cls_name: str) -> SerializableErrorInfo:
    """``reason`` as a serialized error: one message, an empty stack, no cause."""
    return SerializableErrorInfo(message=reason, stack=[], cls_name=cls_name)


def stop(reason: str) -> Exception:
    """What ends the step of a recording that cannot be processed as it is (bad input, a busy recording),
    with ``reason`` as the step's whole error. Dagster wraps any other exception a step raises in its
    DagsterExecutionStepExecutionError (a stack of its own frames, the reason only as the cause), and the
    RUN_FAILURE row, the last row of the run page and the one it opens scrolled to, repeats that error
    with the stack. An error already serialized (as a code server sends one) is recorded as it is: both
    rows then show the reason alone, with no stack and no wrapper."""
    from dagster._core.errors import DagsterUserCodeProcessError  # no public equivalent (see the module doc)

    return DagsterUserCodeProcessError(reason, user_code_process_error_infos=[error(reason, "RecordingFailed")])


def step_failure_event(run, start: dg.DagsterEvent, reason: str) -> dg.DagsterEvent:
    """A STEP_FAILURE for the step ``start`` (its STEP_START event) opened in ``run``: a framework error,
    ``reason`` alone, no stack."""
    from dagster._core.execution.plan.objects import ErrorSource, StepFailureData  # no public equivalent

    return dg.DagsterEvent(
        event_type_value=dg.DagsterEventType.STEP_FAILURE.value, job_name=run.job_name,
        step_handle=start.step_handle, node_handle=start.node_handle, step_kind_value=start.step_kind_value,
        logging_tags=start.logging_tags, message=f'Step "{start.step_key}" ended: {reason}',
        event_specific_data=StepFailureData(error=error(reason, "RunProcessGone"), user_failure_data=None,
                                            error_source=ErrorSource.FRAMEWORK_ERROR))


def report_run_failed(inst, run, reason: str) -> None:
    """Record ``run`` failed (its process is gone) with ``reason`` as its RUN_FAILURE's error, no stack."""
    from dagster._core.events import JobFailureData, RunFailureReason  # no public equivalent

    inst.report_run_failed(run, f"run failed: {reason}", job_failure_data=JobFailureData(
        error=error(reason, "RunProcessGone"), failure_reason=RunFailureReason.UNEXPECTED_TERMINATION))
