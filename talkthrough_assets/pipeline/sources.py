"""A recording's source files: registering a path that holds its bytes (aliases accumulate) and the names a
person knows it by."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from talkthrough_assets import store
from talkthrough_assets.model.media import Source


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def register_source(path: str | Path, recording_id: str) -> Source:
    """Record that ``path`` holds the bytes of ``recording_id`` (aliases accumulate)."""
    p = Path(path).resolve()
    st = p.stat()
    stored = store.read_rows("sources", recording_id, record=Source)
    first_seen = next((r.seen_at for r in stored if r.path == str(p)), None)  # kept: the order is first sight
    rows = [r for r in stored if r.path != str(p)]
    row = Source(path=str(p), filename=p.name, size_bytes=st.st_size, mtime=st.st_mtime, seen_at=first_seen or now())
    if first_seen and row in stored:
        return row  # seen before as it is: nothing written (a read-only data root still serves it)
    store.write_table("sources", recording_id, rows + [row])
    return row


def recording_names(rid: str) -> list[str]:
    """The file names of a recording's registered copies, first registered first: the first is the name a
    person knows it by (the run tag, every stage's metadata), the others are its aliases."""
    rows = store.read_rows("sources", rid, record=Source) if store.has_partition("sources", rid) else []
    return list(dict.fromkeys(r.filename for r in sorted(rows, key=lambda r: r.seen_at)))


def recording_filename(rid: str) -> str | None:
    """The name the recording was first registered under (a later copy under another name is an alias)."""
    names = recording_names(rid)
    return names[0] if names else None
