"""What `talkthrough process` draws while it runs: on a terminal one live line per file (drawn for 80 columns
first, moving at least once a second); in a pipe or a log one plain line per stage; with
--json nothing. It hands :func:`talkthrough_assets.app.batch.process_files` the listeners of each file's run."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

from talkthrough_assets.cli.output import console_on, progress_stream
from talkthrough_assets.cli.progress import FileProgress


class Display:
    def __init__(self, progress, stream, live: bool, lines: bool) -> None:
        self.progress, self.stream, self.live, self.lines = progress, stream, live, lines

    def say(self, text: str) -> None:
        try:
            self.stream.write(text.replace("\n", "\\n") + "\n")  # a file name with a line break stays on its line
            self.stream.flush()
        except (OSError, ValueError):
            pass

    @contextmanager
    def watch(self, f: Path):
        """The listeners of one file's run: its line shows the stages done of those planned, the one running and,
        on a terminal, the long stages' bar (audio transcribed and video scanned, the later ETA)."""
        from talkthrough_assets.app.batch import Watch

        progress, live, lines, name = self.progress, self.live, self.lines, f.name
        board = FileProgress()
        task = progress.add_task("hashing", total=None, name=name, board=board)
        planned: list[str] = []
        done: list[str] = []

        def on_stage(stage, rid, state, info):
            if state in ("ok", "failed") and stage not in done:
                done.append(stage)
                board.finished(stage)
            count = f"{len(done)}/{len(planned)} stages, " if planned else ""
            took = f" in {info['elapsed_s']:.1f} s" if state == "ok" and "elapsed_s" in info else ""
            # drawn at once (not at the next tick): a fast stage still shows on the terminal; the bar counts it
            progress.update(task, description=f"{count}{stage} {state}{took}", refresh=live,
                            short=f"{len(done)}/{len(planned)} {stage} {state}" if planned else None,
                            **({"total": 100, "completed": board.percent()} if planned else {}))
            if lines and state != "started":
                self.say(f"{name}: {count}{stage} {state}{took}")

        def on_stages(rid, stages):
            planned[:] = stages
            board.plan(stages)
            what = f"running {', '.join(stages)}" if stages else "up to date"
            progress.update(task, description=what, short=None)
            if lines:
                self.say(f"{name}: {what}")

        def on_progress(stage, rid, info):
            board.report(stage, info)
            count = f"{len(done)}/{len(planned)} stages, " if planned else ""
            progress.update(task, total=100, completed=board.percent(), refresh=live,
                            description=f"{count}{board.text(eta=False)}",
                            short=(f"{len(done)}/{len(planned)} " if planned else "") + board.short())

        try:  # the bar's listener on a terminal only: with --json or in a pipe nothing changes
            yield Watch(on_stage, on_stages, on_progress if live else None)
        finally:
            progress.remove_task(task)


@contextmanager
def display(as_json: bool):
    """A spinner line per file on a terminal; plain lines in a pipe or log; nothing with --json. Drawn on a
    duplicate of stderr (``output.progress_stream``), closed at the end."""
    from rich.progress import Progress

    from talkthrough_assets.cli.layout import line_column

    stream = progress_stream()
    shown = console_on(stream)
    live = shown.is_terminal and not as_json
    lines = not shown.is_terminal and not as_json
    try:
        with Progress(line_column(shown), console=shown, transient=True, disable=not live,
                      refresh_per_second=4) as progress:
            yield Display(progress, stream, live, lines)
    finally:
        if stream is not sys.stderr:
            stream.close()
