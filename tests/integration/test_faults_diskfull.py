"""A disk that fills during a run (issue #34 case 3), on its own small tmpfs (the module fixture of
test_faults_disk.py, made again for this module): the one-line reason, nothing lost, and the recovery once
there is room again; and Dagster's storage on a disk of its own, full, named as that path. Its own module: after
the other cases of that battery it waited minutes (not understood yet)."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from fixture_facts import FIXTURES_DIR, SILENT_NAME, unique_copy
from test_faults_disk import _cli, _files_of, _fill, _mount, small  # noqa: F401  (small: the module fixture)

from talkthrough_assets import store
from talkthrough_assets.pipeline import datacheck
from talkthrough_assets.pipeline import events, freshness
from talkthrough_assets.app import service
from talkthrough_assets.app import runs as app_runs


def _process_filling(src: Path, mnt: Path, *, after: str, leave_bytes: int) -> tuple[dict, list[Path]]:
    """``service.process(src)``, the filesystem at ``mnt`` filled to ``leave_bytes`` free once stage ``after``
    is done: (its summary, [the filler file] or [] when that stage never finished)."""
    fill: list[Path] = []

    def fill_after(stage, rid, state, info):
        if stage == after and state == "ok" and not fill:
            fill.append(_fill(mnt, leave_bytes))

    return service.process(src, observer=events.Observer(on_stage=fill_after)), fill


def test_disk_full_mid_run_says_so_in_one_line_keeps_everything_and_recovers(small, tmp_path):
    kept = {r: _files_of(r) for r in (small["a_id"], small["b_id"])}
    c = unique_copy(FIXTURES_DIR / SILENT_NAME, tmp_path / "c.mp4", "faults-c")
    # the preflight passed; the disk fills meanwhile
    out, fill = _process_filling(c, small["mnt"], after="probe", leave_bytes=64 * 1024)
    try:
        assert fill, "the probe never finished"
        said = out.get("reason") if out["status"] == "failed" else out.get("warning")
        assert said and "\n" not in said and "Traceback" not in said, out
        assert said.split(": ", 1)[-1].startswith("disk full at ") or "disk full at " in said, out
        assert " MB free, " in said and said.rstrip().endswith("MB needed"), said
    finally:
        fill[0].unlink()
    assert {r: _files_of(r) for r in kept} == kept  # nothing already stored is lost
    again = service.process(c)
    assert again["status"] in ("processed", "cached") and freshness.plan(again["recording_id"]) == [], again
    assert datacheck.check(again["recording_id"], deep=True) == []
    from dagster import DagsterRunStatus, RunsFilter

    stuck = app_runs.instance().get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED],
                                                   tags={"dagster/partition": again["recording_id"]}))
    assert stuck == []


def test_disk_full_late_in_a_run_with_dagster_storage_on_it_leaves_no_run_started(small, tmp_path):
    """Issue #34 case 3, the Dagster storage on the same disk, filled to the last byte late in a run (after OCR,
    before the manifest): the run ends with a one-line reason (or as processed with a warning when its outputs
    were all stored), the Dagster run is not left STARTED, and once there is room again the recording is whole."""
    from dagster import DagsterRunStatus, RunsFilter

    c = unique_copy(FIXTURES_DIR / SILENT_NAME, tmp_path / "d.mp4", "faults-d")
    out, fill = _process_filling(c, small["mnt"], after="ocr", leave_bytes=0)
    try:
        assert fill, "OCR never finished"
        said = out.get("reason") if out["status"] == "failed" else out.get("warning")
        assert out["status"] in ("failed", "processed"), out
        if out["status"] == "failed" or said:
            assert said and "\n" not in said and "Traceback" not in said and "sqlalche.me" not in said, out
            assert "disk full at " in said, out
    finally:
        fill[0].unlink()
    rid = out.get("recording_id")
    # the process's next use of Dagster, with room again, records the run's end
    runs = app_runs.instance().get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED],
                                                  tags={"dagster/partition": rid}))
    assert runs == [], [r.run_id for r in runs]
    again = service.process(c)
    assert again["status"] in ("processed", "cached") and freshness.plan(again["recording_id"]) == [], again
    assert datacheck.check(again["recording_id"], deep=True) == []


@pytest.fixture()
def own_dagster_disk(tmp_path, monkeypatch):
    """DAGSTER_HOME on an 8-MB tmpfs of its own; the data root on the roomy disk beside it."""
    mnt = tmp_path / "dagsterfs"
    mnt.mkdir()
    _mount(mnt, 8)
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(mnt / "dagster"))
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _run_states(dagster_home: Path, rid: str) -> list[str]:
    """The recording's runs as Dagster's SQLite run storage holds them, read without Dagster (whose next use in
    this process would mark a run left STARTED, hiding whether the failing command did)."""
    with sqlite3.connect(f"file:{dagster_home / 'history' / 'runs.db'}?mode=ro", uri=True) as con:
        return [r[0] for r in con.execute("SELECT status FROM runs WHERE partition = ?", [rid])]


def test_a_full_dagster_storage_on_its_own_disk_is_named_and_its_run_is_not_left_started(own_dagster_disk, tmp_path):
    dagster = own_dagster_disk / "dagster"
    first = service.process(unique_copy(FIXTURES_DIR / SILENT_NAME, tmp_path / "first.mp4", "faults-dg1"))
    assert first["status"] == "processed", first
    kept = _files_of(first["recording_id"])
    c = unique_copy(FIXTURES_DIR / SILENT_NAME, tmp_path / "e.mp4", "faults-dg2")
    out, fill = _process_filling(c, own_dagster_disk, after="probe", leave_bytes=0)
    try:
        assert fill, "the probe never finished"
        # before: "disk full at <data root>: 70242 MB free, 6 MB needed", and the run left STARTED
        # the room it says is free is what is left once the run's SQLite logs were let go (checkpointed): under 2 MB
        assert out["status"] == "failed" and re.match(rf"disk full at {re.escape(str(dagster))}: [01] MB free, ",
                                                      out["reason"]), out
        assert out["reason"].endswith(" MB needed") and str(store.home()) not in out["reason"], out
        # its stages start ahead of the run (scheduler.start_early): the disk filled once the probe was done, before
        # or while Dagster created the run, so no run was stored, or a failed one; never one left to look started
        assert set(_run_states(dagster, out["recording_id"])) <= {"FAILURE"}
        # `recordings --find` says why (before: "registered")
        found = _cli("recordings", "--find", c.name)
        # named for the first stage not finished when Dagster's storage failed (stages a stage's end made ready
        # start before Dagster records that end)
        assert found.exit_code == 0 and re.search(rf"failed \(\w+: disk full at {re.escape(str(dagster))}: ",
                                                  found.stdout), found.output
        # still full when the next command starts: the preflight counts that disk, under the same path
        d = unique_copy(FIXTURES_DIR / SILENT_NAME, tmp_path / "f.mp4", "faults-dg3")
        full = service.process(d)
        assert full["status"] == "failed" and f"{dagster}: " in full["reason"], full
        assert str(store.home()) not in full["reason"], full
        assert "STARTED" not in _run_states(dagster, full["recording_id"])
    finally:
        fill[0].unlink()
    assert _files_of(first["recording_id"]) == kept  # nothing already stored is lost
    again = service.process(c)
    assert again["status"] == "processed" and freshness.plan(again["recording_id"]) == [], again
