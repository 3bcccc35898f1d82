"""The stages asset's specs, run config and metadata, each derived from the stage specs
(:mod:`talkthrough_assets.pipeline.stagespec`): deps, code versions, descriptions, kinds, owners, the UI's
branch tag, the column schema of each stage's main table, and one optional run-config field per setting."""

# no `from __future__ import annotations`: Dagster reads the op/resource annotations at definition time
from typing import Optional

import dagster as dg

from talkthrough_assets import store
from talkthrough_assets.pipeline.settings import DEPS, STAGES
from talkthrough_assets.pipeline.stagespec import SETTINGS, SPECS

OWNER = "team:talkthrough"
PREVIEW_MAX_PX = 480  # the contact-sheet thumbnail stored in each manifest event (a few KB, not the sheet)


def _branch(stage: str) -> str:
    """The UI's branch tag, from the graph: downstream of audio only, of keyframes only, or the recording's."""
    sp = {s.name: s for s in SPECS}
    seen, todo = set(), [stage]
    while todo:
        s = todo.pop()
        if s not in seen:
            seen.add(s)
            todo.extend(sp[s].upstream)
    audio, visual = "audio" in seen, "keyframes" in seen
    return "audio" if audio and not visual else "visual" if visual and not audio else "recording"


BRANCH = {sp.name: _branch(sp.name) for sp in SPECS}


def _tables(sp) -> list[str]:
    return [t for t in sp.writes if t in store.SCHEMAS]


# what a stage is (its own kind) and where its output lives: Parquet tables read through DuckDB views
KINDS = {sp.name: set(sorted(sp.kinds)[:1]) | ({"parquet", "duckdb"} if _tables(sp) else set()) for sp in SPECS}
DESCRIPTIONS = {sp.name: sp.description for sp in SPECS}


def _asset_metadata(sp) -> dict:
    """The stage's main table's columns (Dagster's column schema, from store.SCHEMAS) and every table it writes."""
    tables = _tables(sp)
    if not tables:
        return {"writes": ", ".join(sp.writes)}
    schema = store.SCHEMAS[tables[0]]
    return {"dagster/column_schema": dg.TableSchema(columns=[dg.TableColumn(f.name, str(f.type)) for f in schema]),
            "table": tables[0], "writes": ", ".join(sp.writes)}


def asset_specs(code_versions: dict[str, str]) -> list[dg.AssetSpec]:
    """One AssetSpec per stage, in graph order, with ``code_versions`` (stage -> its code version)."""
    by_name = {sp.name: sp for sp in SPECS}
    return [dg.AssetSpec(s, deps=list(DEPS[s]), code_version=code_versions[s], description=DESCRIPTIONS[s],
                         kinds=KINDS[s], group_name="talkthrough", skippable=True, owners=[OWNER],
                         tags={"talkthrough/branch": BRANCH[s]}, metadata=_asset_metadata(by_name[s]))
            for s in STAGES]


def _stages_config() -> type[dg.Config]:
    """The run config of the stages asset: every setting, optional (unset = keep the persisted value or
    the default). Each stage reads only its own keys (see the README's amend table); given values are
    kept for the recording once the run succeeded, so a later run of any stage keeps them. Example: `recorded_at` + materialize
    `wall_clock` and `manifest`."""
    from pydantic import Field

    ns = {"__annotations__": {st.name: Optional[st.type] for st in SETTINGS},
          **{st.name: Field(default=None, description=_setting_help(st)) for st in SETTINGS},
          "__doc__": _stages_config.__doc__}
    return type("StagesConfig", (dg.Config,), ns)


def _setting_help(st) -> str:
    """A Launchpad field's description, from stagespec (the CLI's --help says the same)."""
    readers = ", ".join(sp.name for sp in SPECS if st.name in sp.settings)
    default = f"default {st.default!r}" + (f" or ${st.env}" if st.env else "") if st.default is not None else (
        f"default from ${st.env}" if st.env else "no default")
    return (f"{st.help} Read by {readers}; {default}. Unset keeps the value persisted for this recording"
            + (f"; also `talkthrough process {st.flag.split('/')[0]}`." if st.flag else "."))


StagesConfig = _stages_config()


def materialization_metadata(md: dict) -> dict:
    """A stage's result metadata as Dagster shows it: files as paths, the contact sheet with a thumbnail,
    ``*_head`` text as markdown, ``None`` as the text "null"."""
    out = {}
    for k, v in md.items():
        if k == "report":
            out[k] = dg.MetadataValue.path(v)
        elif k == "contact_sheet":
            out[k] = dg.MetadataValue.path(v)
            thumb = _thumbnail_md(v)
            if thumb:
                out["contact_sheet_preview"] = dg.MetadataValue.md(thumb)
        elif k.endswith("_head") and isinstance(v, str):
            out[k] = dg.MetadataValue.md(v or "_(empty)_")
        elif v is None:
            out[k] = dg.MetadataValue.text("null")
        else:
            out[k] = v
    return out


def _thumbnail_md(path: str) -> str | None:
    """A small JPEG thumbnail of the contact sheet as markdown (the full sheet stays on disk, by path)."""
    import base64
    import io

    from PIL import Image

    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            im.thumbnail((PREVIEW_MAX_PX, PREVIEW_MAX_PX))
            buf = io.BytesIO()
            im.save(buf, "JPEG", quality=60, optimize=True)
    except OSError:
        return None
    return f"![contact sheet]({'data:image/jpeg;base64,' + base64.b64encode(buf.getvalue()).decode()})"
