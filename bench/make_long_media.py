#!/usr/bin/env python3
"""Generate the long media the benchmarks run on (cached; never committed).

    python bench/make_long_media.py [--out /tmp/talkthrough-bench-media] [--force]
    python bench/make_long_media.py --seeds 1,2,3,4 [--minutes 10]     # generations of the screencast

Writes into the cache folder (default ``/tmp/talkthrough-bench-media``, or
``$TALKTHROUGH_BENCH_MEDIA``), skipping files that already exist:

  screencast_10min_1080p30.mp4  1920x1080 H.264 (libx264 veryfast, crf 30, 2 s GOP) 30 fps, 600 s,
                                24 app-window scenes of 20-30 s, each with its own title/subtitle/chart,
                                a "terminal" line typed out over the first 2 s that then stays,
                                and a blinking cursor (so every frame differs a little), espeak-ng narration (AAC mono 16 kHz) over ~70 % of the time
  meeting_30min.m4a             AAC mono 16 kHz, 1800 s, 16 meeting lines in 3 espeak-ng voices, looped
  two_voices_3min.m4a           AAC mono 16 kHz, ~180 s, two flite voices (rms/slt) taking turns, looped
  media.json                    facts: durations, scene cut times, generation seconds
  screencast_<M>min_seed<S>_1080p30.mp4 (+ .json)   with --seeds (or screencast_variant()): one generation
                                of the screencast, the same slides over narration_variant(S)'s narration
                                (scene order and lengths, pauses, rate, voice); its facts and script beside it

Speed: each scene is encoded ONCE as two 2-second closed GOPs (60 frames each: the line being typed,
then the typed line with the cursor blinking); the second GOP's packets are remuxed (stream copy,
shifted timestamps) 9-14 times to fill the scene. The
result is a valid, continuously decodable H.264 stream whose decode cost is that of a real screen
recording with small changes every frame; generation takes ~1-2 min on 2 cores instead of encoding
18 000 1080p frames. TTS clips are synthesized once and reused.

Needs what fixtures/make_fixtures.py needs (espeak-ng, flite, sox; PyAV, Pillow, numpy) and reuses
its renderer and TTS helpers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures"))

import make_fixtures as mf  # noqa: E402  (render_scene, tts, place, write_m4a, write_audio_stream)

DEFAULT_OUT = Path(os.environ.get("TALKTHROUGH_BENCH_MEDIA") or "/tmp/talkthrough-bench-media")
SCREENCAST = "screencast_10min_1080p30.mp4"
MEETING = "meeting_30min.m4a"
TWO_VOICES = "two_voices_3min.m4a"

SR = mf.SR
FPS = 30
GOP_S = 2                       # one closed GOP per loop chunk; scene durations are multiples of it
SIZE = (1920, 1080)
SCENE_DURATIONS = [24, 20, 28, 22, 30, 26] * 4          # 24 scenes, 600 s
ACCENTS = [(37, 99, 235), (220, 38, 38), (22, 163, 74), (124, 58, 237), (234, 88, 12), (14, 116, 144),
           (190, 24, 93), (202, 138, 4)]
TOPICS = [  # (title, subtitle, terminal line)
    ("DEPLOY PIPELINE", "build 42 passed - staging ready", "$ make deploy ENV=staging ... done"),
    ("ERROR 503 GATEWAY", "checkout service not responding", "$ curl -I https://shop/checkout  503"),
    ("ROLLBACK COMPLETE", "version 41 restored", "$ kubectl rollout undo deploy/checkout"),
    ("METRICS DASHBOARD", "latency back to normal", "$ promql p99(latency) = 182 ms"),
    ("DATABASE MIGRATION", "schema 118 applied to replicas", "$ alembic upgrade head  ok"),
    ("INVOICE REVIEW", "hardware costs above plan", "$ ledger report --month 04 --vendor all"),
    ("CUSTOMER SURVEY", "412 answers - dark theme wins", "$ survey export --format csv"),
    ("SERVER UPGRADE", "kernel 6.8 on all workers", "$ ansible-playbook upgrade.yml --limit web"),
    ("BACKUP STATUS", "nightly snapshots verified", "$ restic check --read-data-subset 5%"),
    ("RELEASE NOTES", "version 42 highlights", "$ git log v41..v42 --oneline | wc -l"),
    ("INCIDENT TIMELINE", "09:12 alert - 09:41 resolved", "$ pager ack INC-2231"),
    ("QUEUE WORKERS", "backlog drained in 6 minutes", "$ celery inspect active --timeout 5"),
    ("CACHE HIT RATE", "redis at 97 percent", "$ redis-cli info stats | grep hits"),
    ("CLUSTER REGIONS", "eu-west and us-east healthy", "$ kubectl get nodes -L region"),
    ("REPLICA LAG", "under 200 ms everywhere", "$ psql -c 'select now()-pg_last_xact_replay'"),
    ("SCHEMA CHANGES", "two new indexes on orders", "$ sqitch status --target prod"),
    ("QUERY PLANNER", "index scan instead of seq scan", "$ explain analyze select * from orders"),
    ("PAYMENT REFUNDS", "38 refunds processed today", "$ stripe refunds list --limit 50"),
    ("TOKEN SESSIONS", "idle sessions expire after 30 min", "$ vault token lookup -format=json"),
    ("LATENCY BUDGET", "p99 target 250 ms", "$ slo report checkout --window 28d"),
    ("FORECAST THIRD QUARTER", "revenue up 8 percent", "$ python forecast.py --quarter Q3"),
    ("THEME SETTINGS", "dark mode default for new users", "$ flags set dark_theme_default on"),
    ("HARDWARE ORDERS", "12 laptops arrive Friday", "$ procure status PO-7781"),
    ("ALERT ROUTING", "pages go to the on-call rotation", "$ amtool config routes test sev=page"),
]
FILLER = [  # reused narration between scene intros
    "Let me scroll down a little so you can see the details.",
    "The numbers on the right are from this morning.",
    "Nothing else changed here since the last review.",
    "Keep an eye on the chart at the bottom of the window.",
    "This is the part that matters for the next release.",
    "I will come back to this in a minute.",
    "The team agreed on this during the planning meeting.",
    "Notice how the values settle after a few seconds.",
]
MEETING_LINES = [
    ("en-us", "Good morning everyone, let's get started with the weekly review."),
    ("en-gb-x-rp", "Thanks. The database migration is scheduled for Thursday night."),
    ("en-us+f3", "Marketing still needs the budget numbers before the migration starts."),
    ("en-us", "Can someone send the updated forecast by Wednesday?"),
    ("en-gb-x-rp", "I can do that, and I will include the hardware invoices as well."),
    ("en-us+f3", "The customer survey closed yesterday with four hundred answers."),
    ("en-us", "Most people asked for a darker color theme and faster search."),
    ("en-gb-x-rp", "Search latency is already better since the cache upgrade."),
    ("en-us+f3", "What about the incident on Monday, is the report finished?"),
    ("en-us", "Yes, the gateway timeout came from the checkout service."),
    ("en-gb-x-rp", "We rolled back to version forty one within thirty minutes."),
    ("en-us+f3", "Let's add an alert for the replica lag so we see it earlier."),
    ("en-us", "Agreed. Next item is the release plan for version forty two."),
    ("en-gb-x-rp", "The release notes are drafted, I will share them this afternoon."),
    ("en-us+f3", "Then we are done for today, let's meet again on Thursday."),
    ("en-us", "Thanks everyone, see you on Thursday."),
]
TWO_VOICE_LINES = [t for t in mf.TWO_VOICE_TURNS] + [
    ("rms", "The backup restore test also passed, so the migration can go ahead on Thursday night."),
    ("slt", "Great. Please write that down in the release notes so support knows what to expect."),
]


# ------------------------------------------------------------------------------------ audio tracks

def _tts_cache(items: list[tuple[str, str, str, int]]) -> dict:
    """{(engine, voice, text): float32 clip} for every distinct item (synthesized once)."""
    out = {}
    for engine, voice, text, speed in items:
        key = (engine, voice, text)
        if key not in out:
            out[key] = mf.tts(text, engine, voice, speed)
    return out


def screencast_narration(scenes: list[dict], said: list[dict] | None = None) -> np.ndarray:
    """The screencast's narration track; ``said`` (when given) gets what is said where, as
    :func:`narration_variant` returns it."""
    said = [] if said is None else said
    total = sum(s["duration_s"] for s in scenes)
    intros = [f"Scene {i + 1}. Now we look at the {s['title'].lower()}. {s['subtitle']}."
              for i, s in enumerate(scenes)]
    clips = _tts_cache([("espeak-ng", "en-us", t, 165) for t in intros + FILLER])
    track = np.zeros(int(total * SR) + SR, np.float32)
    k = 0
    for i, s in enumerate(scenes):
        t, end = s["start_s"] + 0.5, s["start_s"] + s["duration_s"] - 1.0
        c = clips[("espeak-ng", "en-us", intros[i])]
        a, b = mf.place(track, c[: int((end - t) * SR)], t)
        said.append({"t0_s": a / 1000, "t1_s": b / 1000, "text": intros[i], "scene": i + 1, "intro": True})
        t += len(c) / SR + 0.6
        while True:
            c = clips[("espeak-ng", "en-us", FILLER[k % len(FILLER)])]
            if t + len(c) / SR > end:
                break
            a, b = mf.place(track, c, t)
            said.append({"t0_s": a / 1000, "t1_s": b / 1000, "text": FILLER[k % len(FILLER)], "scene": i + 1,
                         "intro": False})
            t += len(c) / SR + 0.6
            k += 1
    return np.clip(track[: int(total * SR)], -1, 1)


VARIANT_VOICES = ["en-us", "en-gb-x-rp", "en-us+f3", "en-gb-scotland", "en-029", "en-us+m3", "en-gb-x-gbcwmd"]


def narration_variant(seed: int, voice: str | None = None, minutes: float = 10.0,
                      engine: str = "espeak-ng", scenes_out: list | None = None) -> tuple[np.ndarray, list[dict]]:
    """A screencast's narration like :func:`screencast_narration`, varied by ``seed``: the scenes' order,
    lengths (16-32 s), the pauses between sentences (0.3-1.2 s), the speaking rate (140-185 words a minute)
    and, unless given, the voice (:data:`VARIANT_VOICES`). Returns the 16-kHz track and what is said where:
    [{"t0_s", "t1_s", "text", "scene", "intro"}] (each scene's introduction and the filler after it).
    ``scenes_out`` (when given) gets the narration's scenes: [{"start_s", "duration_s", "title", "subtitle"}]."""
    rng = np.random.default_rng(seed)
    voice = voice or VARIANT_VOICES[seed % len(VARIANT_VOICES)]
    speed = int(rng.integers(140, 186))
    order = rng.permutation(len(TOPICS))
    total = minutes * 60
    scenes, t = [], 0.0
    while t < total - 16:
        d = float(min(rng.integers(16, 33), total - t))
        title, sub, _ = TOPICS[order[len(scenes) % len(TOPICS)]]
        scenes.append({"start_s": t, "duration_s": d, "title": title, "subtitle": sub})
        t += d
    intros = [f"Scene {i + 1}. Now we look at the {s['title'].lower()}. {s['subtitle']}." for i, s in enumerate(scenes)]
    clips = _tts_cache([(engine, voice, x, speed) for x in intros + FILLER])
    track = np.zeros(int(total * SR) + SR, np.float32)
    said, k = [], int(rng.integers(0, len(FILLER)))
    for i, s in enumerate(scenes):
        t, end = s["start_s"] + float(rng.uniform(0.3, 1.0)), s["start_s"] + s["duration_s"] - 1.0
        c = clips[(engine, voice, intros[i])][: int((end - t) * SR)]
        a, b = mf.place(track, c, t)
        said.append({"t0_s": a / 1000, "t1_s": b / 1000, "text": intros[i], "scene": i + 1, "intro": True})
        t += len(c) / SR + float(rng.uniform(0.3, 1.2))
        while True:
            c = clips[(engine, voice, FILLER[k % len(FILLER)])]
            if t + len(c) / SR > end:
                break
            a, b = mf.place(track, c, t)
            said.append({"t0_s": a / 1000, "t1_s": b / 1000, "text": FILLER[k % len(FILLER)], "scene": i + 1,
                         "intro": False})
            t += len(c) / SR + float(rng.uniform(0.3, 1.2))
            k += 1
    if scenes_out is not None:
        scenes_out.extend(scenes)
    return np.clip(track[: int(total * SR)], -1, 1), said


def looped_dialogue(lines: list[tuple[str, str]], engine: str, total_s: float, gap_s: float,
                    speed: int = 150) -> np.ndarray:
    clips = _tts_cache([(engine, v, t, speed) for v, t in lines])
    track = np.zeros(int(total_s * SR), np.float32)
    t, k = 0.5, 0
    while True:
        v, text = lines[k % len(lines)]
        c = clips[(engine, v, text)]
        if t + len(c) / SR > total_s - 0.3:
            break
        mf.place(track, c, t)
        t += len(c) / SR + gap_s + (0.4 if k % 3 == 2 else 0.0)
        k += 1
    return track


# ------------------------------------------------------------------------------------ screencast

def _scenes() -> list[dict]:
    out, t = [], 0
    for i, d in enumerate(SCENE_DURATIONS):
        title, sub, term = TOPICS[i % len(TOPICS)]
        out.append({"index": i, "start_s": t, "duration_s": d, "title": title, "subtitle": sub,
                    "terminal": term, "accent": ACCENTS[i % len(ACCENTS)]})
        t += d
    return out


def _gop_pictures(scene: dict, typed: bool = False) -> list[np.ndarray]:
    """The 60 RGB pictures of one 2-s loop: the scene window, a terminal line typed out over the
    first ~1.5 s (``typed``: already complete, as it stays on screen afterwards), and the subtitle
    cursor blinking at 1 Hz (fixtures' renderer + numpy patches)."""
    from PIL import Image, ImageDraw, ImageFont

    W, H = SIZE
    pics = {c: mf.render_scene(SIZE, scene["title"], scene["subtitle"], scene["accent"], c) for c in (False, True)}
    font = ImageFont.load_default(size=34)
    x0, y = 260, int(H * 0.27)
    full = {}
    for c, base in pics.items():
        im = Image.fromarray(base.copy())
        d = ImageDraw.Draw(im)
        d.text((x0, y), scene["terminal"], font=font, fill=(30, 41, 59), anchor="lm")
        full[c] = np.asarray(im)
    d = ImageDraw.Draw(Image.new("RGB", (8, 8)))
    text = scene["terminal"]
    ends = [x0 + int(d.textlength(text[:n], font=font)) for n in range(len(text) + 1)]
    y0, y1 = y - 26, y + 26
    out = []
    n = GOP_S * FPS
    for f in range(n):
        cursor = (f // (FPS // 2)) % 2 == 0
        chars = len(text) if typed else min(len(text), int(len(text) * f / (n * 0.75)))
        img = pics[cursor].copy()
        img[y0:y1, x0:ends[chars]] = full[cursor][y0:y1, x0:ends[chars]]
        out.append(img)
    return out


def write_screencast(path: Path, scenes: list[dict], audio: np.ndarray,
                     title: str = "Talkthrough benchmark screencast (10 min)") -> None:
    import av

    n = GOP_S * FPS
    chunks_path = path.with_suffix(".chunks.mp4")
    # 1. one closed 2-s GOP per scene, encoded once, consecutively in one stream (same SPS/PPS)
    with av.open(str(chunks_path), "w", format="mp4") as out:
        vs = out.add_stream("libx264", rate=FPS)
        vs.width, vs.height, vs.pix_fmt = SIZE[0], SIZE[1], "yuv420p"
        vs.options = {"crf": "30", "preset": "veryfast", "g": str(n), "keyint_min": str(n),
                      "sc_threshold": "0", "x264-params": "open-gop=0"}
        f = 0
        for s in scenes:  # two GOPs per scene: the line being typed, then the typed line
            for pic in _gop_pictures(s) + _gop_pictures(s, typed=True):
                frame = av.VideoFrame.from_ndarray(pic, format="rgb24")
                frame.pts = f
                frame.time_base = Fraction(1, FPS)
                out.mux(vs.encode(frame))
                f += 1
        out.mux(vs.encode(None))
    # 2. remux: each scene's GOP repeated duration/2 times with shifted timestamps; audio interleaved
    with av.open(str(chunks_path)) as src:
        ivs = src.streams.video[0]
        tb = ivs.time_base
        ticks = int(round(Fraction(1, FPS) / tb))  # stream ticks per frame
        groups: dict[int, list] = {}
        for pkt in src.demux(ivs):
            if pkt.size == 0 or pkt.pts is None:
                continue
            g = pkt.pts // (ticks * n)
            groups.setdefault(g, []).append(pkt)
        with av.open(str(path), "w", format="mp4", options={"movflags": "+faststart"}) as out:
            out.metadata["creation_time"] = "2026-03-14T09:26:53.000000Z"
            out.metadata["title"] = title
            ovs = out.add_stream_from_template(ivs)
            oas = out.add_stream("aac", rate=SR, layout="mono")
            oas.bit_rate = 32000
            apk = _encode_audio(oas, audio)
            ai = 0
            frame_pos = 0
            for s in scenes:
                for k in range(s["duration_s"] // GOP_S):
                    g = 2 * s["index"] + (1 if k else 0)  # typing once, then the typed line stays
                    shift = frame_pos * ticks - g * n * ticks
                    for p in groups[g]:
                        t_v = float((p.pts + shift) * tb)
                        while ai < len(apk) and float(apk[ai].pts * apk[ai].time_base) <= t_v:
                            out.mux(apk[ai])
                            ai += 1
                        q = av.Packet(bytes(p))
                        q.pts, q.dts = p.pts + shift, p.dts + shift
                        q.duration = p.duration
                        q.is_keyframe = p.is_keyframe
                        q.time_base = tb
                        q.stream = ovs
                        out.mux(q)
                    frame_pos += n
            for p in apk[ai:]:
                out.mux(p)
    chunks_path.unlink()


def _encode_audio(stream, samples: np.ndarray) -> list:
    import av

    k, out = 1024, []
    samples = np.concatenate([samples.astype(np.float32), np.zeros((-len(samples)) % k, np.float32)])
    for i in range(0, len(samples), k):
        fr = av.AudioFrame.from_ndarray(samples[None, i:i + k].copy(), format="fltp", layout="mono")
        fr.sample_rate = SR
        fr.pts = i
        fr.time_base = Fraction(1, SR)
        out.extend(stream.encode(fr))
    out.extend(stream.encode(None))
    return out


# ------------------------------------------------------------------------------------ screencast generations

def variant_scenes(narrated: list[dict], total_s: int) -> list[dict]:
    """The video scenes under a :func:`narration_variant`'s scenes: each cut where its narration scene starts,
    rounded down to a whole GOP (the remux repeats whole 2-s GOPs; the narration starts >= 0.3 s into its scene
    and ends >= 1 s before the next, so every sentence stays on its own slide), the last one running to the end."""
    terminals = {title: term for title, _, term in TOPICS}
    starts = [GOP_S * int(s["start_s"] // GOP_S) for s in narrated]
    return [{"index": i, "start_s": a, "duration_s": b - a, "title": s["title"], "subtitle": s["subtitle"],
             "terminal": terminals[s["title"]], "accent": ACCENTS[i % len(ACCENTS)]}
            for i, (s, a, b) in enumerate(zip(narrated, starts, starts[1:] + [total_s]))]


def variant_name(seed: int, minutes: float) -> str:
    return f"screencast_{minutes:g}min_seed{seed}_1080p30.mp4"


def screencast_variant(seed: int, minutes: float = 10.0, out: Path | None = None, force: bool = False,
                       quiet: bool = False) -> tuple[Path, dict]:
    """One generation of the screencast: the same slides, typing and remuxed GOPs as the default one, over the
    narration of :func:`narration_variant` (``seed``: scene order and lengths, pauses, rate and voice), cached
    as :func:`variant_name` with its facts beside it (``.json``: voice, scene cuts, titles, what is said where).
    Seed 0 at 10 minutes is the default screencast itself (:data:`SCREENCAST`, voice en-us). Returns (path,
    facts)."""
    if seed == 0 and minutes == 10:
        path = ensure_media(out, quiet=quiet)["screencast"]
        said: list[dict] = []
        scenes = _scenes()
        screencast_narration(scenes, said)
        return path, {"seed": 0, "minutes": 10, "voice": "en-us", "scene_cuts_s": [s["start_s"] for s in scenes],
                      "titles": [s["title"] for s in scenes], "said": said}
    total_s = int(round(minutes * 60))
    if total_s % GOP_S or total_s < 32:
        raise ValueError(f"{minutes:g} min: a screencast generation lasts a whole number of {GOP_S}-s GOPs, >= 32 s")
    path = Path(out or DEFAULT_OUT) / variant_name(seed, minutes)
    facts_path = path.with_suffix(".json")
    if path.exists() and facts_path.exists() and not force:
        return path, json.loads(facts_path.read_text())
    path.parent.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    voice = VARIANT_VOICES[seed % len(VARIANT_VOICES)]
    narrated: list[dict] = []
    audio, said = narration_variant(seed, voice, total_s / 60, scenes_out=narrated)
    scenes = variant_scenes(narrated, total_s)
    tmp = path.with_suffix(".part.mp4")
    write_screencast(tmp, scenes, audio, f"Talkthrough benchmark screencast ({minutes:g} min, seed {seed}, {voice})")
    tmp.replace(path)
    facts = {"seed": seed, "minutes": minutes, "voice": voice, "scene_cuts_s": [s["start_s"] for s in scenes],
             "titles": [s["title"] for s in scenes], "said": said, "generate_s": round(time.perf_counter() - t, 1)}
    facts_path.write_text(json.dumps(facts, indent=1))
    if not quiet:
        print(f"{path}: seed {seed}, {voice}, {len(scenes)} scenes, {facts['generate_s']}s", flush=True)
    return path, facts


# ------------------------------------------------------------------------------------ main

def media_paths(out: Path | None = None) -> dict[str, Path]:
    out = Path(out or DEFAULT_OUT)
    return {"screencast": out / SCREENCAST, "meeting": out / MEETING, "two_voices": out / TWO_VOICES}


def ensure_media(out: Path | None = None, force: bool = False, quiet: bool = False) -> dict[str, Path]:
    """Generate whatever is missing; return the paths."""
    paths = media_paths(out)
    out = paths["screencast"].parent
    out.mkdir(parents=True, exist_ok=True)
    facts_path = out / "media.json"
    facts = json.loads(facts_path.read_text()) if facts_path.exists() else {}
    log = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    if force or not paths["screencast"].exists():
        t = time.perf_counter()
        scenes = _scenes()
        audio = screencast_narration(scenes)
        log(f"screencast narration: {time.perf_counter() - t:.1f}s")
        tmp = paths["screencast"].with_suffix(".part.mp4")
        write_screencast(tmp, scenes, audio)
        tmp.replace(paths["screencast"])
        facts["screencast"] = {"duration_s": sum(SCENE_DURATIONS), "scene_cuts_s": [s["start_s"] for s in scenes],
                               "titles": [s["title"] for s in scenes], "generate_s": round(time.perf_counter() - t, 1)}
        log(f"{paths['screencast']}: {time.perf_counter() - t:.1f}s")
    if force or not paths["meeting"].exists():
        t = time.perf_counter()
        track = looped_dialogue(MEETING_LINES, "espeak-ng", 1800.0, 0.7)
        tmp = paths["meeting"].with_suffix(".part.m4a")
        mf.write_m4a(tmp, track, "2026-04-02T15:00:00.000000Z", "Talkthrough benchmark meeting (30 min)")
        tmp.replace(paths["meeting"])
        facts["meeting"] = {"duration_s": 1800.0, "generate_s": round(time.perf_counter() - t, 1)}
        log(f"{paths['meeting']}: {time.perf_counter() - t:.1f}s")
    if force or not paths["two_voices"].exists():
        t = time.perf_counter()
        track = looped_dialogue(TWO_VOICE_LINES, "flite", 180.0, 0.8)
        tmp = paths["two_voices"].with_suffix(".part.m4a")
        mf.write_m4a(tmp, track, "2026-04-02T16:30:00.000000Z", "Talkthrough benchmark two voices (3 min)")
        tmp.replace(paths["two_voices"])
        facts["two_voices"] = {"duration_s": 180.0, "generate_s": round(time.perf_counter() - t, 1)}
        log(f"{paths['two_voices']}: {time.perf_counter() - t:.1f}s")
    facts_path.write_text(json.dumps(facts, indent=2))
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"cache folder (default {DEFAULT_OUT})")
    ap.add_argument("--force", action="store_true", help="regenerate even if the files exist")
    ap.add_argument("--seeds", help="instead: these generations of the screencast (comma-separated seeds; "
                                    "0 at 10 min is the default screencast)")
    ap.add_argument("--minutes", type=float, default=10.0, help="with --seeds: their length (default 10)")
    a = ap.parse_args(argv)
    t = time.perf_counter()
    if a.seeds:
        for seed in (int(x) for x in a.seeds.split(",")):
            p, facts = screencast_variant(seed, a.minutes, a.out, a.force)
            print(f"seed {seed:<3} {facts['voice']:<15} {p}  {p.stat().st_size / 1e6:8.1f} MB")
        print(f"total {time.perf_counter() - t:.1f}s")
        return 0
    paths = ensure_media(a.out, a.force)
    for name, p in paths.items():
        print(f"{name:<11} {p}  {p.stat().st_size / 1e6:8.1f} MB")
    print(f"total {time.perf_counter() - t:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
