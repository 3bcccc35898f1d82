"""What the `talkthrough` commands draw, designed for an 80-column terminal first:
the `recordings` table (ids always whole, file names cut in the middle) and the one progress line of
`process` (file name, what runs, a bar, the share, elapsed time, ETA), which fits the terminal's width.
Pure functions of their inputs: the CLI prints what they return."""

from __future__ import annotations

from talkthrough_assets.stages.runner import hms

ELLIPSIS = "…"
ID_WIDTH = 16
FILE_MIN_WIDTH = 16
GAP = "  "


def middle(text: str, width: int) -> str:
    """``text`` cut in the middle to at most ``width`` characters (the start and the extension stay)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = width // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[len(text) - tail:] if tail else "")


def end_cut(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[:max(width - 1, 0)] + ELLIPSIS if width > 0 else ""


def _duration(ms) -> str:
    return hms((ms or 0) / 1000)


def one_line(text: str) -> str:
    """A name as one table cell: a line break or other control character in it is shown, never obeyed."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _complete(chunks: str) -> bool:
    """A chunks cell that says every chunk is transcribed ("7/7"), or says nothing."""
    done, _, total = chunks.partition("/")
    return not chunks or done == total


def recordings_lines(rows: list[dict], width: int, tz=None) -> list[str]:
    """The `talkthrough recordings` table as lines of at most ``width`` characters (never less than what
    the id needs): id, media, recorded at (in ``tz``, default UTC, its zone named), segments, frames, speakers,
    chunks (when any row has them), file. The file name takes the width that is left, cut in the middle; when
    short, the year goes first (never the time of day: two recordings of one day must be told apart)."""
    from datetime import timezone

    from talkthrough_assets.read.timeq import shown

    cells = []
    for r in rows:
        when = shown(r.get("recorded_at"), tz or timezone.utc, seconds=False) or "-"
        cells.append({"id": r["recording"], "media": f"{r.get('kind') or '?'} {_duration(r.get('duration_ms'))}",
                      "recorded": when, "segs": str(r.get("segment_count", "")),
                      "frames": str(r.get("frame_count", "")), "spk": "yes" if r.get("diarized") else "",
                      "chunks": r.get("chunks") or "", "file": one_line(r.get("filename") or "")})
    cols = ["id", "media", "recorded", "segs", "frames", "spk"] + (["chunks"] if any(c["chunks"] for c in cells)
                                                                   else []) + ["file"]
    heads = {"id": "id", "media": "media", "recorded": "recorded at", "segs": "segs", "frames": "frames",
             "spk": "diarized", "chunks": "chunks", "file": "file"}

    def widths(cols: list[str]) -> dict[str, int]:
        return {c: max([len(heads[c])] + [len(x[c]) for x in cells]) for c in cols}

    gap = GAP
    w = widths(cols)
    fixed = sum(w[c] for c in cols if c != "file") + len(gap) * (len(cols) - 1)
    if width - fixed < FILE_MIN_WIDTH:  # narrow: the date without its year, short headings, 1-space gaps
        for x in cells:
            x["recorded"] = x["recorded"][5:] if x["recorded"][:4].isdigit() else x["recorded"]
        heads.update(recorded="recorded", spk="spk", frames="frms")
        gap = " "
        if "chunks" in cols and all(_complete(x["chunks"]) for x in cells):  # "7/7" everywhere says nothing
            cols.remove("chunks")
        w = widths(cols)
        fixed = sum(w[c] for c in cols if c != "file") + len(gap) * (len(cols) - 1)
    w["file"] = max(min(w["file"], width - fixed), FILE_MIN_WIDTH)
    right = {"segs", "frames"}

    def line(values: dict[str, str]) -> str:
        parts = []
        for c in cols:
            v = middle(values[c], w[c]) if c == "file" else values[c]
            parts.append(v.rjust(w[c]) if c in right else v.ljust(w[c]))
        return gap.join(parts).rstrip()

    return [line(heads)] + [line(x) for x in cells]


BAR_WIDTH = 16
NAME_MAX = 32
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def bar(share: float | None, width: int = BAR_WIDTH) -> str:
    if share is None:
        return "·" * width
    full = round(max(0.0, min(1.0, share)) * width)
    return "━" * full + "─" * (width - full)


def progress_line(*, name: str, status: str, share: float | None, elapsed_s: float, eta_s: float | None,
                  tick: int, width: int, short: str | None = None) -> str:
    """One line of at most ``width`` characters: ``⠋ name: status…  ━━━━────  42% 0:35 ETA 4:51``. The
    status is cut at its end to fit; the spinner (``tick``), elapsed time and share move on every redraw."""
    narrow = width < 100
    bar_w, name_w = (8, 20) if narrow else (BAR_WIDTH, NAME_MAX)
    tail = f"{bar(share, bar_w)} {('%3d%%' % round(100 * share)) if share is not None else '   -'} " \
           f"{hms(elapsed_s)}" + (f" ETA {hms(eta_s)}" if eta_s else "")
    head = f"{SPINNER[tick % len(SPINNER)]} {middle(name, name_w)}: "
    room = width - len(head) - len(tail) - 1
    if room < 8:  # very narrow: drop the bar first
        tail = tail[bar_w + 1:]
        room = width - len(head) - len(tail) - 1
    if short and len(status) > room:  # the compact wording before cutting the full one
        status = short
    return head + end_cut(status, max(room, 0)).ljust(max(room, 0)) + " " + tail


def line_column(console):
    """A rich progress column drawing :func:`progress_line` for a task whose fields hold ``name`` and
    ``board`` (a :class:`~talkthrough_assets.cli.progress.FileProgress`); its description is the status."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class LineColumn(ProgressColumn):
        def __init__(self) -> None:
            super().__init__()
            self.tick = 0

        def render(self, task) -> Text:
            self.tick += 1
            board = task.fields.get("board")
            line = progress_line(name=task.fields.get("name", ""), status=task.description,
                                 short=task.fields.get("short"),
                                 share=board.share_now() if board is not None else None,
                                 elapsed_s=task.elapsed or 0.0, eta_s=board.eta_now() if board is not None else None,
                                 tick=self.tick, width=max(console.width - 1, 20))
            return Text(line, no_wrap=True, overflow="crop")

    return LineColumn()


def forget_plan_lines(rid: str, names: list[str], keys: list[str], root: str, width: int = 80,
                      results: dict[str, int] | None = None) -> list[str]:
    """What `talkthrough forget ID` without --yes prints: short lines, the stored table partitions on one line
    by table name, only the locations that exist, then what goes with them (its search index entries, the
    stored Whisper/OCR results no other recording uses, its Dagster partition): all that --yes removes."""
    tables = [k.split("/")[1] for k in keys if k.startswith("tables/") and k.count("/") >= 2]
    others = [k for k in keys if not k.startswith("tables/")]
    shown = ", ".join(names) if names else "no known file"
    out = [f"would remove recording {rid} ({shown}) from {root}:"]
    if tables:
        line = f"  rows of {len(tables)} tables: " + ", ".join(tables)
        out.append(end_cut(line, max(width, 40)))
    out += [f"  {k}" for k in others]
    shared = results or {}
    out.append(f"  its search index entries; {shared.get('whisper', 0)} Whisper chunk and {shared.get('ocr', 0)} "
               f"OCR result(s) no other recording uses")
    out += ["  and its Dagster partition", "run again with --yes to remove it"]
    return out
