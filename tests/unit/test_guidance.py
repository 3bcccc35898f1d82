"""The MCP guidance layer (issue #26, item 8): 10-15 one-line examples per tool description, six
workflow prompts whose arguments are described and checked, and the path scrubber leaving the
client's own text alone (item 7). Issue #36 added get_moment_at and the what_happened_at prompt."""

from __future__ import annotations

import re

import anyio
import pytest

from talkthrough_mcp import guidance


def examples(description: str) -> list[str]:
    return [ln[2:] for ln in description.split("\nExamples:\n", 1)[1].splitlines()]


def test_every_tool_has_10_to_15_one_line_examples():
    """Each tool's description (its docstring in talkthrough_mcp/tools.py): a summary, then its examples."""
    from talkthrough_mcp.tools import TOOLS, build_server

    listed = {t.name: t.description for t in anyio.run(build_server().list_tools)}
    assert list(listed) == [fn.__name__ for fn in TOOLS]
    for tool, desc in listed.items():
        summary, _ = desc.split("\nExamples:\n", 1)
        assert 0 < len(summary) <= 200 and "- " not in summary, tool
        ex = examples(desc)
        assert all(line.startswith("- ") for line in desc.split("\nExamples:\n", 1)[1].splitlines()), tool
        assert 10 <= len(ex) <= 15, (tool, len(ex))
        assert all(0 < len(e) <= guidance.EXAMPLE_MAX_CHARS for e in ex), tool
        assert len(set(ex)) == len(ex), tool
        assert desc.count("\n- ") == len(ex)


def test_seven_workflow_prompts_render_every_argument():
    assert len(guidance.PROMPTS) == 7  # six of issue #26, what_happened_at of #36
    for name, spec in guidance.PROMPTS.items():
        assert spec["description"] and spec["arguments"], name
        values = {a: f"<{a}-value>" for a in spec["arguments"]}
        text = guidance.render(name, **values)
        for a, desc in spec["arguments"].items():
            assert values[a] in text, (name, a)
            assert desc and a in guidance.PROMPT_ARG_MAX_CHARS, (name, a)
        assert not re.search(r"\{\w+\}", text), (name, text)  # no placeholder left
        with pytest.raises(ValueError):
            guidance.render(name)


def test_scrub_keeps_the_clients_own_text():
    from talkthrough_mcp.results import scrub

    assert scrub("invalid recording id '/etc/passwd'", keep=("'/etc/passwd'",)) == "invalid recording id '/etc/passwd'"
    assert scrub("could not read /srv/data/x/file.mp4") == "could not read file.mp4"
