"""Every failed run carries the `talkthrough/failure` tag (#38 item 2), also one that Dagster itself failed
(the talkthrough stages asset tags its own failures): `talkthrough ui` tags those at start and every 30 s
with the reason from the run's own failure, on a real instance and a real run."""

from __future__ import annotations

from talkthrough_assets.defs import run_marks
from talkthrough_assets.app import runs


def test_a_failed_run_without_a_failure_tag_gets_one_from_its_failure(tt_home):
    from talkthrough_assets.definitions import defs

    inst = runs.instance()
    # a register_folder run whose file cannot be read (EIO at offset 0): its op raises, Dagster fails the run
    job = defs.resolve_job_def("register_folder")
    res = job.execute_in_process(instance=inst, raise_on_error=False, run_config={
        "ops": {"register_folder_op": {"config": {"folder": "/proc/self/mem"}}}})
    assert not res.success
    assert "talkthrough/failure" not in inst.get_run_by_id(res.run_id).tags
    assert res.run_id in run_marks.tag_untagged_failures(inst)
    tag = inst.get_run_by_id(res.run_id).tags["talkthrough/failure"]
    assert "Input/output error" in tag and "\n" not in tag, tag
    assert res.run_id not in run_marks.tag_untagged_failures(inst)  # once
