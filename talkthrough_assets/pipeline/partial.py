"""Partial generations: while a recording's ``segments`` stage runs, the transcript of the chunks
finished so far is published as a provisional manifest generation, marked ``partial`` with its covered range,
so readers (the MCP tools) can start on the first hour of a 3-hour meeting while the rest runs.

* **What it holds**: the stored probe, the wall clock when this run's ``wall_clock`` is current, and the
  transcript of the covered chunks: the longest run of chunks from the start whose results are stored
  (coverage is derived from the stored keys, as :func:`chunkstore.coverage` does; no second ledger),
  assembled by :func:`chunks.assemble`, the same code as the final tables, so the partial transcript is a
  prefix of the final one. No frames, OCR or speakers (their stages are not done).
* **Where**: the published manifest itself (``manifests/<id>.json``) with a top-level ``partial`` block
  (``covered_ms``, ``next_start_ms``, chunk counts), its search index part written first, exactly as the
  manifest stage publishes: one atomic replace, so a reader sees the partial or the final generation,
  never a mix. Successive generations of a recording always differ in byte size
  (:func:`search_index.distinct_size`), because a reader pairs a manifest with its index part by size.
* **Only when nothing final is published**: a recording that already has a finished generation keeps
  serving it until the new final one replaces it (a re-run after a setting change). A partial left by a
  killed or failed run stays marked partial (never looks final) until a re-run publishes again.
* **How often** (:class:`Publisher`): the first partial right after the first covered chunk (what an agent
  waits for: about one chunk's decoding, ~1/N of the run), then at most every :data:`EVERY_S` seconds and
  never more than :data:`MAX_SHARE` of the wall time (a publish re-tokenizes the covered transcript for the
  search index: ~0.1-0.5 s for an hour of speech). A 3-min chunk takes 15-40 s to decode on 2 cores, so
  this is about one publish per chunk or two, and an agent polling every 30 s sees each one.

No Dagster here: the segments stage's StageSpec names :func:`previews` as its ``previews`` hook, and the
scheduler (``pipeline.scheduler.run_stages``) feeds that stage's progress events to what it returns.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone
from typing import Callable

from talkthrough_assets import store
from talkthrough_assets.model.transcript import Chunk, Decoded
from talkthrough_assets.stages.segments import chunks as C
from talkthrough_assets.stages.segments import stage as chunkstore
from talkthrough_assets.model import search_index
from talkthrough_assets.stages import manifest as manifest_stage
from talkthrough_assets.model.manifest import Manifest, Partial, validate as validate_manifest
from talkthrough_assets.model.media import WallClockRow
from talkthrough_assets.stages.runner import hms, probe_row

EVERY_S = 30.0  # at most one partial generation per this many seconds of wall time (after the first)
MAX_SHARE = 0.05  # and publishing never takes more than this share of the wall time
FRAMES_PENDING = "not extracted yet: the recording is still being processed"
FINAL_STAGE = "manifest"  # the stage whose final generation a partial one stands in for


def published_kind(rid: str) -> str | None:
    """"final", "partial" or None (nothing published) for the recording's published manifest."""
    try:
        m = store.get_json(store.manifest_key(rid), None)
    except ValueError:  # damaged: a partial may replace it
        return None
    if not isinstance(m, dict):
        return None
    return "partial" if m.get("partial") else "final"


def covered_prefix(rid: str, cache: dict[str, Decoded] | None = None
                   ) -> tuple[list[Chunk], list[Chunk], list[Decoded]]:
    """(plan rows, covered rows, their results): the chunks from the first on whose results are stored and
    intact, up to the first that is not. ``cache``: results by key (content-addressed, so never stale)."""
    cache = {} if cache is None else cache
    rows = sorted(store.read_rows("chunks", rid, record=Chunk), key=lambda r: r.idx)
    got_rows, got = [], []
    for r in rows:
        res = cache.get(r.key)
        if res is None:
            blob = chunkstore.load(r.key)
            if blob is None:
                break
            try:
                res = C.unpack(blob)
            except C.CorruptChunk:
                break
            cache[r.key] = res
        got_rows.append(r)
        got.append(res)
    return rows, got_rows, got


def build(rid: str, cfg: dict, *, wall_clock: WallClockRow | None, model_label: str | None,
          cache: dict[str, Decoded] | None = None) -> Manifest | None:
    """The partial manifest of ``rid`` from what is stored now, or None when no chunk is covered yet."""
    rows, covered, results = covered_prefix(rid, cache)
    if not covered:
        return None
    end = covered[-1].t1_ms
    total = rows[-1].t1_ms
    out = C.assemble(results, covered, model_label=model_label, audio_ms=end)
    meta = out.meta
    if not out.segments:
        meta = replace(meta, reason=f"no speech in {hms(0)}-{hms(end / 1000)} so far; the rest is still being "
                                    "transcribed")
    p = probe_row(rid)
    m = manifest_stage.build(recording_id=rid, probe=p, wall_clock=wall_clock, transcript=meta,
                             segments=out.segments, words=out.words, settings=cfg,
                             frames_reason=FRAMES_PENDING if p.has_video else None)
    return replace(m, partial=marker(end, total, len(covered), len(rows),
                                     C.covered_text(rows, [r in covered for r in rows])))


