"""turns: speaker diarization with sherpa-onnx, plus the pure math around it.

* :func:`resolve_models` finds the two ONNX files (pyannote segmentation-3.0 + 3D-Speaker
  CAM++ embedding): ``$TALKTHROUGH_DIARIZATION_MODELS`` (a folder; authoritative, never
  downloads) > the verified cache ``<models_dir>/diarization`` > a download of the pinned
  sherpa-onnx release files (sha256-checked). Missing models are a recorded reason, not a crash.
* :func:`run_turns` diarizes the stage's 16 kHz WAV, labels speakers S1, S2 ... by first
  appearance, merges labels that are the same voice (asked-for speakers that are not there),
  attributes Whisper words/segments to speakers, and builds the roster and the OCR-derived
  name candidates. Whisper's own segments/words are never modified.
* Attribution, labels, roster and candidate filtering are pure functions (unit tested).

No Dagster here; sherpa-onnx is imported lazily (only when diarization really runs).
"""

from __future__ import annotations

import bisect
import json
import os
import re
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

CODE_VERSION = "2"
ENGINE = "sherpa-onnx"
SAMPLE_RATE = 16000

MIN_AUDIO_S = 1.0            # shorter audio: recorded as "too short", the engine is not run
SILENCE_PEAK = 1e-3          # peak below this (about -60 dBFS): silent audio, nothing to diarize
# pyannote 10 s window, 1 s hop: sherpa-onnx's default. 0.25 (2.5 s hop, ~2.3x cheaper) lost a speaker:
# on pyannote's sample.wav every threshold 0.45-0.7 gave one speaker (DER 46 % vs 2.4 %). Measured with
# bench/bench_der.py on six real clips: 0.1 at threshold 0.5 is never worse than sherpa's defaults.
WINDOW_SHIFT_RATIO = 0.1
MIN_DURATION_ON = 0.3        # sherpa defaults
MIN_DURATION_OFF = 0.5
SAME_VOICE_SIMILARITY = 0.75  # centroid cosine >= this: two labels are one voice (measured: same flite voice
#                              across turns 0.91, two different voices 0.53-0.56)
MIN_SPEAKER_MS = 1000        # a label with less talk time than this in the whole recording is absorbed
MERGE_GAP_MS = 500           # same-speaker turns closer than this are one turn (= min_duration_off)
CENTROID_MAX_S = 20.0        # audio per label (its longest clean spans) used for its centroid embedding
SMOOTH_MAX_MS = 400          # a lone word this short between two runs of another speaker is that speaker's

ENV_MODELS_DIR = "TALKTHROUGH_DIARIZATION_MODELS"
ENV_THREADS = "TALKTHROUGH_DIARIZATION_THREADS"


class ModelsUnavailable(RuntimeError):
    """No usable diarization models; ``str(e)`` is the one-line reason recorded in outputs."""


# --------------------------------------------------------------------------- model resolution

@dataclass(frozen=True)
class ModelSpec:
    """A pinned upstream file: ``url`` (sha256 ``sha256``), optionally a tar archive holding
    ``member`` (sha256 ``member_sha256``); cached as ``filename``."""

    role: str
    filename: str
    url: str
    sha256: str
    member: str | None = None
    member_sha256: str | None = None


# Pinned upstream sherpa-onnx release assets. The sha256 values were not computed here (this build
# machine cannot reach GitHub); they are the values pinned independently by several public projects
# that download these exact URLs (found with the code search: two pin the archive + its model.onnx,
# three pin the CAM++ file, all agreeing). Sizes: archive 6,958,444 B; CAM++ 28,281,164 B.
# The offline copies in shared/models/diarization (int8 re-exports, SHA256SUMS there) are what tests
# use through $TALKTHROUGH_DIARIZATION_MODELS; they are NOT these files.
SEGMENTATION = ModelSpec(
    role="segmentation",
    filename="sherpa-onnx-pyannote-segmentation-3-0.onnx",
    url="https://github.com/k2-fsa/sherpa-onnx/releases/download/speaker-segmentation-models/"
        "sherpa-onnx-pyannote-segmentation-3-0.tar.bz2",
    sha256="24615ee884c897d9d2ba09bb4d30da6bb1b15e685065962db5b02e76e4996488",
    member="sherpa-onnx-pyannote-segmentation-3-0/model.onnx",
    member_sha256="220ad67ca923bef2fa91f2390c786097bf305bceb5e261d4af67b38e938e1079",
)
EMBEDDING = ModelSpec(
    role="embedding",
    filename="3dspeaker_speech_campplus_sv_zh_en_16k-common_advanced.onnx",
    url="https://github.com/k2-fsa/sherpa-onnx/releases/download/speaker-recongition-models/"
        "3dspeaker_speech_campplus_sv_zh_en_16k-common_advanced.onnx",
    sha256="aa3cfc16963a10586a9393f5035d6d6b57e98d358b347f80c2a30bf4f00ceba2",
)
PINNED = (SEGMENTATION, EMBEDDING)


