"""#19: a longer export of a take that was processed before (the same first minutes) reuses the stored Whisper
results of every chunk but the shorter file's last, and its transcript is what a fresh decode gives. Real
faster-whisper on a 48-kHz stereo AAC take of the two-voices fixture (the 16-kHz samples come out of the
resampler, whose flush changes the shorter file's last samples), small chunks, a private data root."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fixture_facts import TWO_VOICES_PATH, copy_audio_packets

from talkthrough_assets.app import service
from talkthrough_assets import store
from talkthrough_assets.stages import audio as audio_stage
from talkthrough_assets.stages.segments import chunks as C
from talkthrough_assets.stages.segments.engine import Engine
from talkthrough_assets.stages.segments.options import Options

CHUNK_S = 5.0
CUT_S = 16.0


def _take_48k(src: Path, dst: Path) -> Path:
    """``src``'s audio as a 48-kHz stereo AAC file (a recorder's format)."""
    import av

    with av.open(str(src)) as i, av.open(str(dst), "w") as o:
        st = o.add_stream("aac", rate=48000)
        st.layout = "stereo"
        rs = av.AudioResampler(format="fltp", layout="stereo", rate=48000)
        for fr in [*i.decode(audio=0), None]:
            for f in rs.resample(fr):
                for p in st.encode(f):
                    o.mux(p)
        for p in st.encode(None):
            o.mux(p)
    return dst


def _stored() -> set[str]:
    root = store.home() / store.CHUNKS_PREFIX
    return {p.stem for p in root.rglob("*.bin")} if root.exists() else set()


def _plan(rid: str) -> list[dict]:
    return sorted(store.read_rows("chunks", rid), key=lambda r: r["idx"])


def test_a_longer_take_reuses_every_chunk_of_the_shorter_but_its_last(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home" / "dagster"))
    monkeypatch.setenv("TALKTHROUGH_CHUNK_S", str(CHUNK_S))
    take = _take_48k(TWO_VOICES_PATH, tmp_path / "take.m4a")
    short = copy_audio_packets(take, tmp_path / "take first 16 s.m4a", CUT_S)

    # the shorter file's samples are the longer one's first, except the last few (the resampler's flush)
    audio_stage.extract_wav(take, tmp_path / "long.wav")
    audio_stage.extract_wav(short, tmp_path / "short.wav")
    a, b = audio_stage.load_wav(tmp_path / "long.wav"), audio_stage.load_wav(tmp_path / "short.wav")
    assert abs(len(b) - CUT_S * 16000) < 2048 and len(a) > len(b)
    differ = np.nonzero(a[:len(b)] != b)[0]
    assert len(differ) < 64 and (not len(differ) or differ[0] >= len(b) - 64), differ[:5]

    first = service.process(short)
    assert first["status"] == "processed", first
    short_plan = _plan(first["recording_id"])
    assert len(short_plan) >= 3, short_plan
    before = _stored()
    assert {r["key"] for r in short_plan} <= before

    second = service.process(take)
    assert second["status"] == "processed", second
    rid = second["recording_id"]
    plan = _plan(rid)
    assert len(plan) > len(short_plan)
    # every chunk of the shorter file but its last is a chunk of the longer one (same range, same key) and was
    # reused; the rest was decoded and is stored now
    head = short_plan[:-1]
    assert [(r["t0_ms"], r["t1_ms"], r["key"]) for r in plan[:len(head)]] == \
        [(r["t0_ms"], r["t1_ms"], r["key"]) for r in head]
    reused = [r for r in plan if r["key"] in before]
    assert reused == plan[:len(head)], (len(reused), len(head))
    assert short_plan[-1]["key"] not in {r["key"] for r in plan}
    assert {r["key"] for r in plan} <= _stored()
    # the transcript is what a decode of the whole take from nothing gives (an empty in-memory store)
    mem: dict[str, bytes] = {}
    opts = Options(chunk_s=CHUNK_S)
    fresh = C.transcribe_chunked(a, opts, Engine.of(opts), fp="fresh", load=mem.get, save=mem.__setitem__)
    assert len(mem) == len(plan)
    got = [(s["t0_ms"], s["t1_ms"], s["text"]) for s in sorted(store.read_rows("segments", rid), key=lambda s: s["seq"])]
    assert got and got == [(s.t0_ms, s.t1_ms, s.text) for s in fresh.transcript.segments]


@pytest.mark.parametrize("after_window", [1, C.WIN, C.SR // 2, C.SR, C.SR + C.WIN])
def test_a_cut_never_hears_the_last_second_of_a_file(tmp_path, after_window):
    """However a shorter take ends, its chunks but the last are the longer take's, even when up to its last
    second differs from the longer one (here: 0.9 s of silence, which a cut placed there would choose)."""
    audio_stage.extract_wav(TWO_VOICES_PATH, tmp_path / "a.wav")
    a = audio_stage.load_wav(tmp_path / "a.wav")
    long_plan = C.plan(a, CHUNK_S)
    hi_off = int(int(CHUNK_S * C.SR) // C.WIN * C.WIN * (1 + C.SEARCH_SHARE)) // C.WIN * C.WIN
    for pos, _ in long_plan[:-2]:
        n = pos + hi_off + after_window
        b = a[:n].copy()
        b[-int(0.9 * C.SR):] = 0.0
        short_plan = C.plan(b, CHUNK_S)
        assert short_plan[:-1] == long_plan[:len(short_plan) - 1], (pos, after_window)
        assert short_plan[-1][1] == n
