"""Search terms: the folding shared by the index writer and the query side (BM25 lives in SQL)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

CODE_VERSION = "1"
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def fold(text: str) -> str:
    """Lower-case and strip diacritics: 'Café Ünïcode' -> 'cafe unicode'."""
    decomposed = unicodedata.normalize("NFKD", text or "")
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(fold(text))


def term_rows(source: str, docs: list[tuple[int, int, str]]) -> list[dict]:
    """docs: (ref, t_ms, text) -> one row per (doc, term) with term frequency and doc length."""
    rows = []
    for ref, t_ms, text in docs:
        toks = tokens(text)
        for term, tf in Counter(toks).items():
            rows.append({"source": source, "ref": int(ref), "t_ms": int(t_ms), "term": term, "tf": tf,
                         "doc_len": len(toks)})
    return rows


# --------------------------------------------------------------------------- read-side index terms
# Additive helpers for the MCP read server's own index (built from manifests). ``tokens`` and
# ``term_rows`` above are unchanged, so the pipeline's ``terms`` table and its CODE_VERSION are too.

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
