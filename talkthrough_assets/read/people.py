"""list_recordings(person=...): the recordings where a person speaks, by a name a person confirmed,
a name applied from a voice match, or a voice match only (each label says which)."""

from __future__ import annotations

from talkthrough_assets.read.args import SPEAKER_MAX_CHARS, limit_arg, text_arg
from talkthrough_assets.read.errors import InvalidArgument
from talkthrough_assets.read.listing import PersonLabel, RecordingList
from talkthrough_assets.read.transcript import name_matches, voice_hints

PAGE = 100


def who(snap, person: str) -> list[PersonLabel]:
    """The labels of ``person`` in ``snap``, each ``by`` "confirmed", "voice" or "voice match 0.86 to ..."."""
    want = " ".join(person.casefold().split())
    out = [PersonLabel(speaker=lab, by=snap.name_sources.get(lab, "confirmed"))
           for lab, name in sorted(snap.names.items()) if name_matches(name, want)]
    hints = voice_hints(snap)
    out += [PersonLabel(speaker=lab, by=hints[lab]) for lab, m in sorted(snap.voice_hints.items())
            if lab not in snap.names and name_matches(m.person, want)]
    return out


def list_by_person(reader, person: str, offset: int, limit: int, since: str | None = None,
                   until: str | None = None, tz: str | None = None) -> RecordingList:
    """The listing narrowed to recordings where ``person`` speaks (reads each diarized recording's snapshot)."""
    person = text_arg("person", person, SPEAKER_MAX_CHARS, required=True)
    limit = limit_arg("limit", limit, 1, PAGE)
    if not person.strip():
        raise InvalidArgument("person must be a non-empty name", hint="pass a person's name, e.g. 'Alice'")
    items, at, first = [], 0, None
    while at is not None:
        page = reader.list_recordings(offset=at, limit=PAGE, since=since, until=until, tz=tz)
        first = first or page
        for item in page.recordings:
            if item.diarized:
                found = who(reader.snapshot(item.id), person)
                if found:
                    items.append(item.model_copy(update={"person": found}))
        at = page.next_offset
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidArgument(f"offset must be an integer >= 0, got {offset!r}",
                              hint="pass next_offset from the previous page, or omit it")
    page = items[offset: offset + limit]
    nxt = offset + len(page)
    out = RecordingList(total=len(items), offset=offset, limit=limit, returned=len(page), recordings=page,
                        next_offset=nxt if nxt < len(items) else None)
    if first and first.index:
        out.index = first.index
    return out
