"""Comments and docstrings in the product say why, not which issue asked: no issue numbers in its code (an
issue's history lives in git and the tracker, and a number in a comment goes stale with the code around it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ISSUE_REF = re.compile(r"(?:\bissues? #\d+|\(#\d+\b|#\d+ item \d+)")


def test_no_issue_numbers_in_the_product_code():
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
             for pkg in ("talkthrough_assets", "talkthrough_mcp") for p in sorted((ROOT / pkg).rglob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1) if ISSUE_REF.search(line)]
    assert found == [], "\n".join(found)
