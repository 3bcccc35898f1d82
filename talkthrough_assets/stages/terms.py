"""Search terms: the folding shared by the index writer and the query side (BM25 lives in SQL)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

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
