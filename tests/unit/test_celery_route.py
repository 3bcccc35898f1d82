"""The Celery route is chosen by TALKTHROUGH_CELERY_BROKER alone: unset, `process_recording` keeps the in-process
executor; set, dagster-celery's executor with late acknowledgement. A worker's stages never claim the run as
theirs (a killed worker must not mark the run failed), and a worker without its settings says what is missing."""

from __future__ import annotations

import pytest

from talkthrough_assets.defs import celery_route
from talkthrough_assets.pipeline import registry


def test_unset_keeps_the_in_process_executor(monkeypatch):
    import dagster as dg

    monkeypatch.delenv("TALKTHROUGH_CELERY_BROKER", raising=False)
    assert celery_route.executor() is dg.in_process_executor


def test_set_selects_the_celery_executor_reading_the_broker_from_the_environment(monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_CELERY_BROKER", "amqp://u:secret@broker:5672//")
    ex = celery_route.executor()
    assert ex.name == "talkthrough_celery"
    # the broker is read from the environment where the run executes (so run config never holds the password)
    resolved = ex.config_schema.resolve_config({}).value["config"]
    assert resolved["broker"] == "amqp://u:secret@broker:5672//"
    monkeypatch.setenv("TALKTHROUGH_CELERY_BROKER", "amqp://other//")
    assert ex.config_schema.resolve_config({}).value["config"]["broker"] == "amqp://other//"
    assert resolved["config_source"]["task_acks_late"] and resolved["config_source"]["worker_prefetch_multiplier"] == 1


def test_a_worker_tags_who_did_the_work_not_whose_run_it_is():
    assert registry.RUNNER_TAG in celery_route.runner_tags()
    try:
        celery_route.set_worker_name("w1@host")
        assert celery_route.runner_tags() == {celery_route.WORKER_TAG: "w1@host"}
    finally:
        celery_route._worker_name = None


def test_a_worker_without_broker_or_postgres_says_what_is_missing(monkeypatch):
    from talkthrough_assets.app import worker

    monkeypatch.delenv("TALKTHROUGH_CELERY_BROKER", raising=False)
    with pytest.raises(celery_route.CeleryRouteError, match="TALKTHROUGH_CELERY_BROKER is not set"):
        worker.serve("w")
    monkeypatch.setenv("TALKTHROUGH_CELERY_BROKER", "amqp://guest:guest@127.0.0.1:5672//")
    monkeypatch.delenv("TALKTHROUGH_PG_URL", raising=False)
    with pytest.raises(celery_route.CeleryRouteError, match="TALKTHROUGH_PG_URL is not set"):
        worker.serve("w")
