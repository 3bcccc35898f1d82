"""Damage that only `process --force` used to fix, stray files in a partition, temp files of killed writers and
runs a kill left STARTED: each case is damaged, then plain `talkthrough repair` (typer's runner, in this process:
the CLI's code path) makes the data root identical to the clean run of the same fixtures, and names what it moved
aside or removed. A killed `process` is a real CLI subprocess. The data root is this module's own: the speech
fixture (words) and the silent video (keyframes, report) processed once through `service.process`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixture_facts import FIXTURES_DIR, MEETING_NAME, SILENT_NAME
from typer.testing import CliRunner

from talkthrough_assets import store
from talkthrough_assets.app import service
from talkthrough_assets.app import runs as app_runs
from talkthrough_assets.app.selfcheck import DATA_CHECK
from talkthrough_assets.cli import main as cli
from talkthrough_assets.pipeline import datacheck

CLI = [sys.executable, "-m", "talkthrough_assets.cli.main"]
# bookkeeping that differs between any two runs: when a stage ran and how long it took, where the file was found
RUN_TABLES = ("stage_runs", "sources")
RUN_COLUMNS = ("processed_at", "elapsed_s")
# the search index's merged buckets: derived from the parts, merged lazily as parts accumulate (any second run
# of a recording makes them)
DERIVED = "index/merged/"


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    home = tmp_path_factory.mktemp("repairhome") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TALKTHROUGH_HOME", str(home))
        mp.setenv("DAGSTER_HOME", str(home / "dagster"))
        out = {"home": home}
        for k, name in (("talk", MEETING_NAME), ("video", SILENT_NAME)):
            s = service.process(FIXTURES_DIR / name)
            assert s["status"] == "processed", s
            out[k] = s["recording_id"]
        out["clean"] = _state()
        yield out


def _frame_name(file: str) -> str:
    return file.rpartition("/")[2]


def _state() -> dict:
    """What a clean run leaves: every table's rows (a frame's generation folder, new with each keyframes run,
    reduced to the frame's name), the manifest (less when it was made), the report, the frame JPEGs by name and
    the data root's files outside Dagster's storage, locks and run state."""
    out: dict = {}
    for table in store.TABLES:
        if table in RUN_TABLES:
            continue
        for rid in datacheck.recordings():
            rows = store.read_rows(table, rid, part=None)
            for r in rows:
                for k in RUN_COLUMNS:
                    r.pop(k, None)
                for k, v in list(r.items()):
                    if isinstance(v, str) and v.startswith(f"frames/{rid}/"):
                        r[k] = _frame_name(v)
            out[f"{table}/{rid}"] = sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
    for rid in datacheck.recordings():
        m = store.get_json(store.manifest_key(rid))
        out[f"manifest/{rid}"] = json.dumps(_without_times(m), sort_keys=True)
        out[f"report/{rid}"] = _report_text(rid)
        for f in store.read_rows("keyframes", rid):
            out[f"jpeg/{_frame_name(f['file'])}/{rid}"] = store.local_path(f["file"]).read_bytes()
    home = store.home()
    # the keyframes stage keeps the previous generation folder one more run, for readers that loaded the old
    # table (as any second run does): the live one is compared
    live = {f["file"].rpartition("/")[0] for rid in datacheck.recordings() for f in store.read_rows("keyframes", rid)}
    out["files"] = sorted(_shape(rel) for p in home.rglob("*") if p.is_file()
                          and p.parts[len(home.parts)] not in ("dagster", "locks", "state", "quarantine")
                          and not (rel := p.relative_to(home).as_posix()).startswith(DERIVED)
                          and not (rel.startswith("frames/") and rel.rsplit("/", 1)[0] not in live))
    return out


def _without_times(m):
    if isinstance(m, dict):
        return {k: _without_times(v) for k, v in m.items() if k not in ("created_at",)}
    if isinstance(m, list):
        return [_without_times(v) for v in m]
    if isinstance(m, str) and m.startswith("frames/"):
        return _frame_name(m)
    return m


def _report_text(rid: str) -> str:
    import re

    text = store.get_bytes(store.report_key(rid)).decode()
    # when the manifest was made, and the frames' generation folder
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?", "<time>", text)
    return re.sub(r"g\d{13}-[a-z0-9_]{8}", "<gen>", text)


def _shape(rel: str) -> str:
    import re

    rel = re.sub(r"g\d{13}-[a-z0-9_]{8}", "<gen>", rel)  # a keyframes run's generation folder
    return re.sub(r"index/parts/([0-9a-f]{16})\.\d+\.[0-9a-f]{12}", r"index/parts/\1.<gen>", rel)


def _cli(*args: str):
    store.integrity.forget_skipped()
    return CliRunner().invoke(cli.app, list(args))


def _doctor_data() -> dict:
    r = _cli("doctor", "--json")
    return next(c for c in json.loads(r.stdout)["checks"] if c["check"] == DATA_CHECK)


def _assert_identical_to_clean(lib) -> None:
    now, clean = _state(), lib["clean"]
    diff = sorted(k for k in set(now) | set(clean) if now.get(k) != clean.get(k))
    assert not diff, {k: (sorted(set(clean[k]) - set(now[k]))[:3], sorted(set(now[k]) - set(clean[k]))[:3])
                      if isinstance(now.get(k), list) and isinstance(clean.get(k), list)
                      else (str(clean.get(k))[:300], str(now.get(k))[:300]) for k in diff[:4]}
    assert _cli("repair").stdout.strip() == "nothing to repair: every stored output is whole"


def _garble_column(path: Path, column: str, n: int = 600) -> None:
    """``n`` garbage bytes inside one column's pages; the footer stays intact."""
    md = pq.ParquetFile(path).metadata.row_group(0)
    col = next(md.column(i) for i in range(md.num_columns) if md.column(i).path_in_schema == column)
    start = col.dictionary_page_offset or col.data_page_offset
    data = bytearray(path.read_bytes())
    at = start + max(0, (col.total_compressed_size - n) // 2)
    data[at:at + n] = bytes((i * 37 + 13) % 256 for i in range(n))
    path.write_bytes(bytes(data))


def test_garbage_in_a_data_page_is_found_by_repair_and_re_made(lib):
    rid = lib["talk"]
    f = store.table_path("words", rid)
    _garble_column(f, "word")
    assert pq.read_schema(f)  # the footer reads: only a deep check sees it
    with pytest.raises(Exception):
        duckdb.sql(f"SELECT word FROM read_parquet('{f}')").fetchall()
    # a reader leaves the file out with one warning naming it, instead of failing for every recording
    words = "SELECT count(*) AS n FROM words WHERE length(word) > 0"  # every value decoded
    r = _cli("sql", "--json", words)
    assert r.exit_code == 0 and json.loads(r.stdout)[0]["n"] == 0, r.output
    assert str(f) in r.stderr and "talkthrough repair" in r.stderr, r.stderr
    assert "words" in _doctor_data()["detail"]
    r = _cli("repair")
    assert r.exit_code == 0 and f"{rid}  repaired  stages: segments" in r.stdout, r.output
    r = _cli("sql", "--json", words)
    assert r.exit_code == 0 and json.loads(r.stdout)[0]["n"] > 0, r.output
    _assert_identical_to_clean(lib)


def test_a_report_cut_in_half_is_re_made_by_repair(lib):
    rid = lib["video"]
    f = store.local_path(store.report_key(rid))
    os.truncate(f, f.stat().st_size // 2)
    r = _cli("repair")
    assert r.exit_code == 0 and f"{rid}  repaired  stages: manifest" in r.stdout, r.output
    _assert_identical_to_clean(lib)


def test_a_keyframe_jpeg_cut_in_half_is_re_made_by_repair(lib):
    rid = lib["video"]
    frame = store.local_path(store.read_rows("keyframes", rid)[0]["file"])
    os.truncate(frame, frame.stat().st_size // 2)
    r = _cli("repair")
    assert r.exit_code == 0 and f"{rid}  repaired  stages: keyframes" in r.stdout, r.output
    _assert_identical_to_clean(lib)


def _copy_of_part0(part: Path) -> Path:
    shutil.copy(part, part.parent / "part-0 (copy).parquet")
    return part.parent / "part-0 (copy).parquet"


def _subset_of_columns(part: Path) -> Path:
    t = pq.read_table(part)
    pq.write_table(t.select(["seq", "text"]), part.parent / "part-1.parquet")
    return part.parent / "part-1.parquet"


def _foreign_columns(part: Path) -> Path:
    pq.write_table(pa.table({"speaker_notes": ["hello"], "seq": pa.array(["one"])}), part.parent / "extra.parquet")
    return part.parent / "extra.parquet"


@pytest.mark.parametrize("make", [_copy_of_part0, _subset_of_columns, _foreign_columns])
def test_a_stray_file_in_a_partition_is_not_served_and_repair_moves_it_aside(lib, make):
    rid = lib["talk"]
    part = store.table_path("segments", rid)
    stray = make(part)
    count = "SELECT count(*) AS n, count(t0_ms) AS timed FROM segments"
    r = _cli("sql", "--json", count)
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["n"] == row["timed"] == len(store.read_rows("segments", rid)), row  # no duplicates, no NULL times
    check = _doctor_data()
    assert check["status"] == "FAIL" and str(stray) in check["detail"] and "stray file" in check["detail"], check
    r = _cli("repair")
    assert r.exit_code == 0 and f"{rid}  repaired" in r.stdout, r.output
    moved = [line for line in r.stdout.splitlines() if "moved stray file" in line]
    assert len(moved) == 1 and str(stray) in moved[0], r.stdout
    where = Path(moved[0].rsplit(" -> ", 1)[1])
    assert where.is_file() and where.is_relative_to(store.home() / "quarantine") and not stray.exists()
    assert where.read_bytes() and where.name == stray.name  # nothing deleted: the file itself, named as it was
    shutil.rmtree(store.home() / "quarantine")
    _assert_identical_to_clean(lib)


def test_a_stage_replacing_its_partition_moves_a_stray_file_aside(lib):
    rid = lib["talk"]
    stray = _copy_of_part0(store.table_path("words", rid))
    out = service.process(FIXTURES_DIR / MEETING_NAME, force=True)
    assert out["status"] == "processed", out
    assert not stray.exists() and list((store.home() / "quarantine").rglob(stray.name))
    shutil.rmtree(store.home() / "quarantine")
    _assert_identical_to_clean(lib)


_WRITER = """
import sys, time
from talkthrough_assets import store
with store.atomic_path(store.audio_path(sys.argv[1])) as tmp:
    tmp.write_bytes(b"RIFF" + bytes(2_000_000))
    print(tmp, flush=True)
    time.sleep(600)
"""


def test_temp_files_of_killed_writers_are_removed_and_a_live_writers_kept(lib):
    rid = lib["talk"]
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, rid], stdout=subprocess.PIPE, text=True)
               for _ in range(2)]
    try:
        temps = [Path(w.stdout.readline().strip()) for w in writers]
        assert all(t.is_file() for t in temps)
        writers[0].send_signal(signal.SIGKILL)
        writers[0].wait(timeout=30)
        check = _doctor_data()
        assert str(temps[0]) in check["detail"] and str(temps[1]) not in check["detail"], check
        r = _cli("repair")
        assert r.exit_code == 0 and "removed 1 temp file(s)" in r.stdout and str(temps[0]) in r.stdout, r.output
        assert not temps[0].exists() and temps[1].is_file()  # the live writer's file is its own
        assert _cli("gc").exit_code == 0 and temps[1].is_file()
    finally:
        writers[1].kill()
        writers[1].wait(timeout=30)
    assert service.process(FIXTURES_DIR / MEETING_NAME)["status"] == "cached"  # the next command sweeps it
    assert not temps[1].exists()
    _assert_identical_to_clean(lib)


