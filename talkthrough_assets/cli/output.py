"""What the `talkthrough` commands print: rich consoles that never hard-wrap a pipe, the progress stream that
survives Dagster's log capture, escaping of user text for markup, and the per-recording summary."""

from __future__ import annotations

import os
import sys


def console(stderr: bool = True):
    """A rich console; when the output is not a terminal (a pipe, a log) lines are never hard-wrapped."""
    from rich.console import Console

    con = Console(stderr=stderr)
    if not con.is_terminal:
        con.soft_wrap = True
    return con


def progress_stream():
    """Where progress goes: a duplicate of the stderr file descriptor, taken before a Dagster run starts.
    Dagster's step log capture points fd 2 at a log file for the length of the step (the whole
    processing), so a display writing to fd 2 itself froze there; the duplicate still reaches the
    terminal (or pipe). Falls back to ``sys.stderr`` where it has no descriptor (a test runner)."""
    try:
        fd = os.dup(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        return sys.stderr
    return os.fdopen(fd, "w", buffering=1, encoding=getattr(sys.stderr, "encoding", None) or "utf-8",
                     errors="replace")


def console_on(stream):
    from rich.console import Console

    con = Console(file=stream)
    if not con.is_terminal:
        con.soft_wrap = True
    return con


def esc(value) -> str:
    """User-controlled text (file names, reasons, transcript text, languages) for a markup string:
    escaped, so `notes [final].txt` prints as itself and `odd[/x].txt` cannot break the markup; a line break
    in it (a file name may hold one) is shown as ``\\n``, so a summary or failure line stays one line."""
    from rich.markup import escape

    return escape(str(value).replace("\r", "\\r").replace("\n", "\\n"))


def print_summary(s: dict) -> None:
    out = console(stderr=False)
    status = s.get("status", "")
    color = {"processed": "green", "cached": "cyan", "failed": "red", "refused": "yellow"}.get(status, "white")
    out.print(f"[bold]{esc(s.get('filename') or s.get('source'))}[/bold]  [{color}]{status}[/{color}]  "
              f"id={s['recording_id']}  {s.get('elapsed_s', 0):.1f}s"
              + (f"  stages: {', '.join(s['stages_run'])}" if s.get("stages_run") else ""), highlight=False)
    if s.get("aliases"):  # the same bytes under other names: every name shows
        out.print(f"  also registered as: {esc(', '.join(s['aliases']))}", highlight=False)
    if status in ("failed", "refused"):
        out.print(f"  [red]reason:[/red] {esc(s.get('reason'))}", highlight=False)
    if s.get("warning"):
        out.print(f"  [yellow]warning:[/yellow] {esc(s['warning'])}", highlight=False)
    if not s.get("manifest"):
        return
    wc = s.get("wall_clock")
    from talkthrough_assets.read.timeq import local_zone, shown  # this machine's zone, as `recordings` and `at`

    start = shown(wc["start_utc"], local_zone()[0]) if wc else None
    out.print(f"  {s['kind']}, {s['duration_s']:.1f}s; wall clock: "  # no highlighter: it split "24.0s" in two colours
              + (esc(f"{start or wc['start_utc']} ({wc['source']}, {wc['confidence']})") if wc else "unknown"),
              highlight=False)
    tr = s["transcript"]
    fr = s["frames"]
    out.print(f"  transcript: {tr['segments']} segments"
              + (f" {esc('[' + tr['language'] + ']')}" if tr.get("language") else "")
              + (f" ({esc(tr['reason'])})" if tr.get("reason") else "")
              + f"; frames: {fr['count']} ({fr['unique']} unique)"
              + (f" ({esc(fr['reason'])})" if fr.get("reason") and s["kind"] == "video" else "")
              + (f"; speakers: {s['speakers']}" if s.get("diarized") else "")
              + (f" ({esc(s['speakers_note'])})" if s.get("diarized") and s.get("speakers_note") else ""),
              highlight=False)
    if tr.get("dropped_words") or tr.get("uncovered_speech_s") or tr.get("doubtful_segments"):
        out.print("  " + esc(quality_line(tr)), highlight=False)
    if tr.get("coverage"):
        out.print(f"  chunks: {esc(tr['coverage'])}", highlight=False)
    if tr.get("chunks_reason"):
        out.print(f"  [yellow]segments:[/yellow] {esc(tr['chunks_reason'])}", highlight=False)
    if s.get("diarization_reason"):
        out.print(f"  [yellow]diarization:[/yellow] {esc(s['diarization_reason'])}", highlight=False)
    for label, hint in (s.get("voice_matches") or {}).items():
        out.print(f"  [cyan]{esc(label)}:[/cyan] {esc(hint)}", highlight=False)
    for seg in s.get("preview", []):
        who = f"{seg['speaker']}: " if seg.get("speaker") else ""
        lines = hanging(who + seg["text"], out.width - PREVIEW_INDENT if out.is_terminal else 10 ** 6)
        out.print(f"    [dim]{seg['t_ms'] / 1000:7.1f}s[/dim] " + esc(lines[0]), highlight=False)
        for more in lines[1:]:  # a long segment's next lines under its text, not at the left edge
            out.print(" " * PREVIEW_INDENT + esc(more), highlight=False)
    if s.get("more_segments"):
        out.print(f"    [dim]... {s['more_segments']} more segments[/dim]", highlight=False)
    # paths on one line each, never broken by a newline (the terminal wraps them; a copy is the whole path)
    out.print(f"  manifest: {esc(s['manifest'])}", highlight=False, soft_wrap=True)
    if s.get("report"):
        out.print(f"  report: {esc(s['report'])}", highlight=False, soft_wrap=True)
    if fr.get("contact_sheet"):
        out.print(f"  contact sheet: {esc(fr['contact_sheet'])}", highlight=False, soft_wrap=True)


PREVIEW_INDENT = 14  # "    " + "  123.4s" + " "


def hanging(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters (at least 20), broken at spaces."""
    import textwrap

    return textwrap.wrap(text, max(width, 20), break_on_hyphens=False) or [""]


def quality_line(tr: dict) -> str:
    """"dropped 41 words (repetition 30, no speech in its time span 11); 2 segments kept in doubt; 1.3 s of 212.0 s
    of speech without words" (the transcript's quality, summary line)."""
    parts = []
    if tr.get("dropped_words"):
        why = ", ".join(f"{k} {v}" for k, v in sorted(tr.get("dropped_why", {}).items(), key=lambda kv: -kv[1]))
        parts.append(f"dropped {tr['dropped_words']} words ({why})")
    if tr.get("doubtful_segments"):
        parts.append(f"{tr['doubtful_segments']} segment(s) kept in doubt (language)")
    if tr.get("uncovered_speech_s"):
        parts.append(f"{tr['uncovered_speech_s']:.1f} s of {tr.get('speech_s', 0):.1f} s of speech without words")
    return "; ".join(parts)

