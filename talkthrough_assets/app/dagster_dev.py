"""`dagster dev` as `talkthrough ui` runs it: ``python -m talkthrough_assets.app.dagster_dev dagster dev ARGS...``.

The same command, with one change to the daemon it starts: its backfill loop looks for new backfills every
:data:`BACKFILL_LOOP_S` seconds instead of Dagster's 30. Dagster 1.13 hard-codes that 30 s
(``dagster._daemon.controller.DEFAULT_DAEMON_INTERVAL_SECONDS``, read by the backfill loop each time it
sleeps) and has no instance setting for it, so a backfill launched from the UI waited 0-30 s (15 s on
average) before its first run was even created. The loop's iteration is a query of the backfills table when
none is in progress, cheap enough every 2 s.

The daemon is started by `dagster dev` as ``python -m dagster._daemon run ...``; here it is started as
``python -m talkthrough_assets.app.dagster_dev dagster._daemon run ...``, which sets the interval and then
runs Dagster's own daemon command (the module each runs stays in its command line, where process listings
and `talkthrough ui`'s checks look for it). Both steps reach into Dagster internals (no public API for either), so
tests/e2e/test_ui_backfill.py times a backfill's first run to catch a Dagster upgrade that breaks them.
"""

from __future__ import annotations

import sys

BACKFILL_LOOP_S = 2


def _daemon(argv: list[str]) -> None:
    from dagster._daemon import controller
    from dagster._daemon.cli import main

    # also the legacy auto-materialize interval when none is configured; Talkthrough has no automation
    controller.DEFAULT_DAEMON_INTERVAL_SECONDS = BACKFILL_LOOP_S
    sys.argv = ["dagster-daemon", *argv]
    main()


def _dev(argv: list[str]) -> None:
    import dagster._cli.dev as dev
    from dagster._cli import main

    start = dev.open_ipc_subprocess

    def open_daemon_here(cmd, **kwargs):
        if list(cmd[1:3]) == ["-m", "dagster._daemon"]:
            cmd = [cmd[0], "-m", __spec__.name, *cmd[2:]]
        return start(cmd, **kwargs)

    dev.open_ipc_subprocess = open_daemon_here
    sys.argv = ["dagster", *argv]
    main()


if __name__ == "__main__":
    if sys.argv[1:2] == ["dagster._daemon"]:
        _daemon(sys.argv[2:])
    elif sys.argv[1:2] == ["dagster"]:
        _dev(sys.argv[2:])
    else:
        sys.exit(f"usage: python -m {__spec__.name} dagster dev ARGS... | dagster._daemon run ARGS...")
