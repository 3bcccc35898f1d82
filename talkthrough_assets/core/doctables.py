"""Tables in the docs generated from the code (the environment table from ``core.config``, the amend table from
``pipeline.stagespec``): a table is found by its header line and runs to the first blank line; a test per
table checks the doc holds the generated one, and ``python -m <module> <doc>`` rewrites it in place."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable


def with_table(text: str, header: str, table: str) -> str:
    """``text`` with its table (the ``header`` line up to the first blank line) replaced by ``table``."""
    start = text.index(header + "\n")
    end = text.index("\n\n", start) + 1
    return text[:start] + table + text[end:]


def rewrite(render: Callable[[str], str], default: str, argv: list[str] | None = None) -> None:
    """Rewrite each doc named in ``argv`` (default: ``sys.argv[1:]``, else ``default``) as ``render`` of its text."""
    for arg in (sys.argv[1:] if argv is None else argv) or [default]:
        Path(arg).write_text(render(Path(arg).read_text()))


__all__ = ["with_table", "rewrite"]
