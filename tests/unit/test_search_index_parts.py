"""The persistent search index (issue #26, item 4) on a synthetic data root: parts written as the manifest
stage writes them, merged lazily into buckets, superseded and forgotten recordings dropped on re-merge,
and the reader's answers identical whether it reads the merged buckets, the parts or only the manifests."""

from __future__ import annotations

import shutil

import pytest

from manifests import stage_build
from talkthrough_assets import store
from talkthrough_assets.model import search_index as si
from talkthrough_assets.model import search_index_docs
from talkthrough_assets.model import terms
from talkthrough_assets.model.manifest import Manifest, Segment


def _manifest(rid: str, transcript: list[tuple[int, str]], ocr: list[tuple[int, str]] = ()) -> dict:
    segs = [{"seq": i, "t0_ms": t, "t1_ms": t + 900, "text": text} for i, (t, text) in enumerate(transcript)]
    ocr_rows = [{"ms": ms, "text": text} for ms, text in ocr]
    frames = [{"ms": ms, "file": f"frames/{rid}/g/t{ms:08d}.jpg"} for ms, _ in ocr]
    probe = {"path": f"/nonexistent/{rid[:4]}.mp4", "filename": f"{rid[:4]}.mp4", "kind": "video",
             "duration_ms": 600_000, "size_bytes": 1, "has_audio": True, "has_video": True}
    return stage_build(
        recording_id=rid, probe=probe, wall_clock=None,
        transcript={"available": True, "reason": None, "language": "en", "model": "test"}, segments=segs,
        words=[{"t0_ms": t + 300, "t1_ms": t + 600, "word": text.split()[-1]} for t, text in transcript],
        diarization=None, turns=[],
        speakers=[], speaker_segments=[], keyframes=frames, dedup=[{"ms": ms, "duplicate_of": None} for ms, _ in ocr],
        ocr=ocr_rows, settings={"max_frames": 1000, "ocr": True}).to_json()


def _publish(rid: str, m: dict, merge: bool = True) -> str:
    """What the manifest stage does: the part, the manifest, old parts dropped, the bucket merged lazily."""
    data = store.json_bytes(m)
    part, _ = si.write_part(rid, Manifest.from_json(m), data)
    store.put_bytes(store.manifest_key(rid), data)
    si.drop_parts(rid, keep=part)
    if merge:
        si.maybe_compact(rid)
    return part


def _merged(b: str = "a") -> dict[str, str]:
    loaded = si.load_bucket(b)
    return {r["rid"]: r["part"] for r in loaded[1].recs} if loaded else {}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    return tmp_path


def test_terms_rows_and_queries_share_one_tokenizer():
    docs = search_index_docs.documents([Segment(seq=0, t0_ms=0, t1_ms=900, text="Dashboards showed ERROR503")],
                                       [(100, 400, "Dashboards"), (450, 600, "showed"), (650, 800, "ERROR503")],
                                       [], {})
    rows = search_index_docs.term_table_rows(docs, "transcript")
    assert {r.term: r.t_ms for r in rows} == {"dashboard": 100, "showed": 450, "error": 650, "503": 650}
    assert terms.index_terms("dashboards") == ["dashboard"]  # what a query for the plural searches


def test_parts_merge_lazily_and_superseded_or_forgotten_recordings_leave(home):
    rids = [f"a{i:015x}" for i in range(30)]
    for i, rid in enumerate(rids[:20]):
        _publish(rid, _manifest(rid, [(0, f"alpha word{i}")]), merge=False)
    assert si.compact("a") is not None and len(_merged()) == 20  # nothing merged yet: due at once
    _publish(rids[20], _manifest(rids[20], [(0, "beta")]))
    assert rids[20] not in _merged()  # 1 new of 20: below a tenth, stays an unmerged part
    _publish(rids[21], _manifest(rids[21], [(0, "gamma")]))
    assert {rids[20], rids[21]} <= set(_merged())  # 2 of 20: merged
    old_part = _merged()[rids[0]]
    new_part = _publish(rids[0], _manifest(rids[0], [(0, "alpha reprocessed")]), merge=False)
    assert new_part != old_part and [n for n, _ in si.list_parts()[rids[0]]] == [new_part]
    si.compact("a", force=True)
    assert _merged()[rids[0]] == new_part
    store.manifest_path(rids[1]).unlink()
    si.forget(rids[1])
    loaded = si.load_bucket("a")
    assert rids[1] not in {r["rid"] for r in loaded[1].recs} and rids[1] not in si.list_parts()
    texts = set()
    for f in (home / si.MERGED).rglob("*-docs.arrow"):
        texts |= set(si._read_ipc(str(f.relative_to(home))).column("text").to_pylist())
    assert "alpha word1" not in texts and "alpha word0" not in texts and "alpha reprocessed" in texts


def test_reader_answers_alike_from_merged_buckets_parts_and_manifests(home, tmp_path):
    from talkthrough_assets.read.reader import Reader

    lib = {"a000000000000001": ([(0, "alpha beta gamma"), (5000, "Alpha ALPHA delta dashboards")], [(1000, "ROLLBACK OK")]),
           "b000000000000002": ([(0, "beta epsilon roll back"), (2500, "zeta eta dashboard")], [(1000, "ÄLPHA screen")]),
           "c000000000000003": ([(0, "omega alpha rollback")], [])}
    queries = [("alpha", {}), ("alpha beta", {}), ("alpha epsilon", {}), ("dashboards", {}), ("rollback", {}),
               ('"roll back"', {}), ("alpha", {"recording_id": "b000000000000002"}), ("alpah", {}), ("zeta eta", {})]

    def answers(root) -> list[dict]:
        rd = Reader(refresh_interval=0)
        try:
            return [rd.search(q, **kw).dump() for q, kw in queries]
        finally:
            rd.index.close()

    for rid, (tr, ocr) in lib.items():
        _publish(rid, _manifest(rid, tr, ocr))
    merged = answers(home)
    assert merged[0]["total_matches"] == 4 and merged[4]["hits"] and merged[7]["did_you_mean"] == {"alpah": ["alpha"]}
    shutil.rmtree(home / si.MERGED)
    assert answers(home) == merged  # from the parts
    shutil.rmtree(home / "index")
    assert answers(home) == merged  # from the manifests
