"""`talkthrough people`: the people enrolled by `talkthrough name`: list, forget, rename/merge.
A thin surface over :mod:`talkthrough_assets.app.people`."""

from __future__ import annotations

import json

import typer

from talkthrough_assets.cli.command import OURS
from talkthrough_assets.cli.output import console, esc

app = typer.Typer(add_completion=False, rich_markup_mode=None, invoke_without_command=True,
                  help="People enrolled by `talkthrough name` (their voices are recognised in other recordings).")


@app.callback()
def people(ctx: typer.Context,
           as_json: bool = typer.Option(False, "--json", help="Print the people as JSON.")) -> None:
    """List enrolled people: recordings and seconds of speech behind each voice."""
    if ctx.invoked_subcommand is not None:
        return
    from talkthrough_assets.app import people as P

    rows = P.list_people()
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    out = console(stderr=False)
    if not rows:
        out.print("no one enrolled yet: `talkthrough name ID S1=\"Alice Chen\"` enrols a diarized speaker's voice")
        return
    for r in rows:
        where = ", ".join(f"{v['recording']} {v['label']}" for v in r["voiceprints"])
        out.print(f"{esc(r['person'])}: {r['recordings']} recording{'s' if r['recordings'] != 1 else ''}, "
                  f"{r['speech_s']:.1f} s of speech ({esc(where)})", highlight=False)


def _done(result: dict, as_json: bool, text: str) -> None:
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        console(stderr=False).print(text + (f"; re-checked {len(result['rechecked'])} recording(s)"
                                            if result.get("rechecked") else ""), highlight=False)


@app.command()
def forget(name: str = typer.Argument(..., metavar="NAME", help="The person, as enrolled."),
           yes: bool = typer.Option(False, "--yes", help="Really remove them (without it, only say what would go)."),
           as_json: bool = typer.Option(False, "--json", help="Print what was removed as JSON.")) -> None:
    """Remove a person everywhere: their enrolments, the voiceprints of the labels that named them and those
    names; other recordings lose their voice matches."""
    from talkthrough_assets.app import people as P

    try:
        if not yes:
            found = P.forget_plan(name)
            where = ", ".join(f"{v['recording']} {v['label']}" for v in found["voiceprints"])
            console().print(f"would forget {esc(found['person'])} (voiceprints of {esc(where)}, and those "
                            "names); run again with --yes", highlight=False)
            raise typer.Exit(1)
        from talkthrough_assets.app import service

        result = P.forget_person(name, service.manifest_again)
    except OURS as e:
        console().print(f"[red]{esc(e)}[/red]", highlight=False)
        raise typer.Exit(2)
    _done(result, as_json, f"forgot {esc(result['person'])}: {result['voiceprints_removed']} voiceprint(s) in "
                           f"{len(result['recordings'])} recording(s)")


@app.command()
def rename(old: str = typer.Argument(..., metavar="OLD", help="The person, as enrolled."),
           new: str = typer.Argument(..., metavar="NEW", help="The new name; a person already enrolled: merged."),
           as_json: bool = typer.Option(False, "--json", help="Print the result as JSON.")) -> None:
    """Rename a person everywhere, or merge them into another enrolled person."""
    from talkthrough_assets.app import people as P
    from talkthrough_assets.app import service

    try:
        result = P.rename_person(old, new, service.manifest_again)
    except OURS as e:
        console().print(f"[red]{esc(e)}[/red]", highlight=False)
        raise typer.Exit(2)
    _done(result, as_json, f"{'merged' if result['merged'] else 'renamed'} {esc(result['person'])} -> "
                           f"{esc(result['now'])} in {len(result['recordings'])} recording(s)")
