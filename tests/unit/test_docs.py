"""The README stays a short user document (issue #37): at most 250 lines, and every link it gives into docs/
lands on a file and heading that exist; the docs link to each other the same way; the benchmark and
accuracy tables keep one short row per figure with its command and date; the MCP examples in docs/mcp.md
are the ones the tool descriptions carry."""

from __future__ import annotations

import re
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")
FIGURE_HEADER = "| what | command | date, load | result vs same-run baseline | target |"


def _anchors(path: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        m = re.match(r"#{1,6} (.+)", line)
        if m and not in_code:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _local_links(path: Path) -> list[str]:
    return [t for t in LINK.findall(path.read_text()) if not re.match(r"[a-z]+:", t)]


def _broken(path: Path) -> list[str]:
    bad = []
    for target in _local_links(path):
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.is_file():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    return bad


def test_readme_is_at_most_250_lines_and_every_docs_link_in_it_resolves():
    assert len(README.read_text().splitlines()) <= 250
    links = [t for t in _local_links(README) if t.startswith("docs/")]
    assert {t.partition("#")[0] for t in links} == {f"docs/{p.name}" for p in DOCS}, "README links every doc"
    assert _broken(README) == []


def test_every_relative_link_in_the_docs_resolves():
    assert DOCS and {p.name for p in DOCS} >= {"operations.md", "architecture.md", "benchmarks.md", "mcp.md"}
    assert [b for p in DOCS for b in _broken(p)] == []


def test_figure_tables_have_a_command_a_date_and_short_cells():
    rows = 0
    for doc in (ROOT / "docs" / "benchmarks.md", ROOT / "docs" / "accuracy.md"):
        lines = doc.read_text().splitlines()
        for i, line in enumerate(lines):
            if line != FIGURE_HEADER:
                continue
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                cells = [c.strip() for c in row.strip("|").split(" | ")]
                rows += 1
                assert len(cells) == 5, (doc.name, row[:80])
                assert "bench/" in cells[1], (doc.name, cells[0])
                assert re.match(r"20\d\d-\d\d-\d\d", cells[2]), (doc.name, cells[0], cells[2])
                assert all(len(c) <= 420 for c in cells), (doc.name, cells[0], max(map(len, cells)))
    assert rows >= 30


def test_mcp_examples_are_the_tool_descriptions_own():
    """Every example docs/mcp.md quotes is one its tool's description (the tool's docstring) carries; a tool the
    page does not quote needs no edit here (tools/list is the reference)."""
    import inspect

    from talkthrough_mcp.tools import TOOLS

    own = {fn.__name__: [ln[2:] for ln in inspect.getdoc(fn).splitlines() if ln.startswith("- ")] for fn in TOOLS}
    listed = re.findall(r"^- `(\w+)`: `(.+)`$", (ROOT / "docs" / "mcp.md").read_text(), re.M)
    assert len({tool for tool, _ in listed}) >= 7
    for tool, example in listed:
        assert example in own.get(tool, ()), (tool, example)
