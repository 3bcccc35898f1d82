"""Is what a recording's stages stored still there and whole? Every table partition (readable Parquet of its
table's schema, every page read; holding only the files its stage writes), the published manifest, the keyframe
files the keyframes table lists and the HTML report (their ends read); each problem names the stage whose re-run
re-makes it, or the stray file to move aside. The one check of ``talkthrough doctor`` (the whole data root),
``talkthrough repair`` (which runs those stages and moves strays aside) and ``process`` (``pipeline.plan`` adds
those stages, so ``process`` of an already-processed file repairs it). No Dagster here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from talkthrough_assets import store
from talkthrough_assets.pipeline.stagespec import SPECS
from talkthrough_assets.stages import manifest as manifest_stage
from talkthrough_assets.model.frames import Keyframe
from talkthrough_assets.model.search_index_docs import SOURCES
from talkthrough_assets.stages.runner import stage_state

FIX = "run `talkthrough repair` (or `talkthrough process FILE` again) to re-make it"

# table -> the stage that writes it; stage_runs rows are each stage's own bookkeeping (part = stage)
OWNER = {t: sp.name for sp in SPECS for t in sp.writes if t in store.SCHEMAS}
OWNER["stage_runs"] = None  # per file: the part names the stage
OWNER["sources"] = None  # re-written when the file is registered again (`process FILE`)
# the part files a multi-part table's partition holds (each single-part table's holds part-0.parquet)
PARTS = {"stage_runs": {f"{sp.name}.parquet" for sp in SPECS}, "terms": {f"{s}.parquet" for s in SOURCES}}
STRAY = "stray file"
TEMP = "temp file"
JPEG_END = b"\xff\xd9"


@dataclass(frozen=True)
class Problem:
    recording: str
    what: str  # "table <name>" | "manifest" | "frames" | "report" | STRAY | TEMP
    location: str
    problem: str
    stage: str | None  # the stage whose re-run re-makes it (None: re-registering the file does)
    key: str | None = None  # a stray file's key (repair moves it aside), a temp file's local path

    def line(self) -> str:
        if self.what == STRAY:
            fix = "`talkthrough repair` moves it aside (to quarantine/ under the data root), nothing deleted"
        elif self.what == TEMP:
            fix = "`talkthrough repair` removes it"
        else:
            fix = f"re-run `{self.stage}`: {FIX}" if self.stage else "process the file again to re-register it"
        return f"{self.recording}: {self.what} {self.problem} at {self.location}; {fix}"

    def as_dict(self) -> dict:
        return asdict(self) | {"line": self.line()}


def check(rid: str, *, deep: bool = True) -> list[Problem]:
    """The problems of one recording's stored outputs: every Parquet page is read, and the ends of the frame
    JPEGs and of the report (a recording's tables are small: tens of milliseconds); ``deep=False`` reads
    footers and listings only."""
    store.check_id(rid)
    out: list[Problem] = []
    state = stage_state(rid)
    ok = {s for s, r in state.items() if r.ok}
    for table in store.TABLES:
        prefix = store.partition_key(table, rid)
        listing = store.list_names(prefix)
        for key in store.stray_files(table, rid, PARTS.get(table), names=listing):
            out.append(Problem(rid, STRAY, store.data_location(key), f"in table {table}'s partition (its stage "
                               f"never writes it: its rows would be served beside the stage's)", None, key))
        names = [n for n in listing if store.integrity.served(table, n)
                 and (table not in PARTS or n in PARTS[table])]
        for n in names:
            key = f"{prefix}/{n}"
            if store.is_remote():
                continue
            problem = store.integrity.file_problem(store.local_path(key), table, deep=deep)
            if problem:
                stage = n.removesuffix(".parquet") if table == "stage_runs" else OWNER.get(table)
                out.append(Problem(rid, f"table {table}", store.data_location(key), f"damaged ({problem})",
                                   stage if stage in {sp.name for sp in SPECS} else None))
        owner = OWNER.get(table)
        if not names and owner in ok:
            out.append(Problem(rid, f"table {table}", store.data_location(prefix), "missing", owner))
    if "manifest" in ok:
        m = manifest_stage.verify(rid)
        if not m.passed:
            missing = not store.exists(store.manifest_key(rid))
            out.append(Problem(rid, "manifest", store.data_location(store.manifest_key(rid)),
                               "missing" if missing else f"damaged ({m.description[:160]})", "manifest"))
        report = store.report_key(rid)
        if not store.exists(report):
            out.append(Problem(rid, "report", store.data_location(report), "missing", "manifest"))
        elif deep and not store.tail_bytes(report, 64).rstrip().endswith(b"</html>"):
            out.append(Problem(rid, "report", store.data_location(report), "damaged (cut short)", "manifest"))
    if "keyframes" in ok:
        out += _frames(rid, deep)
    return out


def _frames(rid: str, deep: bool) -> list[Problem]:
    files = [r.file for r in store.read_rows("keyframes", rid, record=Keyframe)]
    listed: dict[str, dict] = {}
    missing, torn = [], []
    for file in files:
        folder, _, name = file.rpartition("/")
        if folder not in listed:
            listed[folder] = {n: None for n in store.list_names(folder)}
        if name not in listed[folder]:
            missing.append(file)
        elif deep and not store.is_remote():
            if not store.tail_bytes(file, 64).rstrip(b"\0").endswith(JPEG_END):
                torn.append(file)
    where = store.data_location(store.frames_key(rid))
    out = []
    if missing:
        out.append(Problem(rid, "frames", where, f"missing ({len(missing)}/{len(files)} keyframe files, e.g. "
                                                 f"{missing[0].rpartition('/')[2]})", "keyframes"))
    if torn:
        out.append(Problem(rid, "frames", where, f"damaged ({len(torn)} JPEG(s) cut short, e.g. "
                                                 f"{torn[0].rpartition('/')[2]})", "keyframes"))
    return out


def leftover_temp_files(folders=None) -> list[Problem]:
    """Temp files of writers that are gone (``store.tempfiles``): not removed here."""
    return [Problem("-", TEMP, path, f"of a writer that is gone ({size / 1e6:.1f} MB)", None, path)
            for path, size in store.tempfiles.sweep(folders, remove=False)]


def repair_stages(rid: str) -> set[str]:
    """The stages whose outputs are missing or damaged (their re-run re-makes them), plus the manifest that
    publishes a view of them; empty when all is well."""
    stages = {p.stage for p in check(rid) if p.stage}
    return stages | {"manifest"} if stages else set()


def recordings() -> list[str]:
    """Every recording id the data root holds something of (a table partition or a manifest)."""
    ids: set[str] = set()
    for table in store.TABLES:
        ids |= {n.split("=", 1)[1] for n in store.list_names(f"tables/{table}") if n.startswith("recording=")}
    ids |= {n.removesuffix(".json") for n in store.list_names("manifests") if n.endswith(".json")}
    return sorted(i for i in ids if store.ID_RE.fullmatch(i))


def scan(*, deep: bool = True) -> list[Problem]:
    """Every problem in the data root: each recording's (:func:`check`) and a damaged schema file."""
    out = []
    for table in store.TABLES:
        key = store.table_key(table, store.SCHEMA_PARTITION)
        if not store.is_remote() and (p := store.integrity.file_problem(store.local_path(key), table)):
            out.append(Problem(store.SCHEMA_PARTITION, f"table {table}", store.data_location(key),
                               f"damaged ({p})", None))
    for rid in recordings():
        out += check(rid, deep=deep)
    return out


__all__ = ["FIX", "STRAY", "TEMP", "Problem", "check", "leftover_temp_files", "recordings", "repair_stages", "scan"]
