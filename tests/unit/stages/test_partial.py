"""Partial generations (#19 item 5) on a private data root, from chunk results stored the way the segments stage
stores them: the covered range is the run of stored chunks from the start; a partial is published like a final
manifest (part first, one atomic replace) and says so; the rate rule; a finished generation is never replaced
by a partial; the read tools mark answers from a partial with the covered range and ``next_start_ms``."""

from __future__ import annotations

import dataclasses
import json

import pytest

from talkthrough_assets import store
from talkthrough_assets.stages.segments import chunks as C
from talkthrough_assets.pipeline import partial
from talkthrough_assets.model import search_index as si
from talkthrough_assets.model.manifest import Manifest

RID = "00a1b2c3d4e5f607"
PROBE = {"path": "/rec/meeting.m4a", "filename": "meeting.m4a", "kind": "audio", "container": "mov,mp4",
         "duration_ms": 30_000, "size_bytes": 5000, "width": None, "height": None, "fps": None, "video_codec": None,
         "audio_codec": "aac", "has_audio": True, "has_video": False, "tags_json": "{}", "file_mtime": 0.0,
         "cap_hit": False, "max_seconds": 0, "rotation": 0}
WORDS = ["deploy the gateway", "roll back the release", "page the on call", "write the postmortem"]


def _result(i: int) -> dict:
    """A chunk's stored result as chunks._decode_chunk writes it (times from the chunk's start)."""
    text = WORDS[i]
    meta = {"available": True, "reason": None, "language": "en", "language_probability": 0.99, "model": "tiny.en",
            "segment_count": 1, "word_count": len(text.split()), "audio_ms": 7500, "elapsed_s": 0.1,
            "dropped_count": 0, "dropped": "[]"}
    words = [{"seq": 0, "idx": k, "t0_ms": 1000 + 500 * k, "t1_ms": 1400 + 500 * k, "word": " " + w, "prob": 0.9}
             for k, w in enumerate(text.split())]
    return {"meta": meta, "segments": [{"seq": 0, "t0_ms": 1000, "t1_ms": 3000, "text": text, "avg_logprob": -0.2,
                                        "no_speech_prob": 0.01}],
            "words": words, "dropped": [], "tail": [1, 2, 3]}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    store.write_table("probe", RID, [PROBE])
    rows = [{"idx": i, "t0_ms": 7500 * i, "t1_ms": 7500 * (i + 1), "key": f"{i:x}" * 64} for i in range(4)]
    store.write_table("chunks", RID, rows)
    return rows


def _store(row: dict, i: int) -> None:
    store.put_bytes(store.chunk_result_key(row["key"]), C.encode(_result(i)))


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_the_covered_range_is_the_stored_chunks_from_the_start(home):
    rows = home
    assert partial.build(RID, {}, wall_clock=None, model_label="tiny.en") is None  # nothing stored: nothing to show
    _store(rows[0], 0)
    _store(rows[2], 2)  # stored, but after a gap: not covered
    m = partial.build(RID, {}, wall_clock=None, model_label="tiny.en")
    assert m.partial.covered_ms == (0, 7500) and m.partial.next_start_ms == 7500
    assert (m.partial.chunks_covered, m.partial.chunks, m.partial.audio_ms) == (1, 4, 30_000)
    assert m.partial.coverage == "1 of 4 chunks, 0:00-0:07"
    assert [s.text for s in m.transcript.segments] == [WORDS[0]]
    # a damaged result ends the covered range too (never served)
    _store(rows[1], 1)
    key = store.home() / store.chunk_result_key(rows[1]["key"])
    key.write_bytes(key.read_bytes()[:-3] + b"xyz")
    assert partial.build(RID, {}, wall_clock=None, model_label="tiny.en").partial.covered_ms == (0, 7500)
    _store(rows[1], 1)
    m = partial.build(RID, {}, wall_clock=None, model_label="tiny.en")
    # the same assembly as the final tables: segments numbered in order, times shifted by each chunk's start
    assert [(s.seq, s.t0_ms, s.text) for s in m.transcript.segments] == \
        [(0, 1000, WORDS[0]), (1, 8500, WORDS[1]), (2, 16000, WORDS[2])]
    assert m.partial.covered_ms == (0, 22_500)
    _store(rows[3], 3)
    done = partial.build(RID, {}, wall_clock=None, model_label="tiny.en").partial
    assert done.covered_ms == (0, 30_000) and done.next_start_ms is None  # all transcribed: the rest follows


def test_publisher_rate_atomic_publish_and_a_final_generation_is_kept(home):
    rows = home
    clock = Clock()
    pub = partial.Publisher(RID, {}, wall_clock=lambda: None, clock=clock)
    assert pub.enabled and not pub.chunk_done()  # no chunk stored yet
    _store(rows[0], 0)
    assert pub.chunk_done() and pub.published == 1  # the first one at once
    first = store.get_bytes(store.manifest_key(RID))
    assert json.loads(first)["partial"]["covered_ms"] == [0, 7500]
    # its search index part was written with it and pairs with it by size; nothing else of it is left
    parts = si.list_parts()[RID]
    assert len(parts) == 1 and si.choose_part(parts, len(first)) == parts[0][0]
    _store(rows[1], 1)
    clock.t += partial.EVERY_S - 1
    assert not pub.chunk_done()  # not due yet
    clock.t += 1
    assert pub.chunk_done() and pub.published == 2
    assert json.loads(store.get_bytes(store.manifest_key(RID)))["partial"]["covered_ms"] == [0, 15_000]
    clock.t += partial.EVERY_S
    assert not pub.chunk_done()  # due, but nothing new is covered: nothing published
    assert len(si.list_parts()[RID]) == 1 and not pub.errors

    # a recording with a finished generation keeps it until the final one replaces it
    final = json.loads(store.get_bytes(store.manifest_key(RID)))
    del final["partial"]
    store.put_json(store.manifest_key(RID), final)
    assert partial.published_kind(RID) == "final"
    again = partial.Publisher(RID, {}, wall_clock=lambda: None, clock=clock)
    _store(rows[2], 2)
    assert not again.enabled and not again.chunk_done()
    assert "partial" not in json.loads(store.get_bytes(store.manifest_key(RID)))