@dataclass(frozen=True)
class DiarizationModels:
    segmentation: Path
    embedding: Path
    source: str  # "dir:<path>" or "cache:<path>"

    def label(self, role: str) -> str:
        p = self.segmentation if role == "segmentation" else self.embedding
        return f"{p.name} (sha256 {_sha256(p)[:12]})"


_sha_cache: dict[tuple[str, int, float], str] = {}


def _sha256(path: Path) -> str:
    from ..models import sha256_file

    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime)
    if key not in _sha_cache:
        _sha_cache[key] = sha256_file(path)
    return _sha_cache[key]


def cache_dir() -> Path:
    from .. import store

    return Path(store.models_dir()) / "diarization"


def find_in_dir(folder: str | os.PathLike) -> tuple[Path, Path] | None:
    """(segmentation, embedding) ONNX files in ``folder`` (or one level below), else None.

    Segmentation = an ``.onnx`` whose path (relative to ``folder``) mentions "segmentation"
    (int8 preferred); embedding = another ``.onnx`` (CAM++ preferred)."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        return None
    files = sorted(p for p in [*root.glob("*.onnx"), *root.glob("*/*.onnx")] if p.is_file())

    def rel(p: Path) -> str:
        return p.relative_to(root).as_posix().lower()

    seg = [p for p in files if "segmentation" in rel(p)]
    emb = [p for p in files if "segmentation" not in rel(p)]
    if not seg or not emb:
        return None
    seg.sort(key=lambda p: ("int8" not in rel(p), rel(p)))
    emb.sort(key=lambda p: ("campplus" not in rel(p), "int8" not in rel(p), rel(p)))
    return seg[0], emb[0]


def _cached_ok(spec: ModelSpec, folder: Path) -> Path | None:
    p = folder / spec.filename
    want = spec.member_sha256 if spec.member else spec.sha256
    return p if p.is_file() and _sha256(p) == want else None


def ensure_cached(spec: ModelSpec, folder: Path, *, timeout: float = 60) -> Path:
    """The verified cached file for ``spec``, downloading (and unpacking) it when absent.

    Raises :class:`ModelsUnavailable` (never leaves a partial or unverified file behind)."""
    from .. import store
    from ..models import ModelUnavailable, download_verified, sha256_file

    hit = _cached_ok(spec, folder)
    if hit:
        return hit
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / spec.filename
    try:
        if not spec.member:
            return download_verified(spec.url, spec.sha256, dest, timeout=timeout)
        archive = download_verified(spec.url, spec.sha256, folder / (spec.filename + ".archive"), timeout=timeout)
        try:
            with tarfile.open(archive) as tar:
                try:
                    src = tar.extractfile(spec.member)
                except KeyError:
                    src = None
                if src is None:
                    raise ModelsUnavailable(f"{spec.url} does not contain {spec.member}")
                with store.atomic_path(dest) as tmp, src, open(tmp, "wb") as out:
                    while b := src.read(1 << 20):
                        out.write(b)
                    out.flush()
                    got = sha256_file(tmp)
                    if got != spec.member_sha256:
                        raise ModelsUnavailable(
                            f"{spec.member} in {spec.url} has sha256 {got}, expected {spec.member_sha256}")
        except tarfile.TarError as e:
            raise ModelsUnavailable(f"cannot unpack {archive.name}: {e}") from None
        finally:
            archive.unlink(missing_ok=True)
        return dest
    except ModelUnavailable as e:
        raise ModelsUnavailable(str(e)) from None


def resolve_models(*, download: bool = True) -> DiarizationModels:
    """Find the models (see module doc). Raises :class:`ModelsUnavailable` with a one-line reason."""
    env = os.environ.get(ENV_MODELS_DIR)
    if env:
        found = find_in_dir(env)
        if found:
            return DiarizationModels(found[0], found[1], f"dir:{env}")
    folder = cache_dir()
    cached = [_cached_ok(s, folder) for s in PINNED]
    if all(cached):
        return DiarizationModels(cached[0], cached[1], f"cache:{folder}")
    if env:
        raise ModelsUnavailable(
            f"diarization models not found in {ENV_MODELS_DIR}={env} (it needs a pyannote *segmentation*.onnx "
            f"and a speaker-embedding .onnx) nor in the model cache {folder}")
    if not download:
        raise ModelsUnavailable(f"diarization models are not in the model cache {folder}")
    try:
        paths = [ensure_cached(s, folder) for s in PINNED]
    except ModelsUnavailable as e:
        raise ModelsUnavailable(
            f"diarization models unavailable ({e}); download them once with network access, or set "
            f"{ENV_MODELS_DIR} to a folder holding the segmentation and embedding ONNX files") from None
    return DiarizationModels(paths[0], paths[1], f"cache:{folder}")


# --------------------------------------------------------------------------- engine (cached per process)

_engine_lock = threading.Lock()
_engines: dict[tuple, Any] = {}  # (models, clustering, threads) -> OfflineSpeakerDiarization, oldest first
MAX_ENGINES = 4
_extractors: dict[tuple, Any] = {}


def threads() -> int:
    """ONNX threads per model. Default 1: measured on the 2-core build machine (96 s of two-voice audio),
    2 threads doubled the CPU time for the same work (20 vs 10 CPU-s per audio minute) and were ~2x
    slower in wall time whenever anything else ran (the Dagster pool runs 2 steps at once); these
    int8 models are too small for intra-op threads to pay. ``TALKTHROUGH_DIARIZATION_THREADS`` overrides."""
    return max(1, int(os.environ.get(ENV_THREADS) or 1))


def engine_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("sherpa-onnx", "sherpa_onnx"):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return None


def _engine(models: DiarizationModels, num_clusters: int, threshold: float, n_threads: int,
            window_shift: float = WINDOW_SHIFT_RATIO):
    import sherpa_onnx as so

    key = (str(models.segmentation), str(models.embedding), num_clusters, round(threshold, 6), n_threads,
           round(window_shift, 6))
    if key not in _engines:
        cfg = so.OfflineSpeakerDiarizationConfig(
            segmentation=so.OfflineSpeakerSegmentationModelConfig(
                pyannote=so.OfflineSpeakerSegmentationPyannoteModelConfig(
                    model=str(models.segmentation), window_shift_ratio=float(window_shift)),
                num_threads=n_threads),
            embedding=so.SpeakerEmbeddingExtractorConfig(model=str(models.embedding), num_threads=n_threads),
            clustering=so.FastClusteringConfig(num_clusters=num_clusters, threshold=threshold),
            min_duration_on=MIN_DURATION_ON, min_duration_off=MIN_DURATION_OFF,
        )
        if not cfg.validate():
            raise ModelsUnavailable(f"sherpa-onnx rejected the diarization config ({models.segmentation.name}, "
                                    f"{models.embedding.name})")
        while len(_engines) >= MAX_ENGINES:  # a long-lived process trying many speaker counts
            _engines.pop(next(iter(_engines)))
        _engines[key] = so.OfflineSpeakerDiarization(cfg)
    return _engines[key]


def _extractor(models: DiarizationModels, n_threads: int):
    import sherpa_onnx as so

    key = (str(models.embedding), n_threads)
    if key not in _extractors:
        _extractors[key] = so.SpeakerEmbeddingExtractor(
            so.SpeakerEmbeddingExtractorConfig(model=str(models.embedding), num_threads=n_threads))
    return _extractors[key]


def _diarize(samples, models: DiarizationModels, num_speakers: int | None, threshold: float,
             window_shift: float = WINDOW_SHIFT_RATIO) -> list[tuple]:
    """Raw engine output: [(t0_ms, t1_ms, engine_speaker_index)] sorted by start."""
    import numpy as np

    with _engine_lock:
        eng = _engine(models, int(num_speakers) if num_speakers else -1, float(threshold), threads(),
                      window_shift)
        result = eng.process(np.ascontiguousarray(samples, dtype=np.float32)).sort_by_start_time()
    return [(int(round(s.start * 1000)), int(round(s.end * 1000)), int(s.speaker)) for s in result]


def _centroids(samples, turns: list[dict], models: DiarizationModels) -> dict[str, Any]:
    """Unit-norm embedding per label from (up to CENTROID_MAX_S of) its non-overlapped turn audio."""
    import numpy as np

    out = {}
    with _engine_lock:
        ex = _extractor(models, threads())
        for label in labels_in_order(turns):
            spans = exclusive_spans(turns, label) or [(t["t0_ms"], t["t1_ms"]) for t in turns if t["speaker"] == label]
            pieces, total = [], 0
            for a, b in sorted(spans, key=lambda ab: ab[0] - ab[1]):  # longest first
                x = samples[a * SAMPLE_RATE // 1000: b * SAMPLE_RATE // 1000]
                x = x[: max(0, int(CENTROID_MAX_S * SAMPLE_RATE) - total)]
                if len(x) >= SAMPLE_RATE // 2 or not pieces:
                    pieces.append(x)
                    total += len(x)
            if total < SAMPLE_RATE // 4:
                continue
            st = ex.create_stream()
            st.accept_waveform(SAMPLE_RATE, np.ascontiguousarray(np.concatenate(pieces), dtype=np.float32))
            st.input_finished()
            if not ex.is_ready(st):
                continue
            v = np.asarray(ex.compute(st), dtype=np.float64)
            n = float(np.linalg.norm(v))
            if n > 0:
                out[label] = v / n
    return out


# --------------------------------------------------------------------------- pure: labels, turns, roster

def _label_num(label: str) -> int:
    m = re.fullmatch(r"S(\d+)", label or "")
    return int(m.group(1)) if m else 1 << 30


def labels_in_order(turns: Iterable[dict]) -> list[str]:
    return sorted({t["speaker"] for t in turns}, key=_label_num)


def relabel(raw: Iterable[tuple]) -> list[dict]:
    """Engine output [(t0_ms, t1_ms, speaker_key)] -> turns labelled S1, S2 ... by first appearance."""
    raw = sorted(raw, key=lambda r: (r[0], r[1]))
    names: dict[Any, str] = {}
    turns = []
    for t0, t1, key in raw:
        if t1 <= t0:
            continue
        if key not in names:
            names[key] = f"S{len(names) + 1}"
        turns.append({"t0_ms": int(t0), "t1_ms": int(t1), "speaker": names[key]})
    return turns


def merge_labels(turns: list[dict], mapping: dict[str, str], *, gap_ms: int = MERGE_GAP_MS) -> list[dict]:
    """Rename labels by ``mapping``, join same-speaker turns closer than ``gap_ms``, relabel S1.. by
    first appearance again."""
    renamed = sorted(({**t, "speaker": mapping.get(t["speaker"], t["speaker"])} for t in turns),
                     key=lambda t: (t["t0_ms"], t["t1_ms"]))
    out: list[dict] = []
    last: dict[str, dict] = {}
    for t in renamed:
        prev = last.get(t["speaker"])
        if prev is not None and t["t0_ms"] - prev["t1_ms"] <= gap_ms and _is_latest(out, prev, t):
            prev["t1_ms"] = max(prev["t1_ms"], t["t1_ms"])
            continue
        cur = dict(t)
        out.append(cur)
        last[t["speaker"]] = cur
    return relabel((t["t0_ms"], t["t1_ms"], t["speaker"]) for t in out)


def _is_latest(out: list[dict], prev: dict, t: dict) -> bool:
    """Join only when no other speaker's turn starts between ``prev`` and ``t``."""
    for o in reversed(out):
        if o is prev:
            return True
        if o["speaker"] != t["speaker"] and o["t0_ms"] >= prev["t0_ms"]:
            return False
    return True


