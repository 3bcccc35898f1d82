"""errors: one root, and an internal failure told apart from bad input by its type, not by parsing its text."""

from __future__ import annotations

import pytest

from talkthrough_assets.core import errors
from talkthrough_assets.store import models
from talkthrough_assets.pipeline import execute as pipeline
from talkthrough_assets import store
from talkthrough_assets.stages.turns import models as diarize_models
from talkthrough_assets.read.errors import ReadError

RID = "0123456789abcdef"


def test_every_talkthrough_error_shares_one_root_and_keeps_its_builtin_base():
    for cls in (errors.StageError, errors.BadMediaError, errors.DiskSpaceError, errors.InternalError,
                errors.ModelUnavailable, store.PartitionBusy, store.InvalidRecordingId, store.SchemaMismatch,
                ReadError):
        assert issubclass(cls, errors.TalkthroughError), cls
    assert issubclass(store.InvalidRecordingId, ValueError) and issubclass(store.PartitionBusy, RuntimeError)
    assert models.ModelUnavailable is diarize_models.ModelUnavailable is errors.ModelUnavailable


def test_an_unexpected_exception_in_a_stage_is_recorded_as_internal_with_its_cause(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    # a probe row whose tags are a JSON list: the wall-clock ladder expects an object (a bug's shape)
    store.write_table("probe", RID, [{"path": "/x.mp4", "tags_json": "[1, 2]", "duration_ms": 1000, "file_mtime": 1.0}])
    with pytest.raises(errors.InternalError) as got:
        pipeline.run_stage("wall_clock", RID)
    assert got.value.reason.startswith("internal error (AttributeError: ") and got.value.stage == "wall_clock"
    assert isinstance(got.value.__cause__, AttributeError)
    failed = pipeline.failed_stage(RID)
    assert failed["stage"] == "wall_clock" and failed["internal"] is True


def test_a_stage_refusing_its_input_is_not_internal(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    with pytest.raises(errors.StageError) as got:  # no probe row: the stage says what to run first
        pipeline.run_stage("wall_clock", RID)
    assert not isinstance(got.value, errors.InternalError) and "materialize `probe` first" in got.value.reason
    assert not pipeline.failed_stage(RID)["internal"]
