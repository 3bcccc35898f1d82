"""Several `talkthrough process` started at once on a new data root (#24 item 3): every one of them
opens the Dagster instance that the first of them creates, and none dies while its SQLite storage is
created and stamped (before: `table secondary_indexes already exists`, a second alembic head)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from dagster import DagsterInstance, DagsterRunStatus

CLI = [sys.executable, "-m", "talkthrough_assets.cli"]
PROCESSES = 4


@pytest.mark.parametrize("attempt", [1, 2])  # the race needed no luck before the lock: each attempt is fresh
def test_four_concurrent_first_starts_on_a_new_data_root(tmp_path, attempt):
    home = tmp_path / "home"
    env = dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME="", COLUMNS="200")
    env.pop("DAGSTER_HOME")
    files = []
    for i in range(PROCESSES):  # distinct bytes (distinct recordings) that each run the Dagster job quickly
        f = tmp_path / f"notes{i}.mp4"
        f.write_bytes(f"meeting notes {i}, not a video\n".encode() * 40)
        files.append(f)
    procs = [subprocess.Popen(CLI + ["process", str(f), "--json"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for f in files]
    outs = [p.communicate(timeout=400) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert "sqlalchemy" not in err.lower() and "Traceback" not in err, err[-3000:]
        assert p.returncode == 1, (p.returncode, err[-3000:])  # bad input, reported: not a crash (3) or a stack
        [res] = json.loads(out)
        assert res["status"] == "failed" and "not a readable media file" in res["reason"], res
    # each process ran its recording through the one instance they share
    with DagsterInstance.from_config(str(home / "dagster")) as inst:
        runs = inst.get_runs()
        assert len(runs) == PROCESSES and {r.status for r in runs} == {DagsterRunStatus.FAILURE}, runs
        assert all(r.tags.get("talkthrough/failure", "").startswith("probe: not a readable media file")
                   for r in runs), [r.tags for r in runs]