def _started_runs(rid: str) -> list:
    from dagster import DagsterRunStatus, RunsFilter

    from talkthrough_assets.defs.instance import instance  # as stored: app_runs.instance() would mark them

    return instance().get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED],
                                                  tags={"dagster/partition": rid}))


def _kill_after(name: str, stage_done: str) -> None:
    """`talkthrough process --force` of a fixture, killed (SIGKILL, its whole group) once ``stage_done`` ended."""
    env = dict(os.environ, TALKTHROUGH_LOG_LEVEL="DEBUG", COLUMNS="200")
    proc = subprocess.Popen(CLI + ["process", "--force", str(FIXTURES_DIR / name)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    after = {"keyframes": "dedup"}[stage_done]
    try:
        for line in proc.stderr:
            if f'Started stage "{after}"' in line:
                break
        else:
            pytest.fail(f"stage {after} never started")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


@pytest.mark.parametrize("then", [["process"], ["recordings", "--json"], ["repair"], ["sql", "SELECT 1"]])
def test_no_run_stays_started_after_any_command_that_follows_a_kill(lib, then):
    rid = lib["video"]
    _kill_after(SILENT_NAME, "keyframes")
    assert len(_started_runs(rid)) == 1  # what the kill left
    args = then + ([str(FIXTURES_DIR / SILENT_NAME)] if then == ["process"] else [])
    r = subprocess.run(CLI + args, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _started_runs(rid) == []
    assert not list(store.run_marks_dir().iterdir())
    service.process(FIXTURES_DIR / SILENT_NAME)  # whatever the kill left undone
    _assert_identical_to_clean(lib)


def test_a_folder_of_rejected_files_is_recorded_by_one_background_process(lib, tmp_path):
    import threading

    from background import background_rejection_runs, wait_rejections_recorded
    from dagster import DagsterRunStatus, RunsFilter

    folder = tmp_path / "junk"
    folder.mkdir()
    n = 12
    for i in range(n):
        (folder / f"notes {i}.mp4").write_bytes(f"meeting notes {i}, not a video\n".encode() * 20)
    seen: set[int] = set()
    most, stop = [0], threading.Event()

    mine = f"TALKTHROUGH_HOME={store.home()}".encode()

    def ours(pid: int) -> bool:  # not another data root's (other test sessions on this machine)
        try:
            return mine in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            return False

    def parent(pid: int) -> int:
        try:
            return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return 0

    def sample():
        while not stop.is_set():
            found = [p for p in background_rejection_runs() if ours(p)]
            # a child it forks shows its command line until it execs (a probe's ffprobe): not a second one
            now = [p for p in found if parent(p) not in found]
            seen.update(now)
            most[0] = max(most[0], len(now))
            time.sleep(0.02)

    t = threading.Thread(target=sample)
    t.start()
    try:
        r = subprocess.run(CLI + ["process", "--json", str(folder)], capture_output=True, text=True, timeout=300)
        out = json.loads(r.stdout)
        assert len(out) == n and all(x["status"] == "failed" for x in out), r.stdout[-2000:]
        wait_rejections_recorded()
    finally:
        stop.set()
        t.join()
    assert most[0] == 1 and len(seen) <= 2, (most[0], seen)
    inst = app_runs.instance()
    for x in out:
        runs = inst.get_runs(RunsFilter(tags={"dagster/partition": x["recording_id"]}))
        assert [r.status for r in runs] == [DagsterRunStatus.FAILURE], x["recording_id"]