def exclusive_spans(turns: list[dict], label: str) -> list[tuple[int, int]]:
    """Parts of ``label``'s turns where no other label's turn overlaps."""
    others = sorted((t["t0_ms"], t["t1_ms"]) for t in turns if t["speaker"] != label)
    spans = []
    for t in turns:
        if t["speaker"] != label:
            continue
        pieces = [(t["t0_ms"], t["t1_ms"])]
        for a, b in others:
            nxt = []
            for x, y in pieces:
                if b <= x or a >= y:
                    nxt.append((x, y))
                else:
                    if a > x:
                        nxt.append((x, a))
                    if b < y:
                        nxt.append((b, y))
            pieces = nxt
        spans.extend(p for p in pieces if p[1] > p[0])
    return sorted(spans)


def _union_ms(spans: Iterable[tuple[int, int]]) -> int:
    total, end = 0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def roster(turns: list[dict], name_candidates: dict[str, list[str]] | None = None) -> list[dict]:
    """One row per label (S1, S2 ... order): talk time (union of its turns), turn count, first/last ms."""
    out = []
    for label in labels_in_order(turns):
        mine = [t for t in turns if t["speaker"] == label]
        out.append({
            "label": label,
            "talk_time_ms": _union_ms((t["t0_ms"], t["t1_ms"]) for t in mine),
            "turn_count": len(mine),
            "first_ms": min(t["t0_ms"] for t in mine),
            "last_ms": max(t["t1_ms"] for t in mine),
            "name_candidates_json": json.dumps((name_candidates or {}).get(label, []), ensure_ascii=False),
        })
    return out


