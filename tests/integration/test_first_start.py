"""Several `talkthrough process` started at once on a new data root (#24 item 3): every one of them
opens the Dagster instance that the first of them creates, and none dies while its SQLite storage is
created and stamped (before: `table secondary_indexes already exists`, a second alembic head)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import wave

import pytest
from dagster import DagsterInstance, DagsterRunStatus

CLI = [sys.executable, "-m", "talkthrough_assets.cli.main"]
PROCESSES = 4


@pytest.mark.parametrize("attempt", [1, 2])  # the race needed no luck before the lock: each attempt is fresh
def test_four_concurrent_first_starts_on_a_new_data_root(tmp_path, attempt):
    home = tmp_path / "home"
    env = dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME="", COLUMNS="200")
    env.pop("DAGSTER_HOME")
    files = []
    for i in range(PROCESSES):  # distinct bytes (distinct recordings) that each run the Dagster job quickly:
        # a second of silence (a file the probe rejects fails before any Dagster run, #25 item 7)
        f = tmp_path / f"quiet{i}.wav"
        with wave.open(str(f), "wb") as w:
            w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
            w.writeframes(b"\0\0" * (16000 + 160 * i))
        files.append(f)
    procs = [subprocess.Popen(CLI + ["process", str(f), "--json"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for f in files]
    outs = [p.communicate(timeout=400) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert "sqlalchemy" not in err.lower() and "Traceback" not in err, err[-3000:]
        assert p.returncode == 0, (p.returncode, err[-3000:])  # not a crash (3) or a stack
        [res] = json.loads(out)
        assert res["status"] == "processed" and res["transcript"]["segments"] == 0, res
    # each process ran its recording through the one instance they share
    with DagsterInstance.from_config(str(home / "dagster")) as inst:
        runs = inst.get_runs()
        assert len(runs) == PROCESSES and {r.status for r in runs} == {DagsterRunStatus.SUCCESS}, runs
        assert len({r.tags.get("dagster/partition") for r in runs}) == PROCESSES
