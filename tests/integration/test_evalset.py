"""The evaluation set's loader (bench/evalset.py), WER text normaliser and materialiser (bench/fetch_eval.py):
the committed manifest is well-formed, and fetching from a local git mirror builds byte-exact clips."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import evalset  # noqa: E402
import fetch_eval  # noqa: E402

HEX40 = re.compile(r"[0-9a-f]{40}")
HEX64 = re.compile(r"[0-9a-f]{64}")


def test_committed_manifest_is_complete_and_pinned(tmp_path):
    clips = evalset.load_manifest(cache=tmp_path)
    ids = [c.id for c in clips]
    assert len(ids) == len(set(ids))
    by_kind = {k: [c for c in clips if c.kind == k] for k in evalset.KINDS}
    assert len(by_kind["asr"]) >= 25 and len(by_kind["non_english"]) >= 10 and len(by_kind["diarization"]) >= 6
    for c in clips:
        assert c.audio.parent == tmp_path and c.audio.name.startswith(c.id)
        assert HEX64.fullmatch(c.sha256) and c.licence and c.sources
        for s in c.sources:
            assert HEX40.fullmatch(s["commit"]) and HEX40.fullmatch(s["blob"]) and HEX64.fullmatch(s["sha256"])
            assert "/" in s["repo"] and s["path"]
        if c.kind in ("asr", "non_english"):
            assert evalset.words(c.text, c.language), c.id
        if c.kind == "non_english":
            assert c.language != "en"
        if c.kind == "diarization":
            assert c.speakers >= 2 and c.turns() == sorted(c.turns()), c.id
    langs = {c.language for c in by_kind["non_english"]}
    assert {"de", "fr", "es"} <= langs
    tags = {t for c in clips for t in c.tags}
    assert {"read", "spontaneous", "meeting", "overlap", "short", "accented"} <= tags
    mixed = [c for c in clips if c.text_until_s]
    assert mixed and all(c.kind == "asr" and c.duration_s > c.text_until_s for c in mixed)
    assert {c.speakers for c in by_kind["diarization"]} >= {2, 3, 4, 5, 6}


def test_filters_and_turns(tmp_path):
    man = {"clips": [
        {"id": "a", "kind": "diarization", "file": "a.wav", "sha256": "0" * 64, "sources": [{}],
         "turns": [[2.0, 3.5, "B"], [0.5, 2.0, "A"]], "tags": ["meeting"]},
        {"id": "b", "kind": "asr", "file": "b.flac", "sha256": "1" * 64, "sources": [{}], "text": "Hi.",
         "tags": ["short"]}]}
    p = tmp_path / "m.json"
    p.write_text(json.dumps(man))
    a, b = evalset.load_manifest(p, cache=tmp_path / "c")
    assert a.turns() == [(0.5, 2.0, "A"), (2.0, 3.5, "B")] and a.speakers == 2
    assert a.rttm == tmp_path / "c" / "a.rttm" and not a.exists()
    assert b.turns() == [] and b.text == "Hi." and b.language == "en"
    assert [c.id for c in evalset.load_manifest(p, cache=tmp_path, tag="short")] == ["b"]
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "b.flac").write_bytes(b"x")
    s = evalset.summary([a, b])
    assert s["kinds"] == {"diarization": 1, "asr": 1} and s["tags"] == {"meeting": 1, "short": 1}
    assert s["missing"] == ["a"] and s["clips"] == 2
    assert [c.id for c in evalset.load_manifest(p, cache=tmp_path, kind="diarization")] == ["a"]
    man["clips"][0]["turns"] = [[3.0, 2.0, "A"]]
    p.write_text(json.dumps(man))
    with pytest.raises(ValueError, match="not a positive interval"):
        evalset.load_manifest(p, cache=tmp_path)


@pytest.mark.parametrize("text,lang,expected", [
    ("Mr. Quilter is the apostle.", "en", "mister quilter is the apostle"),
    ("The expression goes 6 × 10 = 60 not 600,000, a 12% chance.", "en",
     "the expression goes six times ten equals sixty not six hundred thousand a twelve percent chance"),
    ("I didn't know - well-known/ok?", "en", "i didn't know well known okay"),
    ("‘Hello,’ she said… 1999, 2005, 1900, 2024, 1066, 1805", "en",
     "hello she said nineteen ninety nine two thousand five nineteen hundred twenty twenty four "
     "one thousand sixty six eighteen oh five"),
    ("uh so this is um the <VOCNOISE> [adif] corpus yknow", "en", "so this is the corpus you know"),
    ("Les deux autres sont situés au bord de la mer jaune.", "fr",
     "les deux autres sont situés au bord de la mer jaune"),
    ("Meine Lieblingszahl ist 268", "de", "meine lieblingszahl ist 268"),
    ("客観的実在。", "ja", "客 観 的 実 在"),
    ("그는 길 한", "ko", "그 는 길 한"),
    ("", "en", ""),
])
def test_words(text, lang, expected):
    assert evalset.words(text, lang) == expected.split()


def test_wer():
    assert evalset.wer("go forward ten meters", "Go forward 10 meters.") == 0.0
    assert evalset.wer("a b c d", "a x c") == 0.5
    assert evalset.edit_distance([], ["a"]) == 1


def _wav(samples: list[int], rate: int = 16000) -> bytes:
    return fetch_eval.write_wav(fetch_eval.pcm16_fmt(rate), struct.pack(f"<{len(samples)}h", *samples))


def test_wav_edits_are_exact():
    w = _wav(list(range(-800, 800)))
    fmt, p, pcm = fetch_eval.parse_wav(w)
    assert (p["rate"], p["channels"], p["bits"], len(pcm)) == (16000, 1, 16, 3200)
    cut = fetch_eval.crop(w, 0.01, 0.02)
    assert fetch_eval.parse_wav(cut)[2] == pcm[320:640]
    assert fetch_eval.raw_to_wav(pcm + b"\1", 16000) == w  # odd trailing byte dropped
    with pytest.raises(ValueError, match="not a RIFF"):
        fetch_eval.parse_wav(b"fLaC" + b"\0" * 40)


def test_concat_trims_to_speech_and_times_the_turns():
    silence, loud = [0] * 1600, [3000, -3000] * 800
    a = _wav(silence + loud + silence)          # 0.1 s speech between 0.1 s silences
    b = _wav(silence + loud * 2 + silence)      # 0.2 s speech
    data, turns = fetch_eval.concat([(a, "A"), (b, "B")], gap_s=0.5)
    # each part keeps its speech plus 50 ms either side; 0.5 s of silence between the parts
    assert turns == [(0.0, 0.2, "A"), (0.7, 1.0, "B")]
    _, p, pcm = fetch_eval.parse_wav(data)
    assert len(pcm) == 2 * 16000 * 1.0
    with pytest.raises(ValueError, match="sample rate"):
        fetch_eval.concat([(a, "A"), (_wav(loud, 8000), "B")], gap_s=0.1)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_fetch_from_a_git_mirror(tmp_path):
    work = tmp_path / "src"
    work.mkdir()
    (work / "a.wav").write_bytes(_wav([0] * 160 + [2000, -2000] * 400 + [0] * 160))
    (work / "b.raw").write_bytes(struct.pack("<4h", 1, 2, 3, 4))
    with zipfile.ZipFile(work / "z.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("in/zip.wav", (work / "a.wav").read_bytes())
        z.writestr("trans.txt", "zip.wav\tnot used\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run(git + ["init", "-q", str(work)], check=True)
    subprocess.run(git + ["-C", str(work), "add", "."], check=True)
    subprocess.run(git + ["-C", str(work), "commit", "-qm", "x"], check=True)
    mirror = tmp_path / "mirrors"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror / "own+repo" / "repo")], check=True)
    commit = subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()

    def src(path):
        data = (work / path).read_bytes()
        return {"repo": "own/repo", "commit": commit, "path": path, "blob": fetch_eval.git_blob_id(data),
                "sha256": fetch_eval.sha256(data)}

    raw_clip = {"id": "r", "kind": "asr", "file": "r.wav", "sources": [src("b.raw")], "edit": {"op": "raw_to_wav", "rate": 8000},
                "text": "four samples"}
    raw_clip["sha256"] = fetch_eval.sha256(fetch_eval.raw_to_wav((work / "b.raw").read_bytes(), 8000))
    copy_clip = {"id": "c", "kind": "diarization", "file": "c.wav", "sources": [src("a.wav")], "edit": {"op": "copy"},
                 "sha256": src("a.wav")["sha256"], "turns": [[0.0, 0.05, "A"]]}
    zip_clip = {"id": "z", "kind": "asr", "file": "z.wav", "sources": [src("z.zip")],
                "edit": {"op": "unzip", "member": "in/zip.wav"}, "sha256": src("a.wav")["sha256"], "text": "x"}
    bad = dict(copy_clip, id="bad", file="bad.wav", sha256="0" * 64)
    man = tmp_path / "manifest.json"
    man.write_text(json.dumps({"clips": [raw_clip, copy_clip, zip_clip, bad]}))
    cache = tmp_path / "cache"
    st = fetch_eval.fetch(man, cache, mirror, log=lambda *a: None)
    assert st["fetched"] == 3 and [f[0] for f in st["failed"]] == ["bad"] and not (cache / "bad.wav").exists()
    assert (cache / "c.wav").read_bytes() == (work / "a.wav").read_bytes() == (cache / "z.wav").read_bytes()
    assert (cache / "r.txt").read_text() == "four samples\n"
    assert (cache / "c.rttm").read_text() == "SPEAKER c 1 0.000 0.050 <NA> <NA> A <NA> <NA>\n"
    again = fetch_eval.fetch(man, cache, mirror, only="c", check=True, log=lambda *a: None)
    assert again["ok"] == 1 and again["fetched"] == 0 and not again["failed"]
    clips = {c.id: c for c in evalset.load_manifest(man, cache=cache)}
    assert clips["c"].exists() and clips["c"].turns() == [(0.0, 0.05, "A")] and not clips["bad"].exists()
    # a source whose bytes differ from the manifest is refused, not used
    with pytest.raises(ValueError, match="does not match"):
        fetch_eval.read_source({**copy_clip["sources"][0], "sha256": "f" * 64}, mirror)


def test_fetch_over_http_pinned_by_commit(tmp_path):
    """The network path: OWNER/NAME/COMMIT/PATH from a server (a local one standing in for
    raw.githubusercontent.com), a non-ASCII path quoted, the bytes verified."""
    import functools
    import http.server
    import threading

    data = _wav([0, 1000, -1000, 0] * 100)
    commit = "c" * 40
    served = tmp_path / "www" / "own" / "repo" / commit / "tests" / "data"
    served.mkdir(parents=True)
    (served / "tr\u00f100.wav").write_bytes(data)
    src = {"repo": "own/repo", "commit": commit, "path": "tests/data/tr\u00f100.wav",
           "blob": fetch_eval.git_blob_id(data), "sha256": fetch_eval.sha256(data)}
    man = tmp_path / "manifest.json"
    man.write_text(json.dumps({"clips": [{"id": "n", "kind": "diarization", "file": "n.wav", "sources": [src],
                                          "edit": {"op": "copy"}, "sha256": src["sha256"],
                                          "turns": [[0.0, 0.025, "A"]]}]}))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "www"))
    handler.log_message = lambda *a: None
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as srv:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        st = fetch_eval.fetch(man, tmp_path / "cache", None, base_url=base, log=lambda *a: None)
        assert st["fetched"] == 1 and not st["failed"]
        assert (tmp_path / "cache" / "n.wav").read_bytes() == data
        missing = fetch_eval.fetch(man, tmp_path / "cache2", None, base_url=base + "/nothing",
                                   log=lambda *a: None)
        srv.shutdown()
    assert [f[0] for f in missing["failed"]] == ["n"] and "404" in missing["failed"][0][1]


def test_meeting_window_turns_are_cut_to_the_window_and_shifted():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "eval"))
    import build_meeting_clips as B

    rttm = "\n".join([
        "SPEAKER M1 1 95.00 10.00 <NA> <NA> A <NA> <NA>",      # crosses the window's start
        "SPEAKER M1 1 101.50 2.00 <NA> <NA> B <NA> <NA>",
        "SPEAKER M1 1 129.995 3.00 <NA> <NA> C <NA> <NA>",     # inside for 5 ms only: dropped
        "SPEAKER M2 1 101.00 1.00 <NA> <NA> D <NA> <NA>",      # another meeting
        "SPEAKER M1 1 140.00 1.00 <NA> <NA> E <NA> <NA>"])     # after the window
    assert B.window_turns(rttm, "M1", 100.0, 130.0) == [[0.0, 5.0, "A"], [1.5, 3.5, "B"]]


def test_committed_meeting_clips_pin_their_reference():
    for c in json.loads(evalset.MANIFEST.read_text(encoding="utf-8"))["clips"]:
        if c["id"].startswith("meeting_"):
            ref = c["turns_ref"]
            assert HEX40.fullmatch(ref["commit"]) and HEX40.fullmatch(ref["blob"]) and HEX64.fullmatch(ref["sha256"])
            assert c["kind"] == "diarization" and "meeting" in c["tags"] and "ami" not in c["tags"]
            assert all(0.0 <= a < b <= c["duration_s"] for a, b, _ in c["turns"]), c["id"]