def plan_merges(turns: list[dict], similarity: dict[tuple[str, str], float], *,
                same_voice: float = SAME_VOICE_SIMILARITY, min_speaker_ms: int = MIN_SPEAKER_MS
                ) -> tuple[dict[str, str], list[str]]:
    """Which labels are really another label's voice: (mapping later->earlier label, notes).

    * two labels whose centroid cosine similarity is >= ``same_voice`` are one speaker;
    * a label with under ``min_speaker_ms`` of talk in the whole recording is absorbed into the
      most similar remaining label (too little audio to call it a separate speaker).
    ``similarity`` maps (a, b) label pairs (either order) to cosine similarity; pairs without a
    value (no usable audio) never merge by voice."""
    labels = labels_in_order(turns)

    def sim(a: str, b: str) -> float | None:
        return similarity.get((a, b), similarity.get((b, a)))

    parent = {lab: lab for lab in labels}

    def root(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    notes = []
    pairs = sorted(((s, a, b) for i, a in enumerate(labels) for b in labels[i + 1:]
                    if (s := sim(a, b)) is not None and s >= same_voice), reverse=True)
    for s, a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            keep, drop = sorted((ra, rb), key=_label_num)
            parent[drop] = keep
            notes.append(f"{drop} merged into {keep} (same voice, similarity {s:.2f})")
    talk = {lab: _union_ms((t["t0_ms"], t["t1_ms"]) for t in turns if t["speaker"] == lab) for lab in labels}
    for lab in labels:
        groups = {root(x) for x in labels}
        if len(groups) < 2 or root(lab) != lab:
            continue
        group_talk = sum(talk[x] for x in labels if root(x) == lab)
        if group_talk >= min_speaker_ms:
            continue
        others = [g for g in groups if g != lab]
        best = max(others, key=lambda g: (sim(lab, g) if sim(lab, g) is not None else -2.0,
                                          talk.get(g, 0), -_label_num(g)))
        parent[lab] = best
        notes.append(f"{lab} absorbed into {best} (only {group_talk / 1000:.1f} s of speech)")
    mapping = {lab: root(lab) for lab in labels if root(lab) != lab}
    return mapping, notes


# --------------------------------------------------------------------------- pure: attribution

def overlap_ms(a0: int, a1: int, b0: int, b1: int) -> int:
    return max(0, min(a1, b1) - max(a0, b0))


class TurnIndex:
    """Max-overlap speaker lookups over turns (bisect on start times; turns may overlap)."""

    def __init__(self, turns: Sequence[dict]):
        self.turns = sorted(turns, key=lambda t: (t["t0_ms"], t["t1_ms"]))
        self.starts = [t["t0_ms"] for t in self.turns]
        self.max_len = max((t["t1_ms"] - t["t0_ms"] for t in self.turns), default=0)

    def _candidates(self, t0: int, t1: int) -> list[dict]:
        lo = bisect.bisect_left(self.starts, t0 - self.max_len)
        hi = bisect.bisect_left(self.starts, t1)
        return self.turns[lo:hi]

    def speaker(self, t0: int, t1: int) -> str | None:
        """Label with the largest total overlap with [t0, t1] (ties: lower label); None if none."""
        per: dict[str, int] = {}
        for t in self._candidates(t0, t1):
            ov = overlap_ms(t0, t1, t["t0_ms"], t["t1_ms"])
            if ov > 0:
                per[t["speaker"]] = per.get(t["speaker"], 0) + ov
        if not per and t1 <= t0:  # zero-length item: the turn containing the instant
            for t in self._candidates(t0, t0 + 1):
                if t["t0_ms"] <= t0 < t["t1_ms"]:
                    per[t["speaker"]] = per.get(t["speaker"], 0) + 1
        if not per:
            return None
        return min(per, key=lambda s: (-per[s], _label_num(s)))

    def nearest(self, t0: int, t1: int, max_gap_ms: int) -> str | None:
        best, best_gap = None, None
        for t in self.turns:
            gap = max(t["t0_ms"] - t1, t0 - t["t1_ms"], 0)
            if gap <= max_gap_ms and (best_gap is None or gap < best_gap):
                best, best_gap = t["speaker"], gap
        return best


def attribute_words(words: Sequence[dict], turns: Sequence[dict]) -> list[str | None]:
    """Speaker of each word: the turn label with maximum time overlap (None when no turn overlaps)."""
    idx = TurnIndex(turns)
    return [idx.speaker(int(w["t0_ms"]), int(w["t1_ms"])) for w in words]


def _smooth(runs: list[list]) -> list[list]:
    """Absorb a lone short word between two runs of the same other speaker (boundary jitter)."""
    changed = True
    while changed and len(runs) >= 3:
        changed = False
        for i in range(1, len(runs) - 1):
            spk, ws = runs[i]
            if (len(ws) == 1 and ws[0]["t1_ms"] - ws[0]["t0_ms"] < SMOOTH_MAX_MS
                    and runs[i - 1][0] == runs[i + 1][0] != spk):
                runs[i - 1][1].extend(ws + runs[i + 1][1])
                del runs[i:i + 2]
                changed = True
                break
    return runs


def attribute_segments(segments: Sequence[dict], words: Sequence[dict], turns: Sequence[dict], *,
                       nearest_gap_ms: int = 1000) -> list[dict]:
    """speaker_segments rows: each Whisper segment, split where its words change speaker.

    Word speaker = max overlap; a word overlapping no turn takes the previous word's speaker in
    the segment (else the segment's). A segment without words takes the speaker with maximum
    overlap over the whole segment (else the nearest turn within ``nearest_gap_ms``). Split
    pieces keep ``source_seq`` = the Whisper segment's seq; ``seq`` is renumbered."""
    idx = TurnIndex(turns)
    by_seq: dict[int, list[dict]] = {}
    for w in words:
        by_seq.setdefault(int(w["seq"]), []).append(w)
    out: list[dict] = []
    for seg in sorted(segments, key=lambda s: s["seq"]):
        s0, s1 = int(seg["t0_ms"]), int(seg["t1_ms"])
        seg_spk = idx.speaker(s0, s1) or idx.nearest(s0, s1, nearest_gap_ms)
        ws = sorted(by_seq.get(int(seg["seq"]), []), key=lambda w: (w.get("idx", 0), w["t0_ms"]))
        runs: list[list] = []
        prev = None
        for w in ws:
            spk = idx.speaker(int(w["t0_ms"]), int(w["t1_ms"])) or prev or seg_spk
            prev = spk
            if runs and runs[-1][0] == spk:
                runs[-1][1].append(w)
            else:
                runs.append([spk, [w]])
        runs = _smooth(runs)
        base = {"source_seq": int(seg["seq"])}
        if len(runs) <= 1:
            spk = runs[0][0] if runs else seg_spk
            out.append({**base, "t0_ms": s0, "t1_ms": s1, "speaker": spk, "text": seg["text"]})
            continue
        for i, (spk, rws) in enumerate(runs):
            t0 = s0 if i == 0 else int(rws[0]["t0_ms"])
            t1 = s1 if i == len(runs) - 1 else int(rws[-1]["t1_ms"])
            out.append({**base, "t0_ms": min(t0, t1), "t1_ms": t1, "speaker": spk,
                        "text": "".join(w["word"] for w in rws).strip()})
    for i, row in enumerate(out):
        row["seq"] = i
    return [{k: r[k] for k in ("seq", "source_seq", "t0_ms", "t1_ms", "speaker", "text")} for r in out]


# --------------------------------------------------------------------------- pure: OCR name candidates

MAX_CANDIDATES = 3
MAX_CANDIDATE_CHARS = 80
MAX_NAME_WORDS = 4

# Words that make a line UI chrome (meeting apps, players, browsers, editors), compared lowercased.
UI_CHROME = frozenset("""
file edit view window help tools insert format history bookmarks go run terminal selection debug
mute unmute muted microphone mic camera video audio share sharing screen stop start record recording
rec chat participants participant people leave end join meeting meetings call settings options
more reactions react raise hand hands breakout rooms captions transcript live host co-host cohost
you me guest presenter presenting speaker speaking admit waiting lobby security polls apps whiteboard
notes search home back forward reload close minimize maximize new open save cancel ok yes no apply
send reply copy paste cut undo redo delete menu tab tabs sign login logout log in out account
profile status online offline away busy available connected connecting reconnecting dashboard
loading error warning success done next previous page slide slides untitled document sheet
everyone all private public team teams channel channels activity calendar files zoom meet webex
google microsoft slack discord skype facetime gallery speaker view fullscreen full pin unpin
spotlight layout background blur filters effects noise suppression level volume
""".split())
_URL_RE = re.compile(r"(https?://|www\.|\.(com|org|net|io|dev|app|ai|co|edu|gov)\b|@|/|\\)", re.I)
_NAME_WORD_RE = re.compile(r"^[^\W\d_][^\W\d_'’.\-]*(?:['’.\-][^\W\d_]+)*\.?$")
_PAREN_SUFFIX_RE = re.compile(r"\s*[\(\[][^)\]]{0,20}[\)\]]\s*$")


def clean_name_candidate(line: str) -> str | None:
    """A plausible person name from one OCR line, or None (UI chrome, digits, URLs, long copy)."""
    s = " ".join((line or "").split())
    s = _PAREN_SUFFIX_RE.sub("", s).strip(" -–—:|•·,;")  # "Alice Chen (Host)" -> "Alice Chen"
    if not s or len(s) > MAX_CANDIDATE_CHARS or len(s) < 2:
        return None
    if any(ch.isdigit() for ch in s) or _URL_RE.search(s):
        return None
    if s[-1] in ".!?" and not re.search(r"\b[A-Z]\.$", s):  # sentence punctuation: copy, not a name
        return None
    words = s.split()
    if len(words) > MAX_NAME_WORDS:
        return None
    if not all(_NAME_WORD_RE.match(w) for w in words):
        return None
    if not all(w[0].isupper() for w in words):
        return None
    if len(s.replace(" ", "")) > 3 and s.isupper():  # ALL-CAPS headings / buttons
        return None
    if all(w.lower().strip(".") in UI_CHROME for w in words) or any(w.lower() in {"the", "and", "of"} for w in words):
        return None
    return s


def _frames(ocr: Iterable) -> list[tuple[int, str]]:
    out = []
    for r in ocr or []:
        ms, text = (r["ms"], r.get("text")) if isinstance(r, dict) else (r[0], r[1])
        out.append((int(ms), text or ""))
    return sorted(out)


def name_candidates(turns: Sequence[dict], ocr: Iterable, *, limit: int = MAX_CANDIDATES) -> dict[str, list[str]]:
    """Up to ``limit`` OCR name candidates per label, never applied automatically.

    A frame at ``ms`` is on screen until the next OCR'd frame (the last one until the end of the
    last turn). Each plausible-name line scores the time it is on screen during the label's turns;
    ranked by how specific it is to the label (share of its on-screen-during-speech time), then by
    that time. A line shown during more than half of every label's speech is ambient (a logo,
    a window title) unless there is only one speaker."""
    frames = _frames(ocr)
    if not frames or not turns:
        return {}
    end = max(t["t1_ms"] for t in turns)
    spans = []
    for i, (ms, text) in enumerate(frames):
        nxt = frames[i + 1][0] if i + 1 < len(frames) else max(end, ms)
        if nxt > ms:
            spans.append((ms, nxt, text))
    labels = labels_in_order(turns)
    talk = {lab: max(1, _union_ms((t["t0_ms"], t["t1_ms"]) for t in turns if t["speaker"] == lab)) for lab in labels}
    score: dict[str, dict[str, int]] = {}
    for a, b, text in spans:
        names = {n for line in text.splitlines() if (n := clean_name_candidate(line))}
        if not names:
            continue
        for t in turns:
            ov = overlap_ms(a, b, t["t0_ms"], t["t1_ms"])
            if ov:
                for n in names:
                    per = score.setdefault(n, {})
                    per[t["speaker"]] = per.get(t["speaker"], 0) + ov
    out: dict[str, list[str]] = {}
    for lab in labels:
        ranked = []
        for n, per in score.items():
            mine = per.get(lab, 0)
            if not mine:
                continue
            if len(labels) > 1 and all(per.get(x, 0) / talk[x] > 0.5 for x in labels):
                continue  # on screen through everyone's speech: not evidence for anyone
            ranked.append((-(mine / talk[lab]) / (sum(v / talk[x] for x, v in per.items())), -mine, n))
        out[lab] = [n for *_, n in sorted(ranked)[:limit]]
    return {k: v for k, v in out.items() if v}


# --------------------------------------------------------------------------- speaker names (CLI helper)

LABEL_RE = re.compile(r"^S[1-9]\d*$")


def parse_name_assignments(pairs: Iterable[str]) -> dict[str, str | None]:
    """["S1=Alice", "S2=", ...] -> {"S1": "Alice", "S2": None}; ValueError with a clear message."""
    out: dict[str, str | None] = {}
    for p in pairs:
        if "=" not in p:
            raise ValueError(f"expected LABEL=NAME (e.g. S1=Alice) or LABEL= to remove, got {p!r}")
        label, name = p.split("=", 1)
        label = label.strip().upper()
        if not LABEL_RE.match(label):
            raise ValueError(f"speaker label must look like S1, S2 ...; got {label!r}")
        name = " ".join(name.split())
        if len(name) > MAX_CANDIDATE_CHARS:
            raise ValueError(f"name for {label} is longer than {MAX_CANDIDATE_CHARS} characters")
        out[label] = name or None
    return out


def merge_names(current: dict | None, changes: dict[str, str | None]) -> dict[str, str]:
    merged = dict(current or {})
    for label, name in changes.items():
        if name is None:
            merged.pop(label, None)
        else:
            merged[label] = name
    return dict(sorted(merged.items(), key=lambda kv: _label_num(kv[0])))


# --------------------------------------------------------------------------- the stage

def _row(**kw) -> dict:
    row = {"available": False, "requested": True, "reason": None, "engine": ENGINE,
           "engine_version": engine_version(), "segmentation_model": None, "embedding_model": None,
           "requested_num_speakers": None, "detected_num_speakers": 0, "threshold": None, "elapsed_s": 0.0}
    row.update(kw)
    return row


def run_turns(wav_path: str | os.PathLike | None, *, segments: Sequence[dict], words: Sequence[dict],
              num_speakers: int | None, threshold: float | None, ocr_texts: Iterable | None = None,
              window_shift: float = WINDOW_SHIFT_RATIO) -> dict:
    """Diarize ``wav_path`` (16 kHz mono WAV; None = no audio stream) and attribute the transcript.

    Returns {"diarization": row, "turns", "speakers", "speaker_segments"}; every bad case
    (no audio, too short, silence, no models, no speech) is ``available=False`` with a reason."""
    t_start = time.perf_counter()
    n_req = int(num_speakers) if num_speakers and int(num_speakers) > 0 else None
    thr = float(threshold) if threshold is not None else 0.5
    row = _row(requested_num_speakers=n_req, threshold=None if n_req else thr)
    empty = {"turns": [], "speakers": [], "speaker_segments": []}

    def done(out: dict, **kw) -> dict:
        row.update(kw, elapsed_s=round(time.perf_counter() - t_start, 3))
        return {"diarization": row, **out}

    if wav_path is None:
        return done(empty, reason="no audio stream (video-only file)")
    from .audio import load_wav

    samples = load_wav(wav_path)
    dur_s = len(samples) / SAMPLE_RATE
    if dur_s < MIN_AUDIO_S:
        return done(empty, reason=f"audio too short to diarize ({dur_s:.2f} s; needs at least {MIN_AUDIO_S:g} s)")
    if float(abs(samples).max()) < SILENCE_PEAK:
        return done(empty, reason="no speech detected (silent audio)")
    try:
        models = resolve_models()
        row.update(segmentation_model=models.label("segmentation"), embedding_model=models.label("embedding"))
        raw = _diarize(samples, models, n_req, thr, window_shift)
    except ModelsUnavailable as e:
        return done(empty, reason=str(e))
    turns = relabel(raw)
    if not turns:
        return done(empty, reason="no speech detected")
    notes = []
    if len(labels_in_order(turns)) > 1:
        cents = _centroids(samples, turns, models)
        labs = labels_in_order(turns)
        sims = {(a, b): float(cents[a] @ cents[b]) for i, a in enumerate(labs) for b in labs[i + 1:]
                if a in cents and b in cents}
        mapping, notes = plan_merges(turns, sims)
        if mapping:
            turns = merge_labels(turns, mapping)
    detected = len(labels_in_order(turns))
    if n_req and detected < n_req:
        notes.insert(0, f"requested {n_req} speakers, {detected} distinct voice{'s' if detected != 1 else ''} found")
    elif detected == 1 and not n_req:
        notes.insert(0, "one speaker detected")
    speaker_segments = attribute_segments(segments, words, turns)
    cands = name_candidates(turns, ocr_texts or [])
    out = {"turns": turns, "speakers": roster(turns, cands), "speaker_segments": speaker_segments}
    return done(out, available=True, detected_num_speakers=detected, reason="; ".join(notes) or None)


__all__ = [
    "CODE_VERSION", "ModelsUnavailable", "ModelSpec", "DiarizationModels", "SEGMENTATION", "EMBEDDING",
    "resolve_models", "ensure_cached", "find_in_dir", "run_turns", "relabel", "merge_labels", "roster",
    "plan_merges", "attribute_words", "attribute_segments", "clean_name_candidate", "name_candidates",
    "parse_name_assignments", "merge_names",
]
