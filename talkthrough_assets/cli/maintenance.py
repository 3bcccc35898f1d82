"""The upkeep commands: `doctor` (is this install sound, is the stored data whole), `forget` (remove a
recording everywhere) and `gc` (results no recording uses). Thin: the work is :mod:`talkthrough_assets.app.doctor`
and :mod:`talkthrough_assets.app.maintenance`."""

from __future__ import annotations

import json

import typer

from talkthrough_assets.cli.command import OURS
from talkthrough_assets.cli.output import console, esc


def doctor(as_json: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Check the installed media stack on a clip it writes itself, the OCR engine on a line it renders and
    the diarization models (found without downloading, run on a test signal); print the resolved versions."""
    from talkthrough_assets.app import doctor as checks

    rep = checks.report()
    if as_json:
        typer.echo(json.dumps(rep.to_dict(), indent=2))
    else:
        typer.echo("  ".join(f"{k} {v}" for k, v in rep.versions.items()))
        for c, state, d in rep.checks:
            typer.echo(f"{state:<4} {c}: {d}")
        typer.echo(rep.verdict)
    if not rep.ok:
        raise typer.Exit(3)


def forget(
    ref: str = typer.Argument(..., metavar="ID|PATH", help="Recording id (16 hex characters) or the file."),
    yes: bool = typer.Option(False, "--yes", help="Really remove it (without it, only say what would go)."),
    as_json: bool = typer.Option(False, "--json", help="Print what was removed as JSON."),
) -> None:
    """Remove a recording everywhere: its rows in every table (search terms, aliases), frames, WAV, manifest,
    settings and its Dagster partition. Refused while a run of it is queued or in progress."""
    from talkthrough_assets.app import maintenance
    from talkthrough_assets.store.locks import PartitionBusy

    err = console()
    try:
        if not yes:  # a short list of what exists
            from talkthrough_assets.cli.layout import forget_plan_lines

            plan = maintenance.forget_plan(ref)
            for line in forget_plan_lines(plan["recording_id"], plan["names"], plan["keys"], plan["root"],
                                          err.width if err.is_terminal else 200, plan["results"]):
                err.print(esc(line), highlight=False, soft_wrap=True)
            return  # a dry run that said what it would do has succeeded
        result = maintenance.forget(ref)
    except PartitionBusy as e:
        err.print(f"[yellow]refused:[/yellow] {esc(e)}", highlight=False)
        raise typer.Exit(1)
    except OURS as e:
        err.print(f"[red]{esc(e)}[/red]", highlight=False)
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    out = console(stderr=False)
    out.print(f"forgot {result['recording_id']}: removed {len(result['removed'])} location(s)"
              + ("; Dagster partition deleted" if result["dagster_partition_removed"] else ""), highlight=False)
    for loc in result["removed"]:
        out.print(f"  {esc(loc)}", highlight=False)


def gc(
    dry_run: bool = typer.Option(False, "--dry-run", help="Only say what would be removed."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Remove stored Whisper chunk results and OCR results that no recording uses any more (after a setting
    change or a forget); refused while a run is in progress. Says how much disk chunk results take per hour
    of audio."""
    from talkthrough_assets.app import maintenance
    from talkthrough_assets.store.locks import PartitionBusy

    try:
        r = maintenance.collect_garbage(dry_run=dry_run)
    except PartitionBusy as e:
        console().print(f"[yellow]refused:[/yellow] {esc(e)}; nothing removed", highlight=False)
        raise typer.Exit(1)
    if as_json:
        typer.echo(json.dumps(r, indent=2))
        return
    per_h = f"{r['bytes_per_audio_hour'] / 1024:.0f} KiB per hour of audio" if r["bytes_per_audio_hour"] else "no audio"
    o = r["ocr"]
    console(stderr=False).print(
        f"{'would remove' if dry_run else 'removed'} {r['removed']} unused Whisper chunk result(s) "
        f"({r['removed_bytes'] / 1024:.0f} KiB) and {o['removed']} OCR result(s) ({o['removed_bytes'] / 1024:.0f} KiB); "
        f"kept {r['kept']} chunk results ({r['kept_bytes'] / 1024:.0f} KiB, {r['audio_hours']:.2f} h of audio: "
        f"{per_h}) and {o['kept']} OCR results ({o['kept_bytes'] / 1024:.0f} KiB)", highlight=False)
    young = r.get("kept_young", 0) + o.get("kept_young", 0)
    if young:  # unused but new: a run that started meanwhile may be writing them
        console(stderr=False).print(f"{young} unused result(s) younger than {r['min_age_s'] / 60:.0f} min kept "
                                    f"(a run may be writing them); run gc again later to remove them", highlight=False)
    t = r["temp_files"]
    if t["removed"]:
        console(stderr=False).print(f"{'would remove' if dry_run else 'removed'} {t['removed']} temp file(s) of "
                                    f"writers that are gone ({t['removed_bytes'] / 1e6:.1f} MB)", highlight=False)
