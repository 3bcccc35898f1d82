"""`talkthrough worker`: a Celery worker in this process that processes the recordings the UI's runs send to the
broker (``TALKTHROUGH_CELERY_BROKER``), one at a time, on any machine sharing the Dagster storage in Postgres and
the data root (:mod:`talkthrough_assets.defs.celery_route` says why it is set up as it is)."""

from __future__ import annotations

import os
import socket

from talkthrough_assets import store
from talkthrough_assets.core import config
from talkthrough_assets.defs import celery_route
from talkthrough_assets.defs.instance import instance


def serve(name: str | None = None, loglevel: str = "INFO") -> int:
    """Run the worker until it is stopped (SIGTERM: the recording in progress is finished first). Raises
    :class:`celery_route.CeleryRouteError` when the broker or the shared Dagster storage is not configured."""
    broker = config.get(celery_route.BROKER_ENV)
    if not broker:
        raise celery_route.CeleryRouteError(f"{celery_route.BROKER_ENV} is not set: a worker needs the Celery "
                                            "broker's URL (e.g. amqp://user:pw@host:5672//)")
    if not config.get(store.PG_URL_ENV):
        raise celery_route.CeleryRouteError(f"{store.PG_URL_ENV} is not set: a worker records the runs it works "
                                            "for in the Dagster storage every machine shares (Postgres)")
    instance()  # the storage answers, and this process's environment is set up as every talkthrough command's
    app = celery_route.worker_app(broker)
    full_name = (name or f"worker-{os.getpid()}") + "@" + socket.gethostname()
    celery_route.set_worker_name(full_name)
    app.worker_main(celery_route.worker_argv(full_name, loglevel))
    return 0
