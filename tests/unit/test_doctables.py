"""core.doctables: a generated table in a doc is replaced from its header line to the first blank line, and
nothing around it changes; ``rewrite`` writes each named doc in place."""

from __future__ import annotations

import pytest

from talkthrough_assets.core import doctables

HEADER = "| a | b |"
DOC = "# Title\n\ntext before\n\n| a | b |\n|---|---|\n| old | row |\n\ntext after\n"


def test_the_table_from_its_header_to_the_first_blank_line_is_replaced():
    new = f"{HEADER}\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n"
    assert doctables.with_table(DOC, HEADER, new) == \
        "# Title\n\ntext before\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\ntext after\n"


def test_a_doc_without_the_table_is_an_error():
    with pytest.raises(ValueError):
        doctables.with_table("# no table here\n", HEADER, f"{HEADER}\n")


def test_rewrite_renders_each_named_doc_in_place(tmp_path):
    docs = [tmp_path / "one.md", tmp_path / "two.md"]
    for p in docs:
        p.write_text(DOC)
    doctables.rewrite(lambda text: doctables.with_table(text, HEADER, f"{HEADER}\n| x | y |\n"), "unused.md",
                      [str(p) for p in docs])
    assert all(p.read_text() == "# Title\n\ntext before\n\n| a | b |\n| x | y |\n\ntext after\n" for p in docs)
