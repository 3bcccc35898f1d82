"""A run's settings travel as its Dagster run config and are kept for the recording only once that run succeeded:
the real CLI and the real process_recording job (the UI's Launchpad path) on a real instance.

- `process --beam-size 3 --max-frames 5`: the run's record in Dagster shows both, and they are kept after it;
- a UI run whose config holds a value its setting cannot take fails with that value named, keeps nothing, and
  the next plain `process` finds everything stored as before (nothing re-run);
- a file that is no media, given settings, keeps none of them.
"""

from __future__ import annotations

import json

from dagster import DagsterInstance, RunsFilter
from fixture_facts import MEETING_PATH, unique_copy
from typer.testing import CliRunner

from talkthrough_assets import store
from talkthrough_assets.cli import main as cli
from talkthrough_assets.core import ids
from talkthrough_assets.definitions import defs
from talkthrough_assets.pipeline import settings as S


def _last_run_config(rid: str) -> dict:
    inst = DagsterInstance.get()
    (run,) = inst.get_runs(RunsFilter(tags={"dagster/partition": rid}), limit=1)
    return run.run_config.get("ops", {}).get("talkthrough_stages", {}).get("config", {})


def test_cli_settings_are_in_the_run_record_and_kept_after_it(tt_home, tmp_path):
    media = unique_copy(MEETING_PATH, tmp_path / "standup.m4a", "settings-travel")
    rid = ids.recording_id(media)
    r = CliRunner().invoke(cli.app, ["process", str(media), "--beam-size", "3", "--max-frames", "5"])
    assert r.exit_code == 0, r.output
    assert _last_run_config(rid) == {"beam_size": 3, "max_frames": 5}
    assert S.load_overrides(rid) == {"beam_size": 3, "max_frames": 5}  # kept: the run succeeded

    # the UI's path: a run config value the setting cannot take fails the run, with the value named
    job = defs.resolve_job_def("process_recording")
    res = job.execute_in_process(instance=DagsterInstance.get(), partition_key=rid, raise_on_error=False,
                                 run_config={"ops": {"talkthrough_stages": {"config": {"beam_size": 0}}}})
    assert not res.success
    failure = DagsterInstance.get().get_run_by_id(res.run_id).tags.get("talkthrough/failure", "")
    assert "beam_size" in failure and "1 to 20" in failure, failure
    assert S.load_overrides(rid) == {"beam_size": 3, "max_frames": 5}  # nothing of the failed run kept

    again = CliRunner().invoke(cli.app, ["process", str(media), "--json"])
    assert again.exit_code == 0, again.output
    (summary,) = json.loads(again.output[:again.output.rindex("]") + 1])
    assert summary["status"] == "cached" and summary["stages_run"] == [], summary


def test_a_file_that_is_no_media_keeps_none_of_its_settings(tt_home, tmp_path):
    bad = tmp_path / "notes.mp4"
    bad.write_text("these are meeting notes, not a video\n" * 20)
    rid = ids.recording_id(bad)
    r = CliRunner().invoke(cli.app, ["process", str(bad), "--beam-size", "3"])
    assert r.exit_code != 0, r.output
    assert not store.exists(store.settings_key(rid)), S.load_overrides(rid)
