"""Watched drop folder: decide, tick by tick, which files are new, stable and worth a run.

Rules
* A file is hashed only after its (size, mtime) is unchanged across two ticks: a file still
  being copied is never hashed or processed.
* Hashing is bounded per tick (files and seconds), so a tick stays far below Dagster's 60 s
  sensor limit; the rest waits for the next tick.
* What a tick knows about the folder is a :class:`DropState`: the files already handled and the
  files seen once, each as an 8-byte fingerprint of (path, size, mtime). Unchanged handled files
  are never re-hashed; 10 000 seen files cost one ``os.scandir`` walk and a set lookup each.
* The same bytes under a second name add no second partition: the path is recorded as an alias.
* Non-media files are skipped once, with a reason.
* A stable file that the stages' fast checks refuse (empty, not media, no stream: ``preflight.refusal``) is no
  recording, whatever its bytes: it is never registered, nor taken for an alias of another file with the same
  bytes (every empty file has the same id). Each such file gets a run of its own, keyed by the file, that fails
  with the reason and the file's name (:class:`Refused`), so two empty files are two failed runs.
* A zero-byte file may be a copy that has not started writing: it waits, but only for
  ``zero_wait_s`` (default :data:`ZERO_WAIT_S`) and at least two ticks. If it is still empty and
  unchanged after that it is released like any stable file, and refused (``empty file (0 bytes)``)
  instead of waiting forever.
* Every tick has a one-line :attr:`TickResult.message` with its counts and the files it waits on
  (and why): the sensor's skip reason / log line.

Where the state lives (the sensor): :func:`tick` only proposes the next state, and nothing is
written to the folder's history until the sensor returns it. The sensor cursor names the state
(``{"v": 2, "dir": <folder key>, "state": <digest>}``, under 100 bytes whatever the folder's size:
Dagster copies the cursor into every tick it keeps, skipped ticks included, 7 days of them by
default). The state itself is an immutable file named by its content digest, on this machine,
written by :func:`commit` just before the sensor returns the cursor with its run requests. So a
file is done only once the run request it earned is returned with that cursor: an evaluation that
raises, a file that vanished before it was registered, or a cursor the daemon did not store, all
leave the previous state in force, and the file is looked at again. A missing state file (another
machine, a wiped data root) means an empty state: files are hashed again and come back as aliases
of their known partitions, never as second runs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from talkthrough_assets.core import config
from talkthrough_assets import store
from talkthrough_assets.core.ids import recording_id
from talkthrough_assets.stages.turns.labels import parse_num_speakers
from talkthrough_assets.stages.probe import MEDIA_EXTS

STATE_VERSION = 2
ZERO_WAIT_S = 60.0     # a zero-byte file waits this long (4 ticks at the sensor's 15 s) before its run
MESSAGE_MAX_FILES = 10  # waiting files named in a tick's message; the rest are counted
FINGERPRINT_BYTES = 8   # per file in the state: 10 000 files = 80 KB raw, ~107 KB in the state file
KEEP_STATES_S = 600.0   # superseded state files older than this are removed (the committed one never)


def fingerprint(rel: str, size: int, mtime_ns: int) -> bytes:
    """(path relative to the folder, size, mtime) -> 8 bytes; a changed file gets a new one."""
    return hashlib.blake2b(f"{rel}\0{size}\0{mtime_ns}".encode(), digest_size=FINGERPRINT_BYTES).digest()


@dataclass
class DropState:
    """What the drop folder's history says: ``done`` (handled: run requested, alias recorded or skipped),
    ``pending`` (seen once with this size and mtime: stable if still so next tick) and ``empty``
    (zero-byte files: when they were first seen empty). Fingerprints, see :func:`fingerprint`."""

    done: set[bytes] = field(default_factory=set)
    pending: set[bytes] = field(default_factory=set)
    empty: dict[bytes, float] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        def pack(fps) -> str:
            return base64.b64encode(b"".join(sorted(fps))).decode()

        return json.dumps({"v": STATE_VERSION, "done": pack(self.done), "pending": pack(self.pending),
                           "empty": {fp.hex(): since for fp, since in sorted(self.empty.items())}},
                          separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> DropState:
        d = json.loads(data)
        if d.get("v") != STATE_VERSION:
            return cls()

        def unpack(s: str) -> set[bytes]:
            raw = base64.b64decode(s)
            return {raw[i:i + FINGERPRINT_BYTES] for i in range(0, len(raw), FINGERPRINT_BYTES)}

        return cls(done=unpack(d["done"]), pending=unpack(d["pending"]),
                   empty={bytes.fromhex(k): float(v) for k, v in d["empty"].items()})

    def digest(self) -> str:
        return hashlib.sha256(self.to_bytes()).hexdigest()[:16]


@dataclass(frozen=True)
class Refused:
    """A stable file the stages' fast checks refuse: its content id (the partition its failed run is recorded
    under), its path, the refusing stage and reason, and a key of this version of the file (its run's key)."""

    rid: str
    path: str
    stage: str
    reason: str
    key: str


@dataclass
class TickResult:
    new: list[tuple[str, str]] = field(default_factory=list)  # (recording id, path) to process
    aliases: list[tuple[str, str]] = field(default_factory=list)  # (id, path) same bytes, other name
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason), reported once
    waiting: list[str] = field(default_factory=list)  # still changing, or over this tick's hash budget
    hashed: int = 0
    seen: int = 0
    why_waiting: dict[str, str] = field(default_factory=dict)  # path -> short reason
    refused: list[Refused] = field(default_factory=list)  # never registered; a failed run each
    root: str = ""
    state: DropState = field(default_factory=DropState)  # the proposed next state (see commit)
    done_now: dict[str, bytes] = field(default_factory=dict)  # path -> fingerprint, hashed this tick

    @property
    def message(self) -> str:
        """One line: counts, then each waiting file with its reason (first MESSAGE_MAX_FILES)."""
        head = (f"seen {self.seen}, hashed {self.hashed}, new {len(self.new)}, aliases {len(self.aliases)}, "
                f"refused {len(self.refused)}, waiting {len(self.waiting)}")
        if self.refused:
            head += "; refused (a failed run each): " + ", ".join(
                f"{self._name(r.path)} ({r.stage}: {r.reason})" for r in self.refused[:MESSAGE_MAX_FILES])
        if not self.waiting:
            return head
        named = [f"{self._name(p)} ({self.why_waiting.get(p, 'waiting')})" for p in self.waiting[:MESSAGE_MAX_FILES]]
        more = len(self.waiting) - len(named)
        return head + ": " + ", ".join(named) + (f" and {more} more" if more > 0 else "")

    def _name(self, path: str) -> str:
        try:
            return os.path.relpath(path, self.root) if self.root else path
        except ValueError:
            return path

    def retry(self, path: str, why: str) -> None:
        """Not done after all (it vanished before it could be registered): looked at again next tick."""
        fp = self.done_now.pop(path, None)
        if fp is not None:
            self.state.done.discard(fp)
        self.new = [(r, p) for r, p in self.new if p != path]
        self.aliases = [(r, p) for r, p in self.aliases if p != path]
        self.refused = [r for r in self.refused if r.path != path]
        self.waiting.append(path)
        self.why_waiting[path] = why


