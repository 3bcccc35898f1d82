"""A disk that fills during a run (issue #34 case 3), on its own small tmpfs (the module fixture of
test_faults_disk.py, made again for this module): the one-line reason, nothing lost, and the recovery once
there is room again. Its own module: after the other cases of that battery it waited minutes (not understood yet)."""

from __future__ import annotations

from pathlib import Path

from fixture_facts import FIXTURES_DIR, SILENT_NAME, unique_copy
from test_faults_disk import _files_of, _fill, small  # noqa: F401  (small: the module fixture)

from talkthrough_assets.pipeline import datacheck
from talkthrough_assets.pipeline import execute as pipeline
from talkthrough_assets.app import service


def _process_filling(src: Path, mnt: Path, *, after: str, leave_bytes: int) -> tuple[dict, list[Path]]:
    """``service.process(src)``, the filesystem at ``mnt`` filled to ``leave_bytes`` free once stage ``after``
    is done: (its summary, [the filler file] or [] when that stage never finished)."""
    fill: list[Path] = []

    def fill_after(stage, rid, state, info):
        if stage == after and state == "ok" and not fill:
            fill.append(_fill(mnt, leave_bytes))

    pipeline.listeners.append(fill_after)
    try:
        return service.process(src), fill
    finally:
        pipeline.listeners.remove(fill_after)


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
    assert again["status"] in ("processed", "cached") and pipeline.plan(again["recording_id"]) == [], again
    assert datacheck.check(again["recording_id"], deep=True) == []
    from dagster import DagsterRunStatus, RunsFilter

    stuck = service.instance().get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED],
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
    runs = service.instance().get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED],
                                                  tags={"dagster/partition": rid}))
    assert runs == [], [r.run_id for r in runs]
    again = service.process(c)
    assert again["status"] in ("processed", "cached") and pipeline.plan(again["recording_id"]) == [], again
    assert datacheck.check(again["recording_id"], deep=True) == []