def marker(end_ms: int, total_ms: int, covered: int, chunks: int, coverage: str) -> Partial:
    """The manifest's ``partial`` block: the transcript covers [0, end_ms]; ``next_start_ms`` is where it
    goes on (None once the whole audio is transcribed and only the other stages are left)."""
    return Partial(covered_ms=(0, int(end_ms)), next_start_ms=int(end_ms) if end_ms < total_ms else None,
                   audio_ms=int(total_ms), chunks_covered=covered, chunks=chunks, coverage=coverage,
                   published_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   note="provisional: the recording is still being processed; the transcript so far covers "
                        f"{hms(0)}-{hms(end_ms / 1000)} of {hms(total_ms / 1000)} (no frames or speakers yet)")


def stopped(m: Manifest, reason: str) -> Manifest:
    """Partial manifest ``m`` saying that the run producing it stopped (``reason``): a reader waits no more."""
    why = reason[:300]
    return replace(m, partial=replace(
        m.partial, stopped=why,
        note=f"the run that was processing this recording stopped ({why}); the transcript covers "
             f"{hms(0)}-{hms(m.partial.covered_ms[1] / 1000)} until it is processed again"))


def publish(rid: str, m: Manifest) -> str:
    """Publish a partial manifest as the manifest stage publishes a final one: its search index part
    first, then the manifest in one atomic replace, then the older parts go. Returns its location."""
    data = m.to_json()
    problems = validate_manifest(data)
    if problems or m.partial is None:
        raise ValueError("invalid partial manifest: " + "; ".join(problems or ["no partial block"]))
    raw = search_index.distinct_size(rid, store.json_bytes(data))
    part, _ = search_index.write_part(rid, m, raw)
    path = store.put_bytes(store.manifest_key(rid), raw)
    search_index.drop_parts(rid, keep=part)
    return path


class Publisher:
    """Publishes partial generations of one recording during one run, after the chunks it is told about
    (:meth:`chunk_done`), at the rate described in the module docstring. ``wall_clock()``: the stored wall
    clock row when this run's is current, else None. Never raises: a failed publish costs only the preview
    (``errors`` counts them)."""

    def __init__(self, rid: str, cfg: dict, *, wall_clock: Callable[[], WallClockRow | None],
                 clock: Callable[[], float] = time.monotonic):
        from talkthrough_assets.store.models import resolve_whisper

        self.rid, self.cfg, self.wall_clock, self.clock = rid, cfg, wall_clock, clock
        try:
            self.enabled = published_kind(rid) != "final"
            self.label = resolve_whisper(cfg.get("whisper_model"))[1] if self.enabled else None
        except Exception:  # noqa: BLE001 - no previews, the run goes on
            self.enabled, self.label = False, None
        self.cache: dict[str, Decoded] = {}
        self.last_at: float | None = None
        self.cost_s = 0.0
        self.covered_ms = -1
        self.published = 0
        self.errors = 0
        self.last_error: str | None = None

    def due(self) -> bool:
        if not self.enabled:
            return False
        if self.last_at is None:
            return True
        return self.clock() - self.last_at >= max(EVERY_S, self.cost_s / MAX_SHARE)

    def chunk_done(self) -> bool:
        """Publish a partial generation now if one is due and it covers more than the last; True if it did."""
        if not self.due():
            return False
        t0 = self.clock()
        try:
            m = build(self.rid, self.cfg, wall_clock=self.wall_clock(), model_label=self.label, cache=self.cache)
            if m is None or m.partial.covered_ms[1] <= self.covered_ms:
                return False
            publish(self.rid, m)
        except Exception as e:  # noqa: BLE001 - a preview never breaks the run
            self.errors += 1
            self.last_error = f"{type(e).__name__}: {e}"[:300]
            return False
        self.covered_ms = m.partial.covered_ms[1]
        self.last_at = self.clock()
        self.cost_s = self.last_at - t0
        self.published += 1
        return True

    def stopped(self, reason: str) -> bool:
        """The run ends without its final generation (a stage failed, it was stopped): when it published a
        partial one, publish it once more saying so (``partial.stopped``), so a reader does not wait for more;
        True if it did. A run killed outright cannot: its partial stays as it was, marked partial."""
        if not self.enabled or not self.published:
            return False
        try:
            m = build(self.rid, self.cfg, wall_clock=self.wall_clock(), model_label=self.label, cache=self.cache)
            if m is None:
                return False
            publish(self.rid, stopped(m, reason))
            return True
        except Exception as e:  # noqa: BLE001 - a preview never breaks the run
            self.errors += 1
            self.last_error = f"{type(e).__name__}: {e}"[:300]
            return False


class RunPreviews:
    """The partial generations of one run (:func:`previews`): the scheduler calls :meth:`progressed` on each
    progress report of the segments stage and :meth:`ended` once the run ends, however it ends."""

    def __init__(self, publisher: Publisher):
        self.publisher = publisher

    def progressed(self) -> None:
        self.publisher.chunk_done()  # a partial generation of the transcript so far, when one is due

    def ended(self, done: set[str], reason: str) -> None:
        if FINAL_STAGE not in done:  # its partial generation says the run stopped
            self.publisher.stopped(reason)


def previews(rid: str, settings: Callable[[], dict], selected: list[str], done: set[str]) -> RunPreviews | None:
    """The segments stage's StageSpec ``previews`` hook: the partial generations of a run that publishes the
    manifest (None otherwise; ``settings()``: the recording's effective settings); its wall clock only once this
    run's is current (not selected: current already; selected: once done)."""
    if FINAL_STAGE not in selected:
        return None

    def wall_clock() -> WallClockRow | None:
        current = "wall_clock" not in selected or "wall_clock" in done
        return store.read_one("wall_clock", rid, record=WallClockRow) if current else None

    return RunPreviews(Publisher(rid, settings(), wall_clock=wall_clock))