def folder_key(drop_dir: str | os.PathLike) -> str:
    return hashlib.sha256(str(Path(drop_dir).expanduser().resolve()).encode()).hexdigest()[:12]


def _states_dir(drop_dir: str | os.PathLike) -> Path:
    return store.dropdir_state_dir(folder_key(drop_dir))


def load(drop_dir: str | os.PathLike, cursor: str | None) -> DropState:
    """The state the committed ``cursor`` names (empty: no cursor, another folder, or its file is gone)."""
    try:
        c = json.loads(cursor) if cursor else {}
    except ValueError:
        c = {}
    if c.get("v") != STATE_VERSION or c.get("dir") != folder_key(drop_dir) or not c.get("state"):
        return DropState()
    try:
        return DropState.from_bytes((_states_dir(drop_dir) / f"{c['state']}.json").read_bytes())
    except (OSError, ValueError, KeyError):
        return DropState()


def commit(drop_dir: str | os.PathLike, state: DropState, cursor: str | None = None) -> str:
    """Write ``state`` (an immutable file named by its digest) and return the cursor naming it. The
    state is in force once the sensor returns that cursor. Superseded files are removed after
    :data:`KEEP_STATES_S`; the one ``cursor`` (the committed one) names is always kept."""
    folder = _states_dir(drop_dir)
    digest = state.digest()
    path = folder / f"{digest}.json"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        store.atomic_write_bytes(path, state.to_bytes())
    try:
        committed = json.loads(cursor).get("state") if cursor else None
    except ValueError:
        committed = None
    now = time.time()
    for old in folder.glob("*.json"):
        if old.stem not in (digest, committed):
            try:
                if now - old.stat().st_mtime > KEEP_STATES_S:
                    old.unlink()
            except FileNotFoundError:
                pass
    return json.dumps({"v": STATE_VERSION, "dir": folder_key(drop_dir), "state": digest}, separators=(",", ":"))


