"""What a user types wrong gets a one-line reason and exit 2, never a traceback; what they ask for lands where
they said, with the file mode their umask gives. The real CLI on a pseudo-terminal over the processed fixtures."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from fixture_facts import SCREENCAST_NAME
from pty_run import on_pty

TALKTHROUGH = str(Path(sys.executable).with_name("talkthrough"))


@pytest.fixture(scope="module")
def cli(processed, tt_home):
    rid = processed[SCREENCAST_NAME]["recording_id"]
    env = {k: v for k, v in os.environ.items() if k not in ("TALKTHROUGH_PG_URL",)}
    env.update(TALKTHROUGH_HOME=str(tt_home))

    def run(*args: str, umask: int | None = None, cwd: Path | None = None) -> tuple[int, str]:
        cmd = [TALKTHROUGH, *args]
        if umask is not None:  # the user's shell umask, as a login shell would set it
            cmd = ["sh", "-c", f'umask {umask:03o} && cd "{cwd or os.getcwd()}" && exec "$@"', "sh", *cmd]
        return on_pty(cmd, env, cols=200)

    return rid, run


@pytest.mark.parametrize("command", ["export", "report"])
def test_output_into_a_folder_writes_the_default_name_there(cli, tmp_path, command):
    rid, run = cli
    rc, text = run(command, rid, "-o", str(tmp_path))
    assert rc == 0 and "Traceback" not in text, text
    name = f"talkthrough-{rid}.srt" if command == "export" else f"talkthrough-report-{rid}.html"
    assert (tmp_path / name).stat().st_size > 0, text
    assert name in text  # says where it went


@pytest.mark.parametrize("command", ["export", "report"])
def test_output_into_a_missing_folder_is_refused_and_nothing_is_made(cli, tmp_path, command):
    rid, run = cli
    rc, text = run(command, rid, "-o", str(tmp_path / "no" / "such" / "x.out"))
    assert rc == 2 and "does not exist" in text and "Traceback" not in text, text
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("query", ["", " ", ";", " ; "])
def test_an_empty_sql_statement_is_a_usage_error(cli, query):
    _rid, run = cli
    rc, text = run("sql", query)
    assert rc == 2 and "no SQL statement given" in text and "Traceback" not in text, text


def test_a_sql_error_keeps_its_lines(cli):
    _rid, run = cli
    rc, text = run("sql", "SELEC x")
    assert rc == 2 and "Traceback" not in text, text
    assert "\\n" not in text and "LINE 1: SELEC x" in text.splitlines()[-2] + text.splitlines()[-1], text


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_exports_get_the_mode_the_umask_gives(cli, tmp_path, umask):
    rid, run = cli
    rc, text = run("export", rid, "--format", "txt", "-o", str(tmp_path / "t.txt"), umask=umask)
    assert rc == 0, text
    assert stat.S_IMODE((tmp_path / "t.txt").stat().st_mode) == 0o666 & ~umask
    rc, text = run("report", rid, umask=umask, cwd=tmp_path)  # the default name, in the current folder
    assert rc == 0, text
    assert stat.S_IMODE((tmp_path / f"talkthrough-report-{rid}.html").stat().st_mode) == 0o666 & ~umask
