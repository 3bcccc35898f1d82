"""The search tool: BM25 over the library index (:mod:`.index`), AND of the query's words first and
OR-ranked when no document has them all, OCR terms that merely contain a word at half weight, typo
suggestions, and hits as pointers (recording, source, t_ms, t_wall, on-screen frame, a short snippet),
trimmed to a character budget. Ranking and hit context come from one view of the index."""

from __future__ import annotations

import re
from typing import Callable

from talkthrough_assets.model import terms as terms_stage
from talkthrough_assets.model.wallclock import t_wall

from talkthrough_assets.read import snapshot
from talkthrough_assets.read.args import SPEAKER_MAX_CHARS, clip, dumps, limit_arg, text_arg
from talkthrough_assets.read.errors import InvalidArgument
from talkthrough_assets.read.index import LibraryIndex
from talkthrough_assets.read.transcript import speaker_match

# BM25 parameters (Robertson/Lucene defaults, in .index); IDF per source over all recordings.
SUBSTRING_WEIGHT = 0.5   # an OCR term that merely contains the query word counts half

SEARCH_MAX_HITS = 50
SEARCH_MAX_TERMS = 16
SEARCH_MAX_QUERY_CHARS = 500
SEARCH_MAX_CHARS = 24_000      # the whole search response
SUBSTRING_MIN_CHARS = 4
SNIPPET_CHARS = 160


def _matches(tok: str, terms: set[str]) -> bool:
    if tok in terms:
        return True
    return any(len(t) >= SUBSTRING_MIN_CHARS and t in tok for t in terms)