def _walk(root: Path):
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    if e.name.startswith("."):
                        continue
                    if e.is_dir(follow_symlinks=False):
                        stack.append(Path(e.path))
                    elif e.is_file(follow_symlinks=False):
                        st = e.stat()
                        yield e.path, st.st_size, st.st_mtime_ns
        except FileNotFoundError:
            continue


def tick(drop_dir: str | os.PathLike, *, known_ids: set[str], state: DropState | None = None,
         exts: set[str] | None = None, max_hash_files: int = 16, max_hash_seconds: float = 20.0,
         zero_wait_s: float = ZERO_WAIT_S, refuse: Callable[[str], tuple[str, str] | None] | None = None
         ) -> TickResult:
    """One look at the folder, from ``state`` (None: nothing known yet). Writes nothing: the next
    state is ``result.state``, in force once committed (:func:`commit`). ``known_ids``: partitions
    that exist. ``refuse(path)``: (stage, reason) when a stable file is no recording (default: the stages'
    fast checks, ``preflight.refusal``)."""
    if refuse is None:
        from talkthrough_assets.pipeline.preflight import refusal as refuse
    root = Path(drop_dir).expanduser()
    exts = {e.lower() if e.startswith(".") else f".{e.lower()}" for e in (exts or MEDIA_EXTS)}
    res = TickResult(root=str(root))
    now = time.time()
    prev = state or DropState()
    nxt = res.state

    def wait(path: str, why: str) -> None:
        res.waiting.append(path)
        res.why_waiting[path] = why

    if not root.is_dir():
        res.skipped.append((str(root), "drop folder does not exist"))
        res.state = prev
        return res
    t0 = time.perf_counter()
    for path, size, mtime_ns in _walk(root):
        res.seen += 1
        fp = fingerprint(os.path.relpath(path, root), size, mtime_ns)
        if fp in prev.done:
            nxt.done.add(fp)
            continue  # already handled, unchanged: no hash
        if Path(path).suffix.lower() not in exts:
            nxt.done.add(fp)
            res.skipped.append((path, f"not a media file extension ({Path(path).suffix or 'none'})"))
            continue
        if not _stable(path, size, fp, prev, nxt, now, zero_wait_s, wait):
            continue
        if res.hashed >= max_hash_files or time.perf_counter() - t0 > max_hash_seconds:
            if size == 0:  # still stable next tick: hashed then
                nxt.empty[fp] = prev.empty[fp]
            else:
                nxt.pending.add(fp)
            wait(path, "over this tick's hashing budget")
            continue
        try:
            rid = recording_id(path)
        except OSError:  # vanished between listing and hashing: forgotten, first sight if it returns
            continue
        _sort(res, rid, path, fp, known_ids, refuse)
    return res


