"""How every `talkthrough` command shows its `--help` (classic ``PATH...``/``N``/``TEXT`` names, not typer's
Python type labels), and which failures the commands report as one line rather than a traceback."""

from __future__ import annotations

from typing import get_args

from typer.core import TyperArgument, TyperCommand, TyperOption

from talkthrough_assets.core.errors import TalkthroughError

# what `--help` shows after an option that takes a value (typer's default is the Python type, `<int>`)
METAVARS = {int: "N", str: "TEXT", float: "X"}

# our own failures, reported in one line: every error Talkthrough raises on purpose is a TalkthroughError (bad
# input is its UsageError); anything else is a bug and keeps its traceback
OURS = (TalkthroughError,)


def _annotation(param):
    """The Python type behind a typer parameter (``Optional[int]`` -> ``int``), or None."""
    ann = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    args = [a for a in get_args(ann) if a is not type(None)]
    return args[0] if len(args) == 1 else ann


class Command(TyperCommand):
    """A command whose `--help` names arguments the classic way (``PATH...``), not by typer's Python
    type labels (``{paths}...``, ``<list[Path]>``), which read as syntax to type."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for p in self.params:
            if isinstance(p, TyperOption) and p.metavar is None:  # `--port N`, `--host TEXT`, a flag alone
                p.metavar = "" if p.is_flag else METAVARS.get(_annotation(p), "TEXT")
            if isinstance(p, TyperArgument):
                shown = p.metavar or p.name.upper() + ("..." if p.nargs != 1 else "")
                p.display_type_rich = lambda ctx: None
                p._rich_display_name = p._usage_display_name = lambda shown=shown: shown
