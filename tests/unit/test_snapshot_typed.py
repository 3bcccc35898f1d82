"""The read side parses a published manifest once into the typed records (model/manifest.py) and every reader
uses them: a manifest an earlier writer published (keys added since absent, a key since retired present) is
served, one that is not a v1 manifest is named damaged, and a republished one is parsed again."""

from __future__ import annotations

import json

import pytest
from manifests import RID, manifest

from talkthrough_assets import store
from talkthrough_assets.model import manifest as model
from talkthrough_assets.read import snapshot
from talkthrough_assets.read.errors import NotProcessed
from talkthrough_assets.read.reader import Reader

SEGS = [{"seq": 0, "t0_ms": 0, "t1_ms": 1500, "text": "hello there", "speaker": "S1"},
        {"seq": 1, "t0_ms": 1500, "t1_ms": 3000, "text": "budget review", "speaker": "S2"}]
FRAMES = [{"ms": 0, "file": f"frames/{RID}/g/t0.jpg", "ocr_text": "AGENDA"},
          {"ms": 1000, "file": f"frames/{RID}/g/t1.jpg", "duplicate_of": 0}]


def _publish(m: dict) -> None:
    store.put_bytes(store.manifest_key(RID), json.dumps(m).encode())


def test_the_snapshot_holds_typed_records(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    _publish(manifest(SEGS, FRAMES, names={"S1": "Ann"}, duration_ms=3000).to_json())
    snap = snapshot.read(RID)
    assert isinstance(snap.manifest, model.Manifest) and snap.manifest.job_id == RID
    assert all(isinstance(s, model.Segment) for s in snap.segments) and snap.segments[1].speaker == "S2"
    assert [f.duplicate_of for f in snap.frames] == [None, 0] and snap.frames[0].ocr_text == "AGENDA"
    assert isinstance(snap.rec, model.RecordingRow) and snap.rec.duration_ms == 3000 and snap.rec.has_video
    assert snap.diarized and snap.names == {"S1": "Ann"} and snap.name_sources == {"S1": "confirmed"}
    assert [sp.label for sp in snap.speakers] == ["S1", "S2"] and snap.partial is None


def test_a_manifest_of_an_earlier_writer_is_served(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    old = manifest(SEGS, FRAMES, duration_ms=3000).to_json()
    del old["transcript"]["words"], old["frames"]["reason"]
    old["transcript"]["retired"] = True
    old["media"]["duration_s"] = 3  # an int where the record has a float
    _publish(old)
    page = Reader().get_transcript(RID).dump()
    assert [s["text"] for s in page["segments"]] == ["hello there", "budget review"] and page["end_ms"] == 3000


def test_a_manifest_that_is_not_v1_is_named_damaged_and_a_new_publish_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    broken = manifest(SEGS, FRAMES).to_json()
    del broken["frames"]["items"]
    _publish(broken)
    reader = Reader()
    with pytest.raises(NotProcessed, match="not a valid talkthrough-manifest/v1"):
        reader.get_transcript(RID)
    _publish(manifest(SEGS[:1], FRAMES).to_json())
    assert reader.get_transcript(RID).returned == 1