def _stable(path: str, size: int, fp: bytes, prev: DropState, nxt: DropState, now: float, zero_wait_s: float,
            wait: Callable[[str, str], None]) -> bool:
    """Whether the file may be hashed this tick: unchanged since the previous one (a copy in progress is never
    hashed), or empty for ``zero_wait_s`` and two ticks. Otherwise it waits, noted in ``nxt`` with why."""
    if size == 0:  # empty: a copy may be starting, but not forever
        same = fp in prev.empty
        since = prev.empty[fp] if same else now
        left = zero_wait_s - (now - since)
        if not same or left > 0:
            nxt.empty[fp] = since
            wait(path, f"empty, 0 bytes; run in {max(left, 0):.0f} s if it stays empty")
            return False
    elif fp not in prev.pending:
        nxt.pending.add(fp)
        wait(path, "new or still being written")  # first sight or still changing: wait for a stable tick
        return False
    return True


def _sort(res: TickResult, rid: str, path: str, fp: bytes, known_ids: set[str],
          refuse: Callable[[str], tuple[str, str] | None]) -> None:
    """A hashed file is done: refused (no recording, whatever its bytes), an alias (bytes already known) or new."""
    refused = refuse(path)
    if refused and not os.path.exists(path):
        return  # vanished after hashing: forgotten, first sight if it returns
    res.hashed += 1
    res.state.done.add(fp)
    res.done_now[path] = fp
    if refused:
        res.refused.append(Refused(rid, path, *refused, key=fp.hex()))
    elif rid in known_ids or any(rid == r for r, _ in res.new):
        res.aliases.append((rid, path))
    else:
        res.new.append((rid, path))


def register(drop_dir: str | os.PathLike, res: TickResult) -> list[tuple[str, str]]:
    """Record the tick's new files and aliases as sources; return the (id, path) pairs that now deserve a run
    (the drop folder's settings go with that run, :func:`settings_from_env`). A file that cannot be recorded (it
    vanished after hashing) is taken out of ``res`` and of its proposed state (:meth:`TickResult.retry`),
    so a later tick looks at it again rather than treating it as done."""
    from talkthrough_assets.pipeline import sources

    ok: list[tuple[str, str]] = []
    for rid, path in list(res.new + res.aliases):
        try:
            sources.register_source(path, rid)
        except OSError:
            res.retry(path, "vanished before it could be registered; looked at again next tick")
            continue
        if (rid, path) in res.new:
            ok.append((rid, path))
    return ok


class Folder:
    """A drop folder watched without Dagster (tests, benchmarks): each tick starts from the state the
    previous one proposed, as if every tick's cursor were committed."""

    def __init__(self, drop_dir: str | os.PathLike):
        self.drop_dir = drop_dir
        self.state: DropState | None = None

    def tick(self, **kw) -> TickResult:
        res = tick(self.drop_dir, state=self.state, **kw)
        self.state = res.state
        return res


def parse_exts(value: str | None) -> set[str] | None:
    if not value:
        return None
    return {e.strip() for e in value.split(",") if e.strip()}


def settings_from_env() -> dict:
    """Per-recording overrides the drop folder applies to new files (e.g. diarize by default)."""
    out = {}
    if config.get("TALKTHROUGH_DROP_DIARIZE"):
        out["diarize"] = True
    if config.is_set("TALKTHROUGH_DROP_NUM_SPEAKERS"):
        out["num_speakers"] = parse_num_speakers(config.get("TALKTHROUGH_DROP_NUM_SPEAKERS"))
    return out


__all__ = ["tick", "register", "load", "commit", "Folder", "DropState", "Refused", "TickResult", "ZERO_WAIT_S",
           "parse_exts", "settings_from_env"]
