"""errors: one root for every exception class the two packages define, and an internal failure told apart
from bad input by its type, not by parsing its text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from talkthrough_assets.core import errors
from talkthrough_assets.store import models
from talkthrough_assets.pipeline import events, stagerun
from talkthrough_assets import store
from talkthrough_assets.stages.turns import models as diarize_models

RID = "0123456789abcdef"
ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("talkthrough_assets", "talkthrough_mcp")

# Every module of both packages imported (in a child process: importing them all must not touch this
# one), and every exception class a module defines listed with its bases, in method resolution order.
_WALK = """
import importlib, inspect, json, pkgutil, sys
out, broken = [], []
for pkg in sys.argv[1:]:
    for m in pkgutil.walk_packages(importlib.import_module(pkg).__path__, pkg + "."):
        if m.name.rsplit(".", 1)[-1] == "__main__":  # runs the server when imported
            continue
        try:
            mod = importlib.import_module(m.name)
        except Exception as e:
            broken.append(f"{m.name}: {type(e).__name__}: {e}")
            continue
        for name, c in vars(mod).items():
            if inspect.isclass(c) and issubclass(c, BaseException) and c.__module__ == mod.__name__:
                out.append({"cls": f"{m.name}.{name}", "mro": [f"{b.__module__}.{b.__qualname__}" for b in c.__mro__]})
print(json.dumps({"classes": out, "broken": broken}))
"""


def _exception_classes() -> dict[str, list[str]]:
    got = subprocess.run([sys.executable, "-c", _WALK, *PACKAGES], cwd=ROOT, capture_output=True, text=True,
                         timeout=50, check=True)
    walk = json.loads(got.stdout.splitlines()[-1])
    assert walk["broken"] == [], "every module imports"
    return {c["cls"]: c["mro"] for c in walk["classes"]}


def test_every_exception_class_of_both_packages_derives_from_talkthrough_error():
    classes = _exception_classes()
    root = "talkthrough_assets.core.errors.TalkthroughError"
    assert len(classes) > 20 and {c.split(".")[0] for c in classes} == set(PACKAGES), sorted(classes)
    assert [c for c, mro in classes.items() if root not in mro and c != root] == []
    # the builtin base callers may catch stays beside the root
    kept = {"talkthrough_assets.store.paths.InvalidRecordingId": "builtins.ValueError",
            "talkthrough_assets.store.locks.PartitionBusy": "builtins.RuntimeError",
            "talkthrough_assets.core.errors.ModelUnavailable": "builtins.RuntimeError",
            "talkthrough_assets.core.config.ConfigError": "builtins.ValueError",
            "talkthrough_assets.read.timeq.TimeError": "builtins.ValueError",
            "talkthrough_assets.read.snapshot.DamagedManifest": "builtins.ValueError",
            "talkthrough_assets.read.media.CropOutside": "builtins.ValueError",
            "talkthrough_assets.stages.segments.chunks.CorruptChunk": "builtins.ValueError",
            "talkthrough_mcp.http_guard.BindRefused": "builtins.RuntimeError"}
    assert {c: b for c, b in kept.items() if b not in classes[c]} == {}


def test_the_shared_error_classes_are_one_class_wherever_they_are_imported_from():
    for cls in (errors.StageError, errors.BadMediaError, errors.DiskSpaceError, errors.InternalError,
                errors.ModelUnavailable, store.PartitionBusy, store.InvalidRecordingId, store.SchemaMismatch):
        assert issubclass(cls, errors.TalkthroughError), cls
    assert issubclass(store.InvalidRecordingId, ValueError) and issubclass(store.PartitionBusy, RuntimeError)
    assert models.ModelUnavailable is diarize_models.ModelUnavailable is errors.ModelUnavailable


def test_an_unexpected_exception_in_a_stage_is_recorded_as_internal_with_its_cause(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    # a probe row whose tags are a JSON list: the wall-clock ladder expects an object (a bug's shape)
    store.write_table("probe", RID, [{"path": "/x.mp4", "tags_json": "[1, 2]", "duration_ms": 1000, "file_mtime": 1.0}])
    with pytest.raises(errors.InternalError) as got:
        stagerun.run_stage("wall_clock", RID)
    assert got.value.reason.startswith("internal error (AttributeError: ") and got.value.stage == "wall_clock"
    assert isinstance(got.value.__cause__, AttributeError)
    failed = events.failed_stage(RID)
    assert failed.stage == "wall_clock" and failed.internal is True


def test_a_stage_refusing_its_input_is_not_internal(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    with pytest.raises(errors.StageError) as got:  # no probe row: the stage says what to run first
        stagerun.run_stage("wall_clock", RID)
    assert not isinstance(got.value, errors.InternalError) and "materialize `probe` first" in got.value.reason
    assert not events.failed_stage(RID).internal
