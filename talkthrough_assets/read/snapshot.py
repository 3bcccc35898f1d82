"""One recording's published generation, read from its manifest.

The manifest (``manifests/<id>.json``) is written by the pipeline's last stage, after every table
of that run, in one atomic ``os.replace``. It carries everything the read tools serve: media
facts, wall clock, the (speaker-attributed) transcript segments, word timestamps, diarization
turns / roster / names and every keyframe with its duplicate link and OCR text. So the read
server uses it as the per-recording generation pointer *and* snapshot: one ``open`` yields one
consistent generation across all tables, while a re-run rewrites the Parquet tables underneath
(those stay the source of truth for SQL users; the server reads only the published manifest).

A manifest with a ``partial`` block is the provisional generation of a run still in progress (the
transcript of the chunks finished so far, ``pipeline/partial.py``); :func:`partial_fields` is how every tool
marks an answer from it. A recording with no manifest has no run that got that far yet. Each published manifest is
parsed once into the typed records of ``model/manifest.py`` (:meth:`Manifest.from_json`), which every reader uses;
snapshots are cached by the file's identity (inode, size, mtime): every publish is a new inode, so a cache entry
never outlives it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from talkthrough_assets.core.errors import UsageError
from talkthrough_assets import store
from talkthrough_assets.core.errors import TalkthroughError
from talkthrough_assets.model.manifest import (FrameItem, Manifest, Partial, RecordingRow, Segment, Speaker,
                                               VoiceMatch, WallClock, recording_row)

from talkthrough_assets.read.answers import PartialMark

CACHE_SIZE = 64


class DamagedManifest(TalkthroughError, ValueError):
    """A published manifest that cannot be read (not JSON, or not a talkthrough-manifest/v1)."""


@dataclass
class Snapshot:
    """One published generation as the readers see it: the typed manifest, and the views of it every tool
    reads (time order, names in force, the listing row)."""

    rid: str
    sig: tuple
    manifest: Manifest
    rec: RecordingRow             # the listing row (what list_recordings shows)
    wall_clock: WallClock | None  # None: no anchor
    segments: list[Segment]       # time order
    words: list[tuple[int, int, str]]  # (t0_ms, t1_ms, word), time order
    frames: list[FrameItem]       # time order
    diarized: bool
    names: dict[str, str]         # speaker label -> name
    speakers: list[Speaker] = field(default_factory=list)
    turns: list[tuple[int, int, str]] = field(default_factory=list)   # (t0_ms, t1_ms, label)
    transcript_reason: str | None = None
    source_path: str | None = None
    partial: Partial | None = None  # a provisional generation of a run in progress
    name_sources: dict[str, str] = field(default_factory=dict)  # label -> "confirmed" | "voice" (applied by voice)
    voice_hints: dict[str, VoiceMatch] = field(default_factory=dict)   # label -> voice match not applied

    @property
    def generation(self) -> str:
        """A short label of this published manifest: it changes with every publish."""
        return generation_of(self.sig)


def generation_of(sig: tuple) -> str:
    return hashlib.sha256(repr(tuple(sig)).encode()).hexdigest()[:12]


def build(rid: str, m: dict | Manifest, sig: tuple = ()) -> Snapshot:
    """A snapshot from a manifest (typed, or its parsed JSON: talkthrough-manifest/v1)."""
    try:
        if not isinstance(m, Manifest):
            m = Manifest.from_json(m)
    except (TypeError, ValueError) as e:
        raise DamagedManifest(f"manifest of {rid} is not a valid talkthrough-manifest/v1 ({type(e).__name__})") from None
    tr = m.transcript
    di = tr.diarization if tr.diarization is not None and tr.diarization.available else None
    names = {str(k): str(v) for k, v in (di.speaker_names or {}).items() if v} if di else {}
    sources = {str(k): str(v) for k, v in (di.speaker_name_sources or {}).items()} if di else {}
    return Snapshot(
        rid=rid, sig=sig, manifest=m, rec=recording_row(m), wall_clock=m.wall_clock,
        segments=sorted(tr.segments, key=lambda s: (s.t0_ms, s.seq)),
        words=sorted(tr.words, key=lambda w: w[0]), frames=sorted(m.frames.items, key=lambda i: i.ms),
        diarized=di is not None, names=names, speakers=list(di.speakers) if di else [],
        turns=list(di.turns) if di else [], transcript_reason=tr.reason, source_path=m.media.path,
        partial=m.partial, name_sources={lab: sources.get(lab, "confirmed") for lab in names},
        voice_hints={str(sp.label): sp.voice_match for sp in (di.speakers if di else [])
                     if sp.voice_match is not None and not sp.voice_match.applied})


def read(rid: str, sig: tuple | None = None) -> Snapshot | None:
    """Parse the published manifest of ``rid`` (None when there is none). Locally the signature
    comes from ``fstat`` of the very file descriptor that was read, so it always describes these
    bytes; on an object store it is taken before the GET (``sig``: the caller's, just taken from a
    listing or a HEAD; else one HEAD here), so a newer object is re-read later."""
    if store.is_remote():
        sig = sig or signature(rid)
        data = store.get_bytes(store.manifest_key(rid)) if sig else None
        if data is None:
            return None
    else:
        try:
            with open(store.manifest_path(rid), "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
        except FileNotFoundError:
            return None
        sig = (st.st_ino, st.st_size, st.st_mtime_ns)
    try:
        m = Manifest.from_json_bytes(data)
    except json.JSONDecodeError:
        raise DamagedManifest(f"manifest of {rid} is not valid JSON") from None
    except (TypeError, ValueError) as e:
        raise DamagedManifest(f"manifest of {rid} is not a valid talkthrough-manifest/v1 ({type(e).__name__})") from None
    return build(rid, m, sig)


def signature(rid: str) -> tuple | None:
    return store.stamp(store.manifest_key(rid))


class SnapshotCache:
    """Parsed manifests by recording, re-read when the published file changes (LRU bounded)."""

    def __init__(self, size: int = CACHE_SIZE):
        self.size = size
        self._items: OrderedDict[str, Snapshot] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, rid: str) -> Snapshot | None:
        sig = signature(rid)
        if sig is None:
            with self._lock:
                self._items.pop(rid, None)
            return None
        with self._lock:
            snap = self._items.get(rid)
            if snap is not None and snap.sig == sig:
                self._items.move_to_end(rid)
                return snap
        snap = read(rid, sig)
        if snap is None:
            return None
        with self._lock:
            self._items[rid] = snap
            self._items.move_to_end(rid)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return snap


def partial_fields(snap: Snapshot) -> PartialMark | None:
    """What marks an answer from a partial generation: ``partial: true``, the transcript's ``covered_ms``
    ([0, end]) and ``next_start_ms`` where it ends (null once the whole audio is transcribed and only frames
    or speakers are left), and a note to come back; None for a finished generation."""
    p = snap.partial
    if p is None:
        return None
    out = marking(p.covered_ms[1], p.next_start_ms)
    if p.stopped:  # the run publishing it ended without its final generation
        out.partial_stopped = p.stopped
        out.partial_note = (f"the run processing this recording stopped ({p.stopped}): the "
                            f"transcript covers only 0-{p.covered_ms[1]} ms until it is processed "
                            "again (talkthrough process)")
    return out


def marking(covered_to_ms: int, next_start_ms: int | None) -> PartialMark:
    """The partial marking from the covered end alone (the listing and search read it from the index)."""
    rest = ("the rest of the transcript" if next_start_ms is not None else "frames and speakers")
    return PartialMark(partial=True, covered_ms=[0, int(covered_to_ms)], next_start_ms=next_start_ms,
                       partial_note=f"still being processed: the transcript so far covers 0-{int(covered_to_ms)} ms; "
                                    f"{rest} will follow: call again later (the generation label changes)")


def require_finished(snap: Snapshot) -> Snapshot:
    """``snap`` when it is a finished generation; ValueError saying what is there when it is partial (a file
    written from it, an export or a report, would look finished)."""
    if snap.partial is not None:
        raise UsageError(f"recording {snap.rid} is still being processed: only a partial transcript "
                         f"(0-{snap.partial.covered_ms[1]} ms) is published; wait for the run to finish "
                         "(MCP tools read the partial one, marked partial)")
    return snap


def finished(rid: str) -> Snapshot:
    """The finished generation of ``rid`` for a file written from it (an export, a report). ValueError that
    says which case it is: an id nothing is stored under ("unknown recording"), a
    recording with no finished run yet, or one still being processed."""
    snap = read(store.check_id(rid))
    if snap is None:
        if not store.is_known(rid):
            raise UsageError(f"unknown recording {rid}: nothing is stored under that id "
                             "(`talkthrough recordings` lists the ids)")
        raise UsageError(f"recording {rid} has no finished run (no manifest): process it first")
    return require_finished(snap)
