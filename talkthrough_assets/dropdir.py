"""Watched drop folder: decide, tick by tick, which files are new, stable and worth a run.

Rules
* A file is hashed only after its (size, mtime) is unchanged across two ticks: a file still
  being copied is never hashed or processed.
* Hashing is bounded per tick (files and seconds), so a tick stays far below Dagster's 60 s
  sensor limit; the rest waits for the next tick.
* A per-folder state file keyed by path -> (size, mtime) means unchanged files are never
  re-hashed; 10 000 seen files cost one ``os.scandir`` walk and a dict lookup each.
* The same bytes under a second name add no second partition: the path is recorded as an alias.
* Non-media files are skipped once, with a reason.
* A zero-byte file may be a copy that has not started writing: it waits, but only for
  ``zero_wait_s`` (default :data:`ZERO_WAIT_S`) and at least two ticks. If it is still empty and
  unchanged after that it is released like any stable file, so its run fails at ``probe`` with
  ``empty file (0 bytes)`` instead of waiting forever.
* Every tick has a one-line :attr:`TickResult.message` with its counts and the files it waits on
  (and why): the sensor's skip reason / log line.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import store
from .ids import recording_id
from .stages.probe import MEDIA_EXTS

STATE_VERSION = 1
ZERO_WAIT_S = 60.0     # a zero-byte file waits this long (4 ticks at the sensor's 15 s) before its run
MESSAGE_MAX_FILES = 10  # waiting files named in a tick's message; the rest are counted


@dataclass
class TickResult:
    new: list[tuple[str, str]] = field(default_factory=list)  # (recording id, path) to process
    aliases: list[tuple[str, str]] = field(default_factory=list)  # (id, path) same bytes, other name
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason), reported once
    waiting: list[str] = field(default_factory=list)  # still changing, or over this tick's hash budget
    hashed: int = 0
    seen: int = 0
    why_waiting: dict[str, str] = field(default_factory=dict)  # path -> short reason
    empty: list[str] = field(default_factory=list)  # zero-byte paths released this tick (in new/aliases)
    root: str = ""

    @property
    def message(self) -> str:
        """One line: counts, then each waiting file with its reason (first MESSAGE_MAX_FILES)."""
        head = (f"seen {self.seen}, hashed {self.hashed}, new {len(self.new)}, aliases {len(self.aliases)}, "
                f"waiting {len(self.waiting)}")
        if self.empty:
            head += "; released after waiting while empty (their runs fail: empty file (0 bytes)): " + ", ".join(
                self._name(p) for p in self.empty)
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


def _state_path(drop_dir: Path) -> Path:
    key = hashlib.sha256(str(drop_dir.resolve()).encode()).hexdigest()[:12]
    return store.home() / "state" / f"dropdir-{key}.json"


def load_state(drop_dir: Path) -> dict:
    st = store.read_json(_state_path(drop_dir), None)
    if not st or st.get("version") != STATE_VERSION:
        return {"version": STATE_VERSION, "files": {}}
    return st


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
                        yield e.path, st.st_size, st.st_mtime
        except FileNotFoundError:
            continue


def tick(drop_dir: str | os.PathLike, *, known_ids: set[str], exts: set[str] | None = None,
         max_hash_files: int = 16, max_hash_seconds: float = 20.0, zero_wait_s: float = ZERO_WAIT_S) -> TickResult:
    """One sensor evaluation; persists the per-path state. ``known_ids``: partitions that exist."""
    root = Path(drop_dir).expanduser()
    exts = {e.lower() if e.startswith(".") else f".{e.lower()}" for e in (exts or MEDIA_EXTS)}
    res = TickResult(root=str(root))
    now = time.time()

    def wait(path: str, why: str) -> None:
        res.waiting.append(path)
        res.why_waiting[path] = why

    if not root.is_dir():
        res.skipped.append((str(root), "drop folder does not exist"))
        return res
    state = load_state(root)
    files: dict = state["files"]
    present = set()
    t0 = time.perf_counter()
    for path, size, mtime in _walk(root):
        present.add(path)
        res.seen += 1
        prev = files.get(path)
        if prev and prev["size"] == size and prev["mtime"] == mtime and prev["status"] in ("done", "skipped"):
            continue  # already handled, unchanged: no hash
        if Path(path).suffix.lower() not in exts:
            files[path] = {"size": size, "mtime": mtime, "status": "skipped"}
            res.skipped.append((path, f"not a media file extension ({Path(path).suffix or 'none'})"))
            continue
        if size == 0:  # empty: a copy may be starting, but not forever
            same = prev is not None and prev["size"] == 0 and prev["mtime"] == mtime
            since = float(prev.get("empty_since", now)) if same else now
            files[path] = {"size": size, "mtime": mtime, "status": "pending", "empty_since": since}
            left = zero_wait_s - (now - since)
            if not same or left > 0:
                wait(path, f"empty, 0 bytes; run in {max(left, 0):.0f} s if it stays empty")
                continue
        elif not prev or prev["size"] != size or prev["mtime"] != mtime:
            files[path] = {"size": size, "mtime": mtime, "status": "pending"}
            wait(path, "new or still being written")  # first sight or still changing: wait for a stable tick
            continue
        if res.hashed >= max_hash_files or time.perf_counter() - t0 > max_hash_seconds:
            wait(path, "over this tick's hashing budget")
            continue
        try:
            rid = recording_id(path)
        except OSError:  # vanished between listing and hashing
            files.pop(path, None)
            continue
        res.hashed += 1
        files[path] = {"size": size, "mtime": mtime, "status": "done", "id": rid}
        if size == 0:
            res.empty.append(path)
        if rid in known_ids or any(rid == r for r, _ in res.new):
            res.aliases.append((rid, path))
        else:
            res.new.append((rid, path))
    for gone in set(files) - present:
        del files[gone]
    store.atomic_write_json(_state_path(root), state)
    return res


def register(drop_dir: str | os.PathLike, res: TickResult, overrides: dict | None = None) -> list[tuple[str, str]]:
    """Record the tick's new files and aliases as sources (and give new recordings the drop folder's
    settings); return the (id, path) pairs that now deserve a run. A file that cannot be recorded (it
    vanished after hashing) gets its state cleared instead, so a later tick looks at it again rather
    than treating it as done."""
    from .pipeline import register_source
    from .settings import save_overrides

    ok: list[tuple[str, str]] = []
    failed: list[str] = []
    for rid, path in res.new + res.aliases:
        try:
            register_source(path, rid)
        except OSError:
            failed.append(path)
            continue
        if (rid, path) in res.new:
            if overrides:
                save_overrides(rid, overrides)
            ok.append((rid, path))
    if failed:
        root = Path(drop_dir).expanduser()
        state = load_state(root)
        for path in failed:
            state["files"].pop(path, None)
            res.waiting.append(path)
            res.why_waiting[path] = "vanished before it could be registered; looked at again next tick"
        store.atomic_write_json(_state_path(root), state)
    return ok


def parse_exts(value: str | None) -> set[str] | None:
    if not value:
        return None
    return {e.strip() for e in value.split(",") if e.strip()}


def settings_from_env() -> dict:
    """Per-recording overrides the drop folder applies to new files (e.g. diarize by default)."""
    out = {}
    if os.environ.get("TALKTHROUGH_DROP_DIARIZE", "").lower() in {"1", "true", "yes", "on"}:
        out["diarize"] = True
    if os.environ.get("TALKTHROUGH_DROP_NUM_SPEAKERS"):
        out["num_speakers"] = int(os.environ["TALKTHROUGH_DROP_NUM_SPEAKERS"])
    return out


__all__ = ["tick", "register", "TickResult", "ZERO_WAIT_S", "load_state", "parse_exts", "settings_from_env"]
