"""segments in chunks: the 16 kHz audio is cut at silences into chunks of a few minutes, and each chunk's
Whisper result is kept under a key derived from its samples, the model and the settings that change the
transcript (what the stage's config hash covers) and the code version. A run decodes only the chunks whose
key has no stored result, then assembles the stage's tables as the whole-recording decode would.

* Whisper hears each chunk with the text said before it as context, as in a whole-recording decode (the
  last 223 tokens of the previous chunk's result, its "tail", are the chunk's prompt: without it the 30-min
  bench meeting lost 4.9 points of WER at 3-min chunks). So a chunk's key chains the previous chunk's key:
  key_k = sha256(settings, key_k-1, samples_k); every key is known from the audio alone, and a result is
  reused wherever the same audio comes after the same audio (a re-run after a crash, a longer export of the
  same meeting). Times are from the chunk's first sample; the VAD gate and the language check hear the
  chunk alone.
* Cuts are placed in the longest silence near every ``chunk_s`` seconds (Silero VAD speech probability under
  :data:`SILENCE_P`, searched +-:data:`SEARCH_SHARE` of ``chunk_s`` around the target), at a multiple of the
  VAD's 512-sample window, so no word is split or heard twice. The plan depends only on the audio before
  each cut, and a cut is searched only where at least :data:`TAIL_GUARD` samples follow the search window:
  a recording that starts with another's samples (a longer export of the same take) gets the same chunks
  except the shorter one's last, even when the last samples of the shorter file differ (a resampler's flush
  changes the last few; bench/bench_chunks.py --parts prefix).
* A stored result carries the sha256 of its payload: one that does not match is recomputed, never used.
* A chunk whose decoding raises is recorded (range and reason) and the others go on; its key stays
  without a result, so the next run decodes it again. The chunks after it are decoded without its context
  and not stored (their keys promise that context): the next run decodes them again too.

No store or Dagster here: the caller passes ``load(key) -> bytes|None`` and ``save(key, bytes)``.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import zlib
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from talkthrough_assets.core import stop
from talkthrough_assets.core.errors import TalkthroughError
from talkthrough_assets.model.transcript import Chunk, Decoded, Transcript
from talkthrough_assets.stages.segments import language
from talkthrough_assets.stages.segments import payload
from talkthrough_assets.stages.segments import transcribe as T
from talkthrough_assets.stages.segments import engine as segments_engine
from talkthrough_assets.stages.segments import rules as segments_rules
from talkthrough_assets.stages.segments import word_timing
from talkthrough_assets.stages.segments.engine import Engine
from talkthrough_assets.stages.segments.options import CHUNK_S, Options
from talkthrough_assets.stages.segments.rules import speech_probs
from talkthrough_assets.stages.runner import hms

CHUNK_FORMAT = "4"  # the stored result's layout and the planning rule: part of every key
SR = 16000
WIN = segments_rules.VAD_WINDOW  # Silero VAD window (samples): cuts fall on multiples of it
FIRST_CHUNK_S = 60.0  # the first chunk's target (at most CHUNK_S): the first partial transcript is readable once it
# is decoded (stages/partial.py); at 180 s that took 16 % of the 30-min meeting's run (bench/bench_partial.py)
SEARCH_SHARE = 0.1  # a cut is searched within +-10 % of the target length
SILENCE_P = 0.1  # speech probability under which a window is silence (the VAD gate's threshold)
TAIL_GUARD = SR  # 1 s: a file's last samples are not heard when a cut is placed (they may differ in a longer take)
SMOOTH_WINDOWS = 16  # ~0.5 s: without a silent window, the cut goes where the smoothed probability is lowest
MAGIC = b"TTCHUNK1\n"
LOOP_RUN = 4  # this many segments in a row with the same text: a loop (see _decode_chunk)
PROMPT_TOKENS = segments_engine.PROMPT_TOKENS


# --------------------------------------------------------------------------- planning

def quietest(probs: np.ndarray) -> int:
    """Index of the window to cut at: the middle of the longest run of silent windows (ties: the one nearest
    the middle of the range), else the lowest point of the smoothed probability."""
    best, best_key, n = None, None, len(probs)
    for i, j in word_timing.true_runs(probs < SILENCE_P):
        mid = (i + j) // 2
        key = (j - i, -abs(mid - n // 2))
        if best_key is None or key > best_key:
            best, best_key = mid, key
    if best is not None:
        return best
    k = min(SMOOTH_WINDOWS, n)
    smooth = np.convolve(np.pad(probs, (k // 2, k - 1 - k // 2), mode="edge"), np.ones(k) / k, mode="valid")
    return int(np.argmin(smooth))


def plan(samples: np.ndarray, chunk_s: float | None = None) -> list[tuple[int, int]]:
    """[(start, end)] sample ranges covering the audio, cut at silences near every ``chunk_s`` seconds (the
    first near FIRST_CHUNK_S, when that is shorter)."""
    n = len(samples)
    chunk_s = chunk_s or CHUNK_S
    out, pos = [], 0
    while True:
        target = max(WIN, int((min(FIRST_CHUNK_S, chunk_s) if not out else chunk_s) * SR) // WIN * WIN)
        lo_off = int(target * (1 - SEARCH_SHARE)) // WIN * WIN
        hi_off = int(target * (1 + SEARCH_SHARE)) // WIN * WIN
        if n - pos <= hi_off + TAIL_GUARD:
            break
        lo, hi = pos + lo_off, pos + hi_off
        cut = lo + WIN * quietest(speech_probs(samples[lo:hi]))
        out.append((pos, cut))
        pos = cut
    out.append((pos, n))
    return out


def fingerprint(stage_config: dict, language_check_model: str | None, code_version: str) -> str:
    """What, besides the samples, makes a chunk's result: the stage's config (model, language, vocabulary,
    beam, device/compute type), the code versions (``code_version``: the segments stage's), and whether the
    language check could run."""
    return json.dumps({"format": CHUNK_FORMAT, "code": code_version, "word_timing": word_timing.CODE_VERSION,
                       "config": stage_config,
                       "language_check": language_check_model}, sort_keys=True, default=str)


def chunk_key(samples: np.ndarray, fp: str, previous: str | None = None) -> str:
    """sha256 of the settings fingerprint, the previous chunk's key (its result is this chunk's context) and
    the samples."""
    h = hashlib.sha256(fp.encode())
    h.update(b"\0" + (previous or "").encode() + b"\0")
    h.update(np.ascontiguousarray(samples, dtype=np.float32).tobytes())
    return h.hexdigest()


def chain_keys(samples: np.ndarray, bounds: list[tuple[int, int]], fp: str) -> list[str]:
    keys: list[str] = []
    for a, b in bounds:
        keys.append(chunk_key(samples[a:b], fp, keys[-1] if keys else None))
    return keys


def context(result: Decoded | None) -> list[int] | None:
    """The prompt for the chunk after ``result``: its last PROMPT_TOKENS text tokens (with the context it
    was given in front), as Whisper conditions on the text before while it decodes a whole recording."""
    if not result:
        return None
    return list(result.tail) or None


# --------------------------------------------------------------------------- stored results

class CorruptChunk(TalkthroughError, ValueError):
    """A stored chunk result that is not exactly what :func:`encode` wrote."""


def encode(result: dict) -> bytes:
    payload = json.dumps(result, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + zlib.compress(payload, 6)


def decode_blob(blob: bytes) -> dict:
    """The result in ``blob``; CorruptChunk when it is not exactly what :func:`encode` wrote."""
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + 65:
        raise CorruptChunk("not a chunk result")
    digest, body = blob[len(MAGIC):len(MAGIC) + 64].decode("ascii", "replace"), blob[len(MAGIC) + 65:]
    try:
        payload = zlib.decompress(body)
    except zlib.error as e:
        raise CorruptChunk(f"unreadable ({e})") from None
    if hashlib.sha256(payload).hexdigest() != digest:
        raise CorruptChunk("checksum mismatch")
    return json.loads(payload)


def pack(result: Decoded) -> bytes:
    """A chunk's result as stored: :func:`encode` of its JSON payload (``payload.to_payload``)."""
    return encode(payload.to_payload(result))


