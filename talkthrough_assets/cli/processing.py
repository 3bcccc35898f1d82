"""`talkthrough process` and `talkthrough repair`: run recordings through the Dagster asset graph, re-make what is
damaged. Thin: the work is :mod:`talkthrough_assets.app.batch` and :mod:`talkthrough_assets.app.maintenance`."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import List, Optional

import typer

from talkthrough_assets.cli.command import METAVARS, OURS
from talkthrough_assets.cli.output import console, esc, print_summary
from talkthrough_assets.pipeline.stagespec import SETTINGS


def process(paths: List[Path], force: bool, as_json: bool, **settings) -> None:
    """Process recordings through the Dagster asset graph (in-process). Same bytes twice = no-op."""
    from talkthrough_assets.app import batch
    from talkthrough_assets.cli.process_display import display
    from talkthrough_assets.pipeline import settings as stage_settings

    err = console()
    try:  # a setting the environment gives a bad value: refused here, before any run
        stage_settings.check_environment()
    except OURS as e:
        err.print(f"[red]error[/red] {esc(e)}", highlight=False)
        raise typer.Exit(2)
    found = batch.inputs(paths)
    for p, why in found.skipped:
        err.print(f"[yellow]skip[/yellow] {esc(p)}: {esc(why)}", highlight=False)
    for p, why in found.missing:
        err.print(f"[red]error[/red] {esc(p)}: {esc(why)}", highlight=False)
    if not found.files:
        err.print("[red]no media files to process[/red]")
        raise typer.Exit(2)
    overrides = {k: v for k, v in settings.items() if v is not None}
    with display(as_json) as shown:
        results = batch.process_files(found.files, overrides=overrides, force=force, watch=shown.watch)
    if as_json:
        typer.echo(json.dumps(results, indent=2, default=str))
    else:
        for r in results:
            print_summary(r)
    internal = batch.internal(results)
    if internal:
        err.print(f"[bold red]{len(internal)} of {len(results)} file(s) hit an internal error, not bad input.[/bold red] "
                  "Run `talkthrough doctor`: it checks the installed media stack on a clip it writes itself.")
        raise typer.Exit(3)
    if found.missing:
        err.print(f"[red]{len(found.missing)} path(s) not found[/red] (the others were processed)")
        raise typer.Exit(2)
    if any(r["status"] in ("failed", "refused") for r in results):
        raise typer.Exit(1)
    missing = [r for r in results if r.get("diarization_unavailable")]
    if missing:  # transcripts stored, but what --diarize asked for was not done
        err.print(f"[red]diarization did not run for {len(missing)} file(s): its models are not available[/red] "
                  "(`talkthrough doctor` says where they are looked for); the rest is stored, and a later "
                  "`process` diarizes once they are found", highlight=False)
        raise typer.Exit(1)


def _checked(parse):
    """The setting's own check as the option's parser: a bad value exits 2 with the setting's one-line reason
    before any run starts or anything is saved (click would print only the value)."""
    if parse is None:
        return None

    def parser(value):
        try:
            return parse(value)
        except OURS as e:
            raise typer.BadParameter(str(e)) from None

    return parser


def _process_signature() -> inspect.Signature:
    """`process`'s typer options: PATHS, --force, one option per setting that has a ``flag`` in
    stagespec (its name, type and help come from there; unset = keep the persisted value), --json."""
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("paths", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=List[Path],
                          default=typer.Argument(..., metavar="PATH...",
                                                 help="Media files or folders (searched recursively).")),
        inspect.Parameter("force", kw, annotation=bool, default=typer.Option(
            False, "--force", metavar="", help="Re-run every stage even if outputs are current.")),
    ]
    params += [inspect.Parameter(st.name, kw, annotation=Optional[st.type],
                                 default=typer.Option(None, st.flag, help=st.help, parser=_checked(st.parse),
                                                      metavar=st.metavar or METAVARS.get(st.type, "")))
               for st in SETTINGS if st.flag]
    params.append(inspect.Parameter("as_json", kw, annotation=bool, default=typer.Option(
        False, "--json", metavar="", help="Print summaries as JSON.")))
    return inspect.Signature(params, return_annotation=None)


process.__signature__ = _process_signature()


def repair(ref: Optional[str] = typer.Argument(None, metavar="[ID|PATH]", help="One recording (default: all)."),
           as_json: bool = typer.Option(False, "--json", help="Print the result as JSON.")) -> None:
    """Re-make what is missing or damaged (a torn table file, a deleted manifest, frame folder or report):
    exactly the stages that wrote it, and the manifest; move a stray file out of a table partition (to
    quarantine/ under the data root) and remove temp files of killed writers. `talkthrough doctor` lists them."""
    from talkthrough_assets.app import maintenance

    try:
        done = maintenance.repair(ref)
    except OURS as e:
        console().print(f"[red]{esc(e)}[/red]", highlight=False)
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps(done, indent=2))
    else:
        for r in done:
            if r["recording_id"] is None:
                typer.echo(f"removed {len(r['removed'])} temp file(s) of writers that are gone "
                           f"({r['removed_bytes'] / 1e6:.1f} MB)")
                for p in r["removed"]:
                    typer.echo(f"  {p}")
                continue
            typer.echo(f"{r['recording_id']}  {r['status']}  stages: {', '.join(r['stages_run']) or 'none'}"
                       + (f"  ({r['reason']})" if r.get("reason") else ""))
            for m in r["set_aside"]:
                typer.echo(f"  moved stray file {m['file']} -> {m['moved_to']}")
        if not done:
            typer.echo("nothing to repair: every stored output is whole")
    if any(r["status"] != "repaired" for r in done):
        raise typer.Exit(1)