def snippet(text: str, terms: set[str], width: int = SNIPPET_CHARS) -> str:
    """At most ``width`` characters of ``text`` around its first word matching ``terms``
    (search terms as :func:`terms.index_terms` makes them)."""
    flat = " ".join((text or "").replace("\n", " | ").split())
    if len(flat) <= width:
        return flat
    pos = end = 0
    for m in re.finditer(r"\S+", flat):
        if any(_matches(t, terms) for t in terms_stage.index_terms(m.group())):
            pos, end = m.start(), m.end()
            break
    budget = width - 2  # room for the two ellipses
    start = max(0, min(pos - (budget - (end - pos)) // 3, len(flat) - budget))
    if start > 0:  # begin on a word boundary when one is near
        sp = flat.find(" ", start, pos)
        if sp != -1 and sp - start < 20:
            start = sp + 1
    cut = flat[start:start + budget]
    if start + budget < len(flat):
        sp = cut.rfind(" ")
        if sp > len(cut) - 20 and sp > end - start:
            cut = cut[:sp]
    out = ("…" if start > 0 else "") + cut + ("…" if start + len(cut) < len(flat) else "")
    return out[:width]


def expand(index: LibraryIndex,
           words: list[str]) -> tuple[list[tuple[str, str | None, str, float]], dict[str, list[str]]]:
    """(query word, source or None, index term, weight) pairs: every word matches itself in any
    source, and OCR terms that contain it (glued screen text like ERROR503GATEWAYTIMEOUT) at half weight."""
    pairs: list[tuple[str, str | None, str, float]] = [(w, None, w, 1.0) for w in words]
    inside: dict[str, list[str]] = {}
    for w in words:
        if len(w) < SUBSTRING_MIN_CHARS:
            continue
        rows = index.query(
            "SELECT DISTINCT term FROM m_df WHERE source = 'ocr' AND length(term) >= ? AND contains(term, ?) "
            "AND term <> ? ORDER BY term LIMIT 20", [len(w) + 3, w, w], refresh=False)
        for r in rows:
            pairs.append((w, "ocr", r["term"], SUBSTRING_WEIGHT))
            inside.setdefault(w, []).append(r["term"])
    return pairs, inside


PHRASE_CANDIDATES = 500  # AND matches fetched before a phrase filter


SPLIT_WEIGHT = 0.5       # each half of a glued query word found apart ("roll back" for "rollback")


def has_phrase(toks: list[str], phrase: list[str]) -> bool:
    """Whether the search terms ``toks`` hold ``phrase`` (search terms) adjacent and in order."""
    n = len(phrase)
    return any(toks[i:i + n] == phrase for i in range(len(toks) - n + 1))


def split_compound(index: LibraryIndex, word: str) -> tuple[str, str] | None:
    """(a, b) when ``word`` = a + b with a and b both terms of the library, each >= 3 letters
    ("rollback" -> ("roll", "back")): the spoken form of a word the transcript splits; the split whose
    rarer half is most frequent. The index cannot say whether a and b stand adjacent: search checks."""
    if len(word) < 6 or not word.isalpha():
        return None
    cands = [(word[:i], word[i:]) for i in range(3, len(word) - 2)]
    rows = index.query("SELECT term, sum(df) AS df FROM m_df WHERE term IN (SELECT unnest(?::VARCHAR[])) GROUP BY term",
                       [sorted({x for c in cands for x in c})], refresh=False)
    df = {r["term"]: r["df"] for r in rows}
    ok = [c for c in cands if c[0] in df and c[1] in df]
    return max(ok, key=lambda c: min(df[c[0]], df[c[1]])) if ok else None


def known_term(index: LibraryIndex, word: str) -> bool:
    return bool(index.query("SELECT 1 FROM m_df WHERE term = ? LIMIT 1", [word], refresh=False))


def suggest(index: LibraryIndex, word: str) -> list[str]:
    k = 1 if len(word) <= 5 else 2
    rows = index.query(
        "SELECT term FROM (SELECT term, sum(df) AS df, damerau_levenshtein(term, ?) AS dist FROM m_df "
        "WHERE length(term) BETWEEN ? AND ? GROUP BY term) WHERE dist <= ? AND dist > 0 "
        "ORDER BY dist, df DESC, term LIMIT 3", [word, len(word) - k, len(word) + k, k], refresh=False)
    return [r["term"] for r in rows]


def _named_by_voice(get_snapshot, rid: str, label: str) -> bool:
    try:
        return get_snapshot(rid).name_sources.get(label) == "voice"
    except Exception:  # noqa: BLE001 - a recording gone since the index was read: no mark
        return False


def search(get_index: Callable[[], LibraryIndex], get_snapshot: Callable[[str], snapshot.Snapshot],
           query: str, recording_id: str | None = None, limit: int = 10, speaker: str | None = None,
           window: Callable[[], dict[str, tuple[int, int]]] | None = None) -> dict:
    """The search tool's answer. ``get_index`` gives the library index (asked for only once the
    arguments are checked); ``get_snapshot`` a recording's snapshot (for a scoped search); ``window`` (after
    the refresh) the ms slice of each recording a wall-clock window covers (others: no hits)."""
    query, words = _query_words(query)
    limit = limit_arg("limit", limit, 1, SEARCH_MAX_HITS)
    speaker = text_arg("speaker", speaker, SPEAKER_MAX_CHARS, required=False)
    rid = _scope(get_snapshot, recording_id, speaker)
    index = get_index()
    index.refresh()
    # "quoted phrases": their words adjacent and in order; a glued word the library only has apart
    # ("rollback" for the spoken "roll back") searches as that phrase
    phrases = [p for p in (list(terms_stage.index_terms(q)) for q in re.findall(r'"([^"]+)"', query)) if len(p) > 1]
    split = {w: parts for w in words if (parts := split_compound(index, w))}
    fetch = PHRASE_CANDIDATES if phrases or split else limit
    pairs, inside = expand(index, words)
    for w, (a, b) in split.items():  # the word, or its two halves (kept below only when adjacent)
        pairs += [(w, None, a, SPLIT_WEIGHT), (w, None, b, SPLIT_WEIGHT)]
    who = " ".join(speaker.casefold().split()) if speaker is not None else None
    # one view of the index (swapped whole by a refresh), so ranking and hit context agree
    rows, n_all, n_any, per_word = index.view.search(pairs, len(words), rid, who, fetch,
                                                     window() if window is not None else None)
    mode = "and" if len(words) == 1 or n_all else "or"
    if phrases or split:
        rows = _phrase_filter(rows, mode, phrases, split)
        if mode == "and":
            n_all = len(rows)
        n_any = len(rows)
        rows = rows[:limit]
    shown_query, query_cut = clip(query, 200)
    out = {"query": shown_query, "terms": words, "mode": mode, "scope": rid or "all recordings",
           "total_matches": n_all if mode == "and" else n_any, "returned": 0, "hits": []}
    if query_cut:
        out["query_truncated"] = True
    if phrases:
        out["phrases"] = [" ".join(p) for p in phrases]
        if n_all >= PHRASE_CANDIDATES:
            out["note_phrases"] = f"phrase matches counted among the best {PHRASE_CANDIDATES} candidates"
    if split:
        out["split_words"] = {w: " ".join(p) for w, p in split.items()}
    warming = index.warming()
    if warming:  # answered from the recordings indexed so far
        out["index"] = warming
    if speaker is not None:
        out["speaker"] = speaker
    _add_hits(out, rows, words, mode, get_snapshot)
    _add_notes(out, words, per_word, bool(rows), phrases, speaker, rid, window is not None)
    if inside:
        out["ocr_substring_matches"] = {w: ts[:5] for w, ts in inside.items()}
    _add_elsewhere_and_suggestions(out, index, words, per_word, speaker, rid, window is not None)
    if len(out["hits"]) < out["total_matches"]:
        out["more"] = f"{out['total_matches'] - len(out['hits'])} more matches; raise limit (max {SEARCH_MAX_HITS}) " \
                      "or narrow with id / speaker / more words"
    return out


def _query_words(query: str) -> tuple[str, list[str]]:
    """(the query checked, its distinct search terms), or an :class:`InvalidArgument` saying what to pass."""
    query = text_arg("query", query, SEARCH_MAX_QUERY_CHARS)
    if not query.strip():
        raise InvalidArgument("query must be a non-empty string", hint="pass the words to find, e.g. 'deploy error'")
    words = list(dict.fromkeys(terms_stage.index_terms(query)))
    if not words:
        shown, _ = clip(query, 60)
        raise InvalidArgument(f"query {shown!r} has no searchable words (letters or digits; one-letter words "
                              "are not indexed)", hint="pass words of two or more letters or digits")
    if len(words) > SEARCH_MAX_TERMS:
        raise InvalidArgument(f"query has {len(words)} distinct words; use at most {SEARCH_MAX_TERMS}",
                              hint="keep the words that matter most")
    return query, words


def _scope(get_snapshot: Callable[[str], snapshot.Snapshot], recording_id: str | None,
           speaker: str | None) -> str | None:
    """The one recording searched (its speaker checked against its labels and names), or None: all."""
    if recording_id is None:
        return None
    snap = get_snapshot(recording_id)
    if speaker is not None:
        if not snap.diarized:
            raise InvalidArgument(f"recording {snap.rid} is not diarized, so it has no speaker labels",
                                  hint="drop `speaker`, or reprocess with `talkthrough process --diarize`")
        speaker_match(snap, speaker)
    return snap.rid


def _phrase_filter(rows: list[dict], mode: str, phrases: list[list[str]],
                   split: dict[str, tuple[str, str]]) -> list[dict]:
    """The rows holding every quoted phrase (AND mode only), and each split word itself or its halves adjacent."""
    def keep(r) -> bool:
        toks = terms_stage.index_terms(r["text"] or "")
        if phrases and not (mode == "and" and all(has_phrase(toks, p) for p in phrases)):
            return False  # every quoted phrase, in one document
        return all(any(w in t for t in toks) or has_phrase(toks, list(split[w]))
                   for w in r["terms"] if w in split)  # a split word: itself, or its halves adjacent
    return [r for r in rows if keep(r)]


def _add_hits(out: dict, rows: list[dict], words: list[str], mode: str,
              get_snapshot: Callable[[str], snapshot.Snapshot]) -> None:
    """The rows as hits (and their recordings once each) while the answer stays within its character budget."""
    wanted = set(words)
    recs: dict[str, dict] = {}
    used = len(dumps(out)) + 900  # room for the notes added below
    for r in rows:
        wc = {"start_utc": r["recorded_at"], "tz_offset_min": r["tz_offset_min"]} if r["recorded_at"] else None
        hit = {"recording": r["recording"], "source": r["source"],
               "t_ms": int(r["t_ms"]), "t_wall": t_wall(wc, r["t_ms"]), "frame_ms": r["frame_ms"],
               "score": round(float(r["score"]), 3), "snippet": snippet(r["text"] or "", wanted)}
        if r["speaker"]:
            hit["speaker"] = r["speaker"]
            if r["speaker_name"]:
                hit["speaker_name"] = r["speaker_name"]
                if _named_by_voice(get_snapshot, r["recording"], r["speaker"]):
                    hit["speaker_name_by"] = "voice"  # applied from a voice match, not confirmed
        if mode == "or":
            hit["matched"] = sorted(r["terms"], key=words.index)
        # filename and generation once per recording, not on every hit
        rec = None if r["recording"] in recs else {"filename": r["filename"], "generation": r["generation"]}
        if rec is not None and r.get("partial_to_ms") is not None:  # a run in progress: its transcript so far
            rec.update(snapshot.marking(r["partial_to_ms"], r.get("partial_next_ms")).dump())
            rec.pop("partial_note")
        size = len(dumps(hit)) + 1 + (len(dumps(rec)) + 22 if rec else 0)
        if out["hits"] and used + size > SEARCH_MAX_CHARS:
            break
        out["hits"].append(hit)
        if rec:
            recs[r["recording"]] = rec
        used += size
    out["recordings"] = recs
    if any(rec.get("partial") for rec in recs.values()):
        out["partial_note"] = ("hits in recordings marked partial come from a run still in progress (its transcript "
                               "so far, up to covered_ms): search again later for the rest")
    out["returned"] = len(out["hits"])


def _add_notes(out: dict, words: list[str], per_word: dict[str, int], any_rows: bool,
               phrases: list[list[str]], speaker: str | None, rid: str | None, windowed: bool) -> None:
    """Why nothing matched, or that the hits are OR-ranked and which words matched."""
    matched = [w for w in words if per_word.get(w)]
    missing = [w for w in words if not per_word.get(w)]
    if not any_rows and phrases and per_word and all(per_word.get(w) for w in words):
        out["note"] = (f"no transcript segment or OCR frame holds {', '.join(repr(' '.join(p)) for p in phrases)} "
                       "(words adjacent, in order); drop the quotes to find the words apart")
    elif not any_rows:
        out["note"] = f"no transcript segment or OCR frame contains {', '.join(repr(w) for w in words)}" + (
            f" said by {speaker!r}" if speaker is not None else "") + (" in that time" if windowed else "")
    elif out["mode"] == "or":
        counts = ", ".join(f"{w!r} ({per_word[w]} docs)" for w in matched)
        out["note"] = (f"no single segment or frame contains all of {', '.join(repr(w) for w in words)}; "
                       f"showing OR-ranked matches. Matched words: {counts}"
                       + (f"; not found {'in this recording' if rid else 'anywhere'}: "
                          f"{', '.join(repr(w) for w in missing)}" if missing else ""))
        out["matched_terms"] = matched
        out["unmatched_terms"] = missing


def _add_elsewhere_and_suggestions(out: dict, index: LibraryIndex, words: list[str], per_word: dict[str, int],
                                   speaker: str | None, rid: str | None, windowed: bool) -> None:
    """For each word not found: that the library has it elsewhere (outside the speaker, recording or time
    asked for), else spelling suggestions."""
    missing = [w for w in words if not per_word.get(w)]
    # a word the index has, just not here (this speaker, this recording): no spelling suggestion for it
    elsewhere = [w for w in missing if (speaker is not None or rid or windowed) and known_term(index, w)]
    if elsewhere:
        where = " and ".join(x for x in (f"said by {speaker!r}" if speaker is not None else "",
                                         "in this recording" if rid else "",
                                         "in that time" if windowed else "") if x)
        out["found_elsewhere"] = elsewhere
        out["note"] = (out.get("note", "") + f"; {', '.join(repr(w) for w in elsewhere)} occur in the library, "
                       f"but not {where}").lstrip("; ")
    missing = [w for w in missing if w not in elsewhere]
    if missing:
        sugg = {w: s for w in missing if (s := suggest(index, w))}
        if sugg:
            out["did_you_mean"] = sugg
            fixed = " ".join(sugg.get(w, [w])[0] for w in words)
            out["note"] = (out.get("note", "") + f"; did you mean: search(query={fixed!r})?").lstrip("; ")