def unpack(blob: bytes) -> Decoded:
    """The chunk result in ``blob`` (:func:`pack`); CorruptChunk when it is not exactly what was stored."""
    stored = decode_blob(blob)
    try:
        return payload.from_payload(stored)
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptChunk(f"not a chunk result ({type(e).__name__}: {e})") from None


# --------------------------------------------------------------------------- decoding and assembly

@dataclass(frozen=True, slots=True)
class Failed:
    """A chunk whose decoding raised: its place, its range and why."""

    idx: int
    t0_ms: int
    t1_ms: int
    reason: str


@dataclass(slots=True)
class Report:
    """What a run did with its chunks (counts, filled in as it goes)."""

    total: int
    reused: int = 0
    decoded: int = 0
    corrupt: int = 0
    unstored: int = 0
    recontext: int = 0
    failed: list[Failed] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Chunked:
    """The stage's tables from a recording's chunks, what happened to each chunk, the chunk plan's rows, and the
    stage's reason when some chunks failed (``stage.transcribe``)."""

    transcript: Transcript
    report: Report
    rows: tuple[Chunk, ...]
    reason: str | None = None


def transcribe_chunked(samples: np.ndarray, opts: Options, engine: Engine, *, fp: str,
                       load: Callable[[str], bytes | None], save: Callable[[str, bytes], None],
                       bounds: list[tuple[int, int]] | None = None,
                       on_plan: Callable[[list[Chunk]], None] | None = None,
                       on_chunk: Callable[[int, int, str], None] | None = None) -> Chunked:
    """The stage's output for ``samples`` (times in ms; :func:`transcribe.finish`) from its chunks, decoded with
    ``engine`` as ``opts`` say, and what happened to each (reused, decoded, failed). ``on_plan(rows)`` is called
    with the chunk rows (idx, t0_ms, t1_ms, key) before anything is decoded; ``on_chunk(done, total, state,
    done_ms, total_ms)`` after each chunk."""
    t_start = time.perf_counter()
    bounds = bounds if bounds is not None else plan(samples, opts.chunk_s)
    keys = chain_keys(samples, bounds, fp)
    rows = [Chunk(idx=i, t0_ms=a * 1000 // SR, t1_ms=b * 1000 // SR, key=k)
            for i, ((a, b), k) in enumerate(zip(bounds, keys))]
    if on_plan:
        on_plan(rows)
    segments_engine.load_checker_soon(samples, opts.decoding.language_check, engine)
    results: list[Decoded | None] = []
    report = Report(total=len(rows))
    chain_ok = True  # False after a failed chunk: what follows lacks its context, so it is not stored
    vad = segments_rules.Prefetch(samples, bounds) if opts.decoding.vad else None
    try:
        for i, (row, (a, b)) in enumerate(zip(rows, bounds)):
            stop.checkpoint()  # a stopped run ends here: the chunks before this one are stored
            res, state = _one_chunk(i, row, samples[a:b], results, report, chain_ok, load, save, vad, opts, engine)
            results.append(res)
            chain_ok = chain_ok and state != "failed"
            if on_chunk:
                on_chunk(row.idx + 1, len(rows), state, row.t1_ms, rows[-1].t1_ms)
    finally:
        if vad:
            vad.close()
    out = assemble(results, rows, model_label=engine.model_label, audio_ms=len(samples) * 1000 // SR,
                   judge=_recording_judge(samples, results, opts, engine))
    out = replace(out, meta=replace(out.meta, elapsed_s=round(time.perf_counter() - t_start, 3)))
    return Chunked(out, report, tuple(rows))


def _one_chunk(i: int, row: Chunk, part: np.ndarray, results: list, report: Report, chain_ok: bool, load, save,
               vad: segments_rules.Prefetch | None, opts: Options, engine: Engine) -> tuple[Decoded | None, str]:
    """(chunk ``i``'s result, "reused" | "decoded" | "failed"): stored and reused, or decoded (and stored while the
    chain of contexts is whole); None when its decoding failed (recorded in ``report``)."""
    res, state = None, "decoded"
    blob = load(row.key)
    if blob is not None:
        try:
            res, state = unpack(blob), "reused"
        except CorruptChunk:
            report.corrupt += 1  # recomputed below, and the good result replaces it
    if res is None:
        try:
            res = _decode_chunk(part, opts, engine, prompt=context(results[-1] if results else None),
                                vad_regions=vad.regions(i) if vad is not None else None)
            report.recontext += res.recontext
            if chain_ok:
                save(row.key, pack(res))
            else:
                report.unstored += 1
        except stop.Interrupted:
            raise
        except Exception as e:  # noqa: BLE001 - one chunk's failure is recorded; the others go on
            res, state = None, "failed"
            reason = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            report.failed.append(Failed(row.idx, row.t0_ms, row.t1_ms, reason))
    if state != "failed":
        setattr(report, state, getattr(report, state) + 1)
    return res, state


def transcribe(samples: np.ndarray, opts: Options | None = None, engine: Engine | None = None,
               **kw) -> Chunked:
    """The segments stage's output for ``samples`` as the stage makes it (:func:`transcribe_chunked`: the same
    chunks, contexts and drop rules), with nothing stored or reused: for the benchmarks and the accuracy tests.
    ``opts``: the stage's options (defaults: its defaults); ``engine``: ``Engine.of(opts)`` unless given."""
    opts = opts or Options()
    return transcribe_chunked(samples, opts, engine or Engine.of(opts), fp="unstored", load=lambda key: None,
                              save=lambda key, blob: None, **kw)


def loop_run(out: Decoded | Transcript) -> int:
    """The longest run of kept segments one after another with the same text (case and punctuation aside):
    Whisper caught in a loop writes "Okay." 100 times over real speech. Dropped segments do not count: a loop
    over the silence at a chunk's end is dropped by the VAD gate and is not the next chunk's context."""
    best = run = 0
    prev = None
    for text in (x.text for x in out.segments):
        key = re.sub(r"\W+", " ", text.lower()).strip()
        run = run + 1 if key and key == prev else 1
        prev, best = key, max(best, run)
    return best


def _decode_chunk(samples: np.ndarray, opts: Options, engine: Engine, *, prompt=None, vad_regions=None) -> Decoded:
    """One chunk through the drop rules, as stored (times from the chunk's first sample; "tail": the context
    for the next chunk). A chunk decoded with the previous chunk's context that comes out in a loop
    (:data:`LOOP_RUN`) is decoded again without it, and the result with the shorter loop is kept ("recontext"):
    on the 30-min bench meeting a loop of "Okay." in one chunk's context made the next five chunks nothing but
    "Okay.". Both decodes are deterministic, so the choice is too."""
    out = T.decode(samples, opts, engine, prompt=prompt, vad_regions=vad_regions)
    prompt = prompt or []
    recontext = False
    if prompt and loop_run(out) >= LOOP_RUN:
        again = T.decode(samples, opts, engine, vad_regions=vad_regions)
        if loop_run(again) < loop_run(out):
            out, prompt, recontext = again, [], True
    return replace(out, tail=tuple((list(prompt) + list(out.tokens))[-PROMPT_TOKENS:]), tokens=(), seg_tokens=(),
                   recontext=recontext)


def _recording_judge(samples: np.ndarray, results: list[Decoded | None], opts: Options, engine: Engine):
    """For an English-only model's transcript: a function (parts, core_ms) -> parts that decides the whole
    recording's language and drops what the model wrote over a recording with no English (``language.judge``);
    None when there is no language check."""
    if not opts.decoding.language_check or not any(r and r.english_only for r in results):
        return None
    check = engine.language_checker()
    if check is None:
        return None
    return lambda parts, core_ms: language.judge(parts, samples, [(a * 16, b * 16) for a, b in core_ms], check,
                                                 engine.model_label)


def assemble(results: list[Decoded | None], rows: list[Chunk], *, model_label: str | None, audio_ms: int,
             judge=None) -> Transcript:
    """Chunk results (None: failed) -> the stage's output, times shifted by each chunk's start, segments
    numbered in order. ``judge(parts, core_ms)``: the whole recording's language check, before the output is
    finished (:func:`_recording_judge`)."""
    segments, words, dropped, doubtful, gaps, core_ms = [], [], [], [], [], []
    speech_ms = 0
    reasons = set()
    for res, row in zip(results, rows):
        if res is None:
            continue
        off = row.t0_ms
        reasons.add(res.reason)
        seq_of = {}
        for s in res.segments:
            seq_of[s.seq] = len(segments)
            segments.append(s.shifted(off, seq=len(segments)))
        words += [w.shifted(off, seq=seq_of[w.seq]) for w in res.words]
        dropped += [d.shifted(off) for d in res.dropped]
        doubtful += [d.shifted(off) for d in res.doubtful]
        gaps += [d.shifted(off) for d in res.uncovered]
        speech_ms += res.speech_ms
        core_ms += [[a + off, b + off] for a, b in res.core_ms]
    done = [r for r in results if r is not None]
    # the language of the first chunk with segments, else of the first that detected one
    first = next((r for r in done if r.language and r.segments), None) or next((r for r in done if r.language), None)
    reason = None
    if not segments and not dropped and len(reasons) == 1:  # e.g. every chunk: no voice activity
        reason = next(iter(reasons))
    parts = Decoded(model=model_label, audio_ms=audio_ms, reason=reason, language=first and first.language,
                    language_probability=first and first.language_probability, segments=tuple(segments),
                    words=tuple(words), dropped=tuple(dropped), doubtful=tuple(doubtful), uncovered=tuple(gaps),
                    speech_ms=speech_ms)
    if judge is not None:
        parts = judge(parts, core_ms)
    return T.finish(parts)


# --------------------------------------------------------------------------- coverage

def covered_text(rows: list[Chunk], have: list[bool]) -> str:
    """"41 of 52 chunks, 0-81 min" (the covered ranges, merged)."""
    ranges: list[list[int]] = []
    for r, ok in zip(rows, have):
        if not ok:
            continue
        if ranges and ranges[-1][1] == r.t0_ms:
            ranges[-1][1] = r.t1_ms
        else:
            ranges.append([r.t0_ms, r.t1_ms])
    text = f"{sum(have)} of {len(rows)} chunks"
    if ranges:
        text += ", " + ", ".join(f"{hms(a / 1000)}-{hms(b / 1000)}" for a, b in ranges)
    return text


