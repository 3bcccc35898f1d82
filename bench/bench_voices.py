#!/usr/bin/env python3
"""People across recordings (issue #35): speaker identification from stored voiceprints, on public speech
where the same people appear in several recordings, with people never enrolled among them.

    python bench/bench_voices.py [--cache /tmp/voices.json] [--json OUT] [--no-synthetic]

The set (every clip skipped, and said so, when its audio is not there):

* real, several recordings per person (the evaluation set, ``python bench/fetch_eval.py``; licences in
  bench/eval/SOURCES.md): AMI meeting excerpts sharing participants (dev00/dev01: MEE009, MEE012;
  trn00/trn03: MEE067, MEO069; trn07/trn08: FEE087, FEE088, MEE089, MEO086; trn06/trn09: FEE083; AMI is
  CC BY 4.0, via pyannote-audio's tests, MIT), and single-speaker read or spontaneous clips of one person
  joined into two or three "recordings" each (LJSpeech, ARCTIC aew/axb, MFA commentary spk1/spk2, SpeechBrain
  spk1/spk2, pocketsphinx "cards", LibriVox Sense and Sensibility, LibriSpeech 1272 from ../shared);
* real, never enrolled: every other AMI participant, the Speech Accent Archive readers, LibriSpeech
  2412/61, JFK, TIMIT LDC93S1, Common Voice clips, and the other labels of the multi-speaker clips;
* synthetic (``--no-synthetic`` leaves it out; needs flite, espeak-ng and sox): Debian's flite voices kal,
  awb, rms, slt in two-person meetings (fixtures/two_voices.m4a, fixtures/voices_again.m4a and two composed
  here), two espeak-ng voices as never-enrolled people.

Every recording goes through the ``turns`` stage's function (``stages.turns.run_turns``, the speaker
count given), whose voiceprints are what Talkthrough stores; a label's person is the reference speaker it
overlaps most. For each person with several recordings, one recording's voiceprint is enrolled (each
person's first recording, then each one's second: two rounds), and every other label of every recording is
recognised with ``stages.turns.voices.recognise`` (production code). Reported per threshold: top-1 of
enrolled people's labels (>= 10 s of clean speech in both recordings, 3-10 s, under 3 s) and false
suggestions (a label given an enrolled person's name when that person is not speaking) as a share of all
labels. The suggest threshold is the lowest with false suggestions <= 1 %; the apply threshold the lowest
with none, rounded up to 0.05. The thresholds are chosen and reported on the same (small) set: no held-out
half. Timing: what the voiceprints add to the turns stage (ratio, same run), and recognition of one label
against 1 000 enrolled people.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))  # fixture_facts: the fixtures' reference turns
SHARED = ROOT.parent / "shared"
MODELS = SHARED / "models" / "diarization"
SR = 16000

AMI = {"ami_dev00_30s": 2, "ami_dev01_30s": 2, "ami_trn00_30s": 3, "ami_trn03_30s": 2, "ami_trn04_30s": 3,
       "ami_trn05_30s": 4, "ami_trn06_30s": 3, "ami_trn07_30s": 4, "ami_trn08_30s": 4, "ami_trn09_30s": 3,
       "ami_tst00_30s": 4}
OTHER_MULTI = {"falcon_3spk_sequential": 3, "pyannote_sample_2spk_phone": 2}
# person -> recordings, each a list of clips joined with 0.5 s of silence
JOINED = {
    "LJ": [["ljspeech_LJ001-0001", "ljspeech_LJ001-0002", "ljspeech_LJ001-0003"],
           ["ljspeech_LJ001-0004", "ljspeech_LJ001-0005", "ljspeech_LJ001-0006"],
           ["ljspeech_LJ001-0007", "ljspeech_LJ001-0008", "ljspeech_LJ002-0020", "ljspeech_LJ002-0035"]],
    "arctic_aew": [["arctic_aew_a0001", "arctic_aew_a0002"], ["arctic_aew_a0003"]],
    "arctic_axb": [["arctic_axb_a0004", "arctic_axb_a0005"], ["arctic_axb_a0006"]],
    "mfa_spk1": [["mfa_commentary_spk1", "mfa_commentary_spk1_2", "mfa_commentary_spk1_3"],
                 ["mfa_commentary_spk1_4", "mfa_commentary_spk1_5"]],
    "mfa_spk2": [["mfa_commentary_spk2", "mfa_commentary_spk2_2", "mfa_commentary_spk2_3"],
                 ["mfa_commentary_spk2_4", "mfa_commentary_spk2_5"]],
    "sb_spk1": [["speechbrain_spk1_snt1", "speechbrain_spk1_snt3"], ["speechbrain_spk1_snt4", "speechbrain_spk1_snt5"]],
    "sb_spk2": [["speechbrain_spk2_snt2"], ["speechbrain_spk2_snt4"]],
    "cards": [["pocketsphinx_cards_001", "pocketsphinx_cards_002", "pocketsphinx_cards_003"],
              ["pocketsphinx_cards_004", "pocketsphinx_cards_005"]],
    "librivox": [["librivox_sense_sensibility-0870", "librivox_sense_sensibility-0880"],
                 ["librivox_sense_sensibility-0890", "librivox_sense_sensibility-0920",
                  "librivox_sense_sensibility-0930"]],
    "ls1272": [["@asr/ortx_librispeech-1272-141231-0002.flac"], ["leopard_en_librispeech_1272-128104-0000"]],
}
SINGLES = ["saa_cantonese8", "saa_dutch16", "saa_farsi5", "saa_french55", "saa_german11", "saa_german25",
           "saa_english61", "saa_english108", "saa_english466", "saa_english559", "librispeech_2412-153948-0000",
           "librispeech_61-70968-0000", "whisper_jfk", "deepspeech_LDC93S1", "commonvoice_en_22058264",
           "google_brooklyn_bridge", "customspeech_en_testing_audio"]
FLITE_MEETINGS = {  # name -> [(voice, text)]; the first two are the test fixtures
    "flite_m3": [("kal", "Morning. The printer on the second floor is broken again, and nobody has called the vendor."),
                 ("rms", "I will call them after lunch, and ask whether the warranty still covers the paper feed."),
                 ("kal", "Good. Also remind them that the scanner needs a new cable before the audit next month."),
                 ("rms", "Noted. I will put both requests in one ticket so that they send a single technician.")],
    "flite_m4": [("awb", "Let us start with the garden project. The new benches arrive on Tuesday morning."),
                 ("kal", "Then the painters should wait until Wednesday, or the fresh paint will get scratched."),
                 ("awb", "Fair point. I will move the painters and tell the neighbours about the noise."),
                 ("kal", "And please order more gravel for the paths, the last delivery was far too small.")],
}
ESPEAK_MEETING = [("en-us", 40, "We should review the parking rules before the new office opens in the autumn."),
                  ("en-gb+f3", 80, "The canteen menu changes next week, and the coffee machine gets repaired."),
                  ("en-us", 40, "Security wants every visitor badge returned at the front desk in the evening."),
                  ("en-gb+f3", 80, "I will put a sign at the door and remind everybody in the weekly newsletter.")]


def decode(path: Path) -> np.ndarray:
    import av

    with av.open(str(path)) as c:
        r = av.AudioResampler(format="flt", layout="mono", rate=SR)
        out = [g.to_ndarray().ravel() for f in c.decode(audio=0) for g in r.resample(f)]
        out += [g.to_ndarray().ravel() for g in r.resample(None)]
    return np.concatenate(out).astype(np.float32)


def write_wav(x: np.ndarray, path: Path) -> Path:
    import wave

    with wave.open(str(path), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(SR)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())
    return path


def tts(engine: str, voice: str, text: str, pitch: int | None = None) -> np.ndarray:
    with tempfile.TemporaryDirectory() as td:
        raw = Path(td) / "raw.wav"
        cmd = (["flite", "-voice", voice, "-t", text, "-o", str(raw)] if engine == "flite" else
               ["espeak-ng", "-v", voice, "-p", str(pitch or 50), "-w", str(raw), text])
        subprocess.run(cmd, check=True, capture_output=True)
        x = decode(raw)
    return x / max(1e-6, float(np.abs(x).max())) * 0.7


def meeting(turns: list[tuple[str, np.ndarray]]) -> tuple[np.ndarray, list[tuple[float, float, str]]]:
    gap = np.zeros(int(0.8 * SR), np.float32)
    pieces, ref, t = [np.zeros(SR // 2, np.float32)], [], 0.5
    for who, x in turns:
        pieces += [x, gap]
        ref.append((t, t + len(x) / SR, who))
        t += len(x) / SR + 0.8
    return np.concatenate(pieces), ref


def recordings(cache: Path, synthetic: bool) -> list[dict]:
    """[{"id", "samples", "ref": [(t0_s, t1_s, person)], "n"}] of every recording whose audio is here."""
    import evalset

    clips = {c.id: c for c in evalset.load_manifest(cache=cache)}
    out, missing = [], []

    def clip_audio(cid: str):
        if cid.startswith("@"):
            p = SHARED / "eval" / "media" / cid[1:]
            return decode(p) if p.is_file() else None
        c = clips.get(cid)
        return decode(c.audio) if c is not None and c.exists() else None

    for cid, n in {**AMI, **OTHER_MULTI}.items():
        x = clip_audio(cid)
        if x is None:
            missing.append(cid)
            continue
        ref = [(a, b, f"{cid}:{s}" if cid in OTHER_MULTI else s) for a, b, s in clips[cid].turns()]
        out.append({"id": cid, "samples": x, "ref": ref, "n": n})
    for person, recs in JOINED.items():
        for i, parts in enumerate(recs):
            xs = [clip_audio(c) for c in parts]
            if any(x is None for x in xs):
                missing.append(f"{person}#{i}")
                continue
            x, ref = meeting([(person, x) for x in xs])
            out.append({"id": f"{person}#{i}", "samples": x, "ref": [(a, b, person) for a, b, _ in ref], "n": 1})
    for cid in SINGLES:
        x = clip_audio(cid)
        if x is None:
            missing.append(cid)
            continue
        out.append({"id": cid, "samples": x, "ref": [(0.0, len(x) / SR, cid)], "n": 1})
    if synthetic:
        from fixture_facts import TWO_VOICE_TURNS, TWO_VOICES_PATH, VOICES_AGAIN_PATH, VOICES_AGAIN_TURNS

        for name, path, turns in (("two_voices", TWO_VOICES_PATH, TWO_VOICE_TURNS),
                                  ("voices_again", VOICES_AGAIN_PATH, VOICES_AGAIN_TURNS)):
            out.append({"id": name, "samples": decode(path), "n": 2,
                        "ref": [(a / 1000, b / 1000, f"flite_{v}") for a, b, v in turns]})
        try:
            for name, lines in FLITE_MEETINGS.items():
                x, ref = meeting([(f"flite_{v}", tts("flite", v, t)) for v, t in lines])
                out.append({"id": name, "samples": x, "ref": ref, "n": 2})
            x, ref = meeting([(f"espeak_{v}", tts("espeak-ng", v, t, p)) for v, p, t in ESPEAK_MEETING])
            out.append({"id": "espeak_m1", "samples": x, "ref": ref, "n": 2})
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"synthetic meetings skipped: {e}", file=sys.stderr)
    if missing:
        print(f"not here (python bench/fetch_eval.py): {', '.join(missing)}", file=sys.stderr)
    return out


def diarize_all(recs: list[dict]) -> tuple[list[dict], dict]:
    """Each recording through run_turns; its labels with voiceprint, clean speech and reference person."""
    from talkthrough_assets.stages import turns as diarize
    from talkthrough_assets.stages.turns import voiceprints as V

    spent = {"turns_s": 0.0, "voiceprints_s": 0.0, "multi": [0.0, 0.0], "single": [0.0, 0.0]}
    real_compute = V.compute
    last = [0.0]

    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return real_compute(*a, **k)
        finally:
            last[0] = time.perf_counter() - t
            spent["voiceprints_s"] += last[0]

    V.compute = timed
    labels = []
    try:
        with tempfile.TemporaryDirectory() as td:
            for r in recs:
                wav = write_wav(r["samples"], Path(td) / "a.wav")
                t = time.perf_counter()
                out = diarize.run_turns(wav, segments=[], words=[], num_speakers=r["n"], threshold=None,
                                        models_dir=str(MODELS))
                took = time.perf_counter() - t
                spent["turns_s"] += took
                kind = spent["multi" if r["n"] > 1 else "single"]
                kind[0] += took
                kind[1] += last[0]
                for vp in out.voiceprints:
                    mine = [tt for tt in out.turns if tt.speaker == vp.label]
                    best = {}
                    for a, b, who in r["ref"]:
                        ov = sum(max(0, min(b * 1000, tt.t1_ms) - max(a * 1000, tt.t0_ms)) for tt in mine)
                        best[who] = best.get(who, 0) + ov
                    who = max(best, key=best.get) if best and max(best.values()) > 0 else f"{r['id']}:{vp.label}"
                    labels.append({"recording": r["id"], "label": vp.label, "person": who,
                                   "speech_ms": vp.speech_ms, "embedding": list(vp.embedding)})
                print(f"  {r['id']}: {len(out.voiceprints)} voiceprint(s) in {time.perf_counter() - t:.1f} s",
                      file=sys.stderr)
    finally:
        V.compute = real_compute
    return labels, spent


def trials(labels: list[dict]) -> list[dict]:
    """Per round and test label: the best enrolled person (production recognise) and its score."""
    from talkthrough_assets.stages.turns import voices

    by_person: dict[str, list[str]] = {}
    for lab in labels:
        recs = by_person.setdefault(lab["person"], [])
        if lab["recording"] not in recs:
            recs.append(lab["recording"])
    multi = {p: recs for p, recs in by_person.items() if len(recs) > 1}
    out = []
    for rnd in (0, 1):
        enrol = {}
        for p, recs in multi.items():
            rec = recs[rnd % len(recs)]
            cands = [lab for lab in labels if lab["person"] == p and lab["recording"] == rec]
            enrol[p] = max(cands, key=lambda x: x["speech_ms"])  # the label a person would name there
        people = voices.profiles([_enrolment({**e, "person": p}) for p, e in enrol.items()])
        enrolled_keys = {(e["recording"], e["label"]) for e in enrol.values()}
        for rec in sorted({lab["recording"] for lab in labels}):
            prints = [lab for lab in labels if lab["recording"] == rec and (rec, lab["label"]) not in enrolled_keys]
            if not prints:
                continue
            got = voices.recognise([_voiceprint(lab) for lab in prints], people, suggest=-1.0, rid=rec)
            for lab in prints:
                m = got.get(lab["label"])
                truth = lab["person"] if lab["person"] in enrol else None
                out.append({"round": rnd, "recording": rec, "label": lab["label"], "truth": truth,
                            "person": lab["person"], "guess": m.person if m else None,
                            "score": m.score if m else -1.0,
                            "speech_s": min(lab["speech_ms"], enrol[truth]["speech_ms"]) / 1000 if truth else
                            lab["speech_ms"] / 1000})
    return out


def _enrolment(lab: dict):
    """A label as a ``people`` row of its recording: (recording, Enrolment)."""
    from talkthrough_assets.model.turns import Enrolment

    return lab["recording"], Enrolment(person=lab["person"], label=lab["label"], named_at=None,
                                       speech_ms=lab.get("speech_ms"), embedding=tuple(lab["embedding"]))


def _voiceprint(lab: dict):
    from talkthrough_assets.model.turns import Voiceprint

    return Voiceprint(lab["label"], tuple(lab["embedding"]), 0, int(lab.get("speech_ms") or 0), None)


def at(ts: list[dict], thr: float) -> dict:
    def bucket(lo, hi):
        xs = [t for t in ts if t["truth"] and lo <= t["speech_s"] < hi]
        ok = sum(1 for t in xs if t["guess"] == t["truth"] and t["score"] >= thr)
        return {"n": len(xs), "top1": ok / len(xs) if xs else None}

    false = [t for t in ts if t["guess"] is not None and t["score"] >= thr and t["guess"] != t["truth"]]
    return {"threshold": thr, "ge10s": bucket(10, 1e9), "3to10s": bucket(3, 10), "lt3s": bucket(0, 3),
            "false": len(false), "labels": len(ts), "false_rate": len(false) / len(ts) if ts else 0.0,
            "false_never_enrolled": sum(1 for t in false if t["truth"] is None)}


def choose(ts: list[dict]) -> tuple[float, float]:
    grid = [round(x, 2) for x in np.arange(0.30, 0.99, 0.01)]
    suggest = next(t for t in grid if at(ts, t)["false_rate"] <= 0.01)
    zero = next(t for t in grid if at(ts, t)["false"] == 0)
    return suggest, float(np.ceil(zero * 20 - 1e-9) / 20)


def match_speed(labels: list[dict], n_people: int = 1000, reps: int = 200) -> float:
    """ms to recognise one label against ``n_people`` enrolled people (their voices: real voiceprints
    perturbed, so the matrix is realistic in shape; the score does not matter here)."""
    from talkthrough_assets.stages.turns import voices

    rng = np.random.default_rng(0)
    base = np.asarray([lab["embedding"] for lab in labels], dtype=np.float64)
    rows = []
    for i in range(n_people):
        v = base[i % len(base)] + rng.normal(0, 0.05, base.shape[1])
        rows.append({"recording": f"{i:016x}", "label": "S1", "person": f"person {i}", "speech_ms": 10000,
                     "embedding": (v / np.linalg.norm(v)).tolist()})
    people = voices.profiles([_enrolment(r) for r in rows])
    one = [_voiceprint({"label": "S1", "embedding": labels[0]["embedding"]})]
    t = time.perf_counter()
    for _ in range(reps):
        voices.recognise(one, people)
    return (time.perf_counter() - t) / reps * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", help="keep the voiceprints here (JSON) and reuse them on the next run")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--no-synthetic", action="store_true", help="leave out the flite/espeak-ng meetings")
    ap.add_argument("--eval-cache", default=None, help="evaluation audio folder (default: fetch_eval.py's)")
    a = ap.parse_args()
    import evalset

    spent = None
    if a.cache and Path(a.cache).is_file():
        labels = json.loads(Path(a.cache).read_text())
    else:
        recs = recordings(Path(a.eval_cache) if a.eval_cache else evalset.default_cache(), not a.no_synthetic)
        print(f"{len(recs)} recordings", file=sys.stderr)
        labels, spent = diarize_all(recs)
        if a.cache:
            Path(a.cache).write_text(json.dumps(labels))
    ts = trials(labels)
    people = sorted({t["truth"] for t in ts if t["truth"]})
    never = sorted({t["person"] for t in ts if not t["truth"]})
    print(f"set: {len({lab['recording'] for lab in labels})} recordings, {len(labels)} labels; "
          f"{len(people)} people enrolled (one recording each, 2 rounds), {len(never)} never enrolled; "
          f"{len(ts)} recognitions")
    closed = [t for t in ts if t["truth"]]
    print(f"closed-set top-1 (best match is the right person, no threshold): "
          f"{sum(t['guess'] == t['truth'] for t in closed)}/{len(closed)}")
    s0, a0 = choose([t for t in ts if t["round"] == 0])
    held = at([t for t in ts if t["round"] == 1], s0)
    print(f"held out: thresholds chosen on round 0 alone (suggest {s0:.2f}, apply {a0:.2f}), on round 1: top-1 "
          f">=10 s {held['ge10s']['top1']}, 3-10 s {held['3to10s']['top1']}; false {held['false']}/{held['labels']}")
    suggest, apply = choose(ts)
    print(f"chosen (both rounds): suggest >= {suggest:.2f} (false suggestions <= 1 %), apply >= {apply:.2f} "
          "(none, rounded up)")
    rows = [at(ts, x) for x in sorted({0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, suggest, apply})]
    print(f"{'thr':>5} {'top1 >=10s':>12} {'top1 3-10s':>12} {'top1 <3s':>10} {'false':>12} {'of never-enrolled':>18}")
    for r in rows:
        def f(b):
            return f"{b['top1'] * 100:5.1f}% n={b['n']:<3d}" if b["top1"] is not None else "     -      "
        print(f"{r['threshold']:5.2f} {f(r['ge10s']):>12} {f(r['3to10s']):>12} {f(r['lt3s']):>10} "
              f"{r['false']:3d} ({r['false_rate'] * 100:4.1f}%) {r['false_never_enrolled']:>10d}")
    wrong = sorted((t for t in ts if t["guess"] and t["guess"] != t["truth"] and t["score"] >= suggest),
                   key=lambda t: -t["score"])
    for t in wrong[:8]:
        print(f"  false at {t['score']:.2f}: {t['recording']} {t['label']} ({t['person']}) -> {t['guess']}")
    ms = match_speed(labels)
    print(f"recognition: {ms:.2f} ms per label against 1000 enrolled people (target <= 50 ms)")
    if spent:
        print(f"voiceprints: {spent['voiceprints_s']:.2f} s of the turns stage's {spent['turns_s']:.1f} s "
              f"({spent['voiceprints_s'] / spent['turns_s'] * 100:.2f} %; target <= 5 % of a diarized run, which "
              "also holds Whisper: this is the stricter ratio)")
        for kind in ("multi", "single"):
            t, v = spent[kind]
            if t:
                print(f"  {kind}-speaker recordings: {v:.2f} s of {t:.1f} s ({v / t * 100:.2f} %)")
    if a.json:
        Path(a.json).write_text(json.dumps({"suggest": suggest, "apply": apply, "rows": rows, "match_ms": ms,
                                            "spent": spent, "people": people, "never_enrolled": never}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
