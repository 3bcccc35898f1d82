"""`talkthrough ui` as a person starts it from a folder holding a dagster.yaml (a checkout, say), with the data
root given relative to that folder: its output has Dagster's service lines and no warning meant for Dagster's own
users (a SupersessionWarning about `dagster dev`, "the dagster.yaml file will not be used"), and the relative
data root means the folder it was started in."""

from __future__ import annotations

import os
import shutil
import subprocess

from test_webserver import ROOT, _free_port, stop_ui, talkthrough_command, wait_until_up


def test_the_ui_prints_no_warnings_for_dagster_users(tmp_path):
    shutil.copy(ROOT / "dagster.yaml", tmp_path / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "TALKTHROUGH_PG_URL")}
    env.update(TALKTHROUGH_HOME="home")  # relative: the folder it is started in
    port = _free_port()
    log = tmp_path / "ui.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(talkthrough_command() + ["ui", "--port", str(port)], env=env, cwd=tmp_path,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until_up(proc, port)
        finally:
            stop_ui(proc)
    text = log.read_text(errors="replace")
    assert "Serving dagster-webserver" in text, text[-3000:]
    assert "Warning" not in text and "will not be used" not in text, text[-3000:]
    assert (tmp_path / "home" / "dagster" / "dagster.yaml").exists()
    assert not (tmp_path / "home" / "dagster" / "home").exists()  # not resolved against DAGSTER_HOME
