"""Search terms: one tokenizer for the ``terms`` table, the search index parts and MCP queries.

:func:`index_terms` (folded, glued words split, plurals folded, one-letter fragments dropped) is the
only tokenizer: the SQL ``terms`` table and the MCP search index hold the same terms."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from talkthrough_assets.model.manifest import Segment

CODE_VERSION = "2"  # 2: index_terms (plurals folded, glued words split) and first-word times
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def fold(text: str) -> str:
    """Lower-case and strip diacritics: 'Café Ünïcode' -> 'cafe unicode'."""
    decomposed = unicodedata.normalize("NFKD", text or "")
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(fold(text))


# word boundaries inside glued tokens: camelCase, HTTPServer, ERROR503 / 503GATEWAY
_GLUE = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")


def stem(token: str) -> str:
    """Light English plural folding (Harman's S-stemmer): dashboards -> dashboard, queries -> query."""
    if len(token) <= 3 or not token.isalpha():
        return token
    if token.endswith("ies") and not token.endswith(("eies", "aies")):
        return token[:-3] + "y"
    if token.endswith("es") and not token.endswith(("aes", "ees", "oes")):
        return token[:-1]
    if token.endswith("s") and not token.endswith(("us", "ss")):
        return token[:-1]
    return token


@lru_cache(maxsize=262_144)
def _chunk_terms(chunk: str) -> tuple[str, ...]:
    out = []
    for tok in _TOKEN.findall(fold(_GLUE.sub(" ", chunk))):
        if len(tok) == 1 and not tok.isdigit():  # the 's' of "Dashboard's", the 't' of "don't"
            continue
        out.append(stem(tok))
    return tuple(out)


def index_terms(text: str) -> list[str]:
    """Search terms of ``text``: folded tokens, glued words split (camelCase, letter/digit runs),
    one-letter fragments dropped, plurals folded. Used for documents and queries alike."""
    return [t for chunk in (text or "").split() for t in _chunk_terms(chunk)]


def first_word_times(segments: Sequence[Segment], words: Sequence[Sequence]) -> list[dict[str, int]]:
    """Per segment (in the given order, which is time order): term -> t0 of the first word producing it.
    Each word ``[t0_ms, t1_ms, word]`` goes to the segment that holds its midpoint."""
    out: list[dict[str, int]] = [{} for _ in segments]
    if not segments or not words:
        return out
    i = 0
    for w in words:
        mid = (w[0] + w[1]) / 2
        while i + 1 < len(segments) and segments[i + 1].t0_ms <= mid:
            i += 1
        seen = out[i]
        for term in index_terms(w[2]):
            seen.setdefault(term, int(w[0]))
    return out


def doc_terms(text: str, t0_ms: int, first: dict[str, int] | None = None) -> tuple[int, list[tuple[str, int, int]]]:
    """(document length, [(term, tf, t_ms)]): the index rows of one document, t_ms the first word that
    produced the term when word times are known, else the document's start."""
    toks = index_terms(text)
    first = first or {}
    return len(toks), [(term, tf, int(first.get(term, t0_ms))) for term, tf in Counter(toks).items()]


def term_rows(source: str, docs: list[tuple[int, int, str]],
              firsts: list[dict[str, int]] | None = None) -> list[dict]:
    """docs: (ref, t_ms, text) -> one row per (doc, term) with term frequency, doc length and the time
    of its first word (``firsts``: per doc, from :func:`first_word_times`)."""
    rows = []
    for i, (ref, t_ms, text) in enumerate(docs):
        n, terms = doc_terms(text, t_ms, firsts[i] if firsts else None)
        for term, tf, t in terms:
            rows.append({"source": source, "ref": int(ref), "t_ms": t, "term": term, "tf": tf, "doc_len": n})
    return rows