def test_two_generations_never_share_a_byte_size(home):
    """A reader pairs the published manifest with its index part by size: a new generation of the same size as
    the published one is padded (trailing newlines: the same JSON)."""
    _store(home[0], 0)
    m = partial.build(RID, {}, wall_clock=None, model_label="tiny.en")
    partial.publish(RID, m)
    published = store.get_bytes(store.manifest_key(RID))
    same_size = store.json_bytes(dataclasses.replace(
        m, partial=dataclasses.replace(m.partial, note=m.partial.note[:-1] + "!")).to_json())
    assert len(same_size) == len(published) and same_size != published
    padded = si.distinct_size(RID, same_size)
    assert padded.rstrip(b"\n") == same_size and len(padded) != len(published)
    assert json.loads(padded) == json.loads(same_size)


def test_read_tools_mark_a_partial_answer(home, monkeypatch):
    from talkthrough_assets.read import snapshot
    from talkthrough_assets.read import transcript
    from talkthrough_assets.read.reader import Reader

    rows = home
    _store(rows[0], 0)
    _store(rows[1], 1)
    partial.publish(RID, partial.build(RID, {}, wall_clock=None, model_label="tiny.en"))
    snap = snapshot.read(RID)
    assert snap.partial.covered_ms == (0, 15_000)
    page = transcript.page(snap).dump()
    assert page["partial"] is True and page["covered_ms"] == [0, 15_000]
    assert page["truncated"] is False and page["next_start_ms"] == 15_000
    assert page["continue_with"] == {"id": RID, "start_ms": 15_000}
    assert [s["text"] for s in page["segments"]] == WORDS[:2]
    inside = transcript.page(snap, start_ms=0, end_ms=10_000).dump()  # a range already covered: nothing to wait for
    assert inside["partial"] is True and inside["next_start_ms"] is None
    later = transcript.page(snap, start_ms=20_000).dump()  # past the covered range: come back for the same start
    assert later["segments"] == [] and later["next_start_ms"] == 20_000

    # a file written from it would look finished: export and report refuse, saying why
    from talkthrough_assets.read import formats
    from talkthrough_assets.read import report

    for make in (lambda: formats.export(RID, "srt"), lambda: report.build(RID)):
        with pytest.raises(ValueError, match="still being processed: only a partial transcript"):
            make()

    monkeypatch.setenv("TALKTHROUGH_MCP_REFRESH_S", "0")
    reader = Reader(refresh_interval=0.0)
    listed = reader.list_recordings().dump()["recordings"]
    assert [(r["id"], r["partial"], r["covered_ms"], r["next_start_ms"]) for r in listed] == \
        [(RID, True, [0, 15_000], 15_000)]
    hits = reader.search("gateway").dump()
    assert hits["hits"] and hits["recordings"][RID]["partial"] is True
    assert hits["recordings"][RID]["covered_ms"] == [0, 15_000]
    moment = reader.get_moment(RID, 14_000).meta
    assert moment.partial is True and moment.transcript.next_start_ms == 15_000

    # the final generation replaces it: no marking anywhere
    final = json.loads(store.get_bytes(store.manifest_key(RID)))
    del final["partial"]
    data = si.distinct_size(RID, store.json_bytes(final))
    part, _ = si.write_part(RID, Manifest.from_json(final), data)
    store.put_bytes(store.manifest_key(RID), data)
    si.drop_parts(RID, keep=part)
    page = reader.get_transcript(RID).dump()
    assert "partial" not in page and page["next_start_ms"] is None and page["generation"] != snap.generation
    assert "partial" not in reader.list_recordings().dump()["recordings"][0]
    assert "partial" not in reader.search("gateway").dump()["recordings"][RID]
    assert "deploy the gateway" in formats.export(RID, "txt")


def test_a_run_that_stops_says_so_in_its_partial_generation(home):
    from talkthrough_assets.read import snapshot
    from talkthrough_assets.read import transcript

    rows = home
    quiet = partial.Publisher(RID, {}, wall_clock=lambda: None, clock=Clock())
    assert not quiet.stopped("segments: boom") and store.get_bytes(store.manifest_key(RID)) is None  # nothing of its own
    pub = partial.Publisher(RID, {}, wall_clock=lambda: None, clock=Clock())
    _store(rows[0], 0)
    assert pub.chunk_done()
    _store(rows[1], 1)  # decoded before the failure: the stopped generation covers it too
    assert pub.stopped("turns: diarization crashed")
    m = json.loads(store.get_bytes(store.manifest_key(RID)))
    assert m["partial"]["stopped"] == "turns: diarization crashed" and m["partial"]["covered_ms"] == [0, 15_000]
    page = transcript.page(snapshot.read(RID)).dump()
    assert page["partial"] is True and page["partial_stopped"] == "turns: diarization crashed"
    assert "stopped (turns: diarization crashed)" in page["partial_note"] and page["next_start_ms"] == 15_000
