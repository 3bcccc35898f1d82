"""Damage and full disks on a real small filesystem (issue #34): a tmpfs this module mounts holds the data root.
Each case shows the one-line reason, that nothing already stored is lost, and the repair; `doctor` fails on
each kind of damage and names the fix. Two copies of the 73-KB silent video are the recordings (no audio: no
Whisper), processed once for the module through `service.process` (the CLI's code path); the CLI commands
run through typer's runner, in this process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixture_facts import FIXTURES_DIR, MEETING_NAME, SILENT_NAME, unique_copy
from typer.testing import CliRunner

from talkthrough_assets.cli import main as cli
from talkthrough_assets.pipeline import datacheck

from talkthrough_assets.app import service
from talkthrough_assets import store
from talkthrough_assets.stages import keyframes as keyframes_stage
from talkthrough_assets.app.selfcheck import DATA_CHECK

MB = 1_000_000


def _mount(path: Path, size_mb: int) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the fault battery's small filesystem)")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"the kernel refused a tmpfs mount here: {(r.stderr or r.stdout).strip()}")


def _remount(path: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(path)], check=True)


@pytest.fixture(scope="module")
def small(tt_home, processed, tmp_path_factory):
    """A 48-MB tmpfs holding the data root (and Dagster's storage), with two processed recordings (after the shared
    fixtures are processed: their data root, not this one, holds them, whatever test runs first)."""
    mnt = tmp_path_factory.mktemp("smallfs")
    _mount(mnt, 48)
    media = tmp_path_factory.mktemp("faultmedia")
    home = mnt / "home"
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("TALKTHROUGH_HOME", str(home))
            mp.setenv("DAGSTER_HOME", str(home / "dagster"))
            a = media / "a.mp4"
            shutil.copy(FIXTURES_DIR / SILENT_NAME, a)
            b = unique_copy(FIXTURES_DIR / SILENT_NAME, media / "b.mp4", "faults-b")
            out = {"mnt": mnt, "home": home, "media": media, "a": a, "b": b}
            for k in ("a", "b"):
                s = service.process(out[k])
                assert s["status"] == "processed", s
                out[f"{k}_id"] = s["recording_id"]
            yield out
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _cli(*args: str):
    store.integrity.forget_skipped()
    return CliRunner().invoke(cli.app, list(args))


def _files_of(rid: str) -> dict[str, bytes]:
    """Every stored file of one recording (its table partitions, manifest, report, frames)."""
    out = {}
    for p in store.home().rglob("*"):
        if p.is_file() and rid in str(p) and "/locks/" not in str(p) and "stage_runs" not in str(p) \
                and "/sources/" not in str(p):
            out[str(p.relative_to(store.home()))] = p.read_bytes()
    return out


def _doctor_data() -> tuple[int, dict]:
    r = _cli("doctor", "--json")
    rep = json.loads(r.stdout)
    return r.exit_code, next(c for c in rep["checks"] if c["check"] == DATA_CHECK)


def _part(table: str, rid: str) -> Path:
    return store.table_path(table, rid, "part-0")


def test_a_torn_partition_is_skipped_by_readers_named_by_doctor_and_repaired_by_process(small):
    a, b = small["a_id"], small["b_id"]
    total = store.connect().execute("SELECT count(*) FROM keyframes").fetchone()[0]
    kept_b = _files_of(b)
    f = _part("keyframes", a)
    os.truncate(f, f.stat().st_size // 2)  # `truncate -s half`
    # readers of every other recording go on, with one warning line naming the file and the fix
    r = _cli("sql", "--json", "SELECT recording, count(*) AS n FROM keyframes GROUP BY recording")
    assert r.exit_code == 0, r.output
    assert {row["recording"] for row in json.loads(r.stdout)} == {b}
    warn = [line for line in r.stderr.splitlines() if "damaged" in line]
    assert len(warn) == 1 and str(f) in warn[0] and "talkthrough repair" in warn[0], r.stderr
    r = _cli("recordings", "--json")
    assert r.exit_code == 0 and {x["recording"] for x in json.loads(r.stdout)} == {a, b}, r.output
    code, check = _doctor_data()
    assert code != 0 and check["status"] == "FAIL", check
    assert str(f) in check["detail"] and "torn" in check["detail"] and "talkthrough repair" in check["detail"]
    # process notices it and re-makes exactly the stage that wrote it (and the manifest), not "cached"
    out = service.process(small["a"])
    assert out["status"] == "processed" and out["stages_run"] == ["keyframes", "manifest"], out
    assert pq.read_table(f).num_rows > 0
    assert store.connect().execute("SELECT count(*) FROM keyframes").fetchone()[0] == total
    assert _files_of(b) == kept_b  # nothing of the other recording touched
    assert _doctor_data()[1]["status"] == "ok"


def test_deleted_manifest_frames_and_report_are_restored(small):
    a, b = small["a_id"], small["b_id"]
    kept_b = _files_of(b)
    store.manifest_path(a).unlink()  # `rm manifests/<id>.json`
    shutil.rmtree(store.frames_root(a))  # `rm -rf frames/<id>`
    code, check = _doctor_data()
    assert code != 0 and "manifest missing" in check["detail"] and "frames missing" in check["detail"], check
    out = service.process(small["a"])
    assert out["status"] == "processed" and out["stages_run"] == ["keyframes", "manifest"], out
    assert keyframes_stage.frame_index_check(a).passed and store.manifest_path(a).is_file()
    # a deleted report: `talkthrough repair ID` re-runs the manifest stage alone
    (store.home() / store.report_key(a)).unlink()
    assert "report missing" in _doctor_data()[1]["detail"]
    r = _cli("repair", a)
    assert r.exit_code == 0 and f"{a}  repaired  stages: manifest" in r.stdout, r.output
    assert (store.home() / store.report_key(a)).is_file()
    assert _cli("repair").stdout.strip() == "nothing to repair: every stored output is whole"
    assert _files_of(b) == kept_b and _doctor_data()[1]["status"] == "ok"


def test_a_partition_of_another_schema_is_named_and_repaired(small):
    a = small["a_id"]
    f = _part("ocr", a)
    pq.write_table(pa.table({"ms": pa.array(["zero"]), "text": pa.array(["x"])}), f)  # ms as text
    code, check = _doctor_data()
    assert code != 0 and "column 'ms' is string, the schema says int64" in check["detail"], check
    assert store.read_rows("ocr", a) == []  # skipped, not a crash
    r = _cli("repair")
    assert r.exit_code == 0 and f"{a}  repaired  stages: ocr, manifest" in r.stdout, r.output
    assert _doctor_data()[1]["status"] == "ok"


def test_read_only_data_root_reads_and_refuses_writes_in_one_line(small):
    a = small["a_id"]
    before = sorted(str(p) for p in store.home().rglob("*"))
    _remount(small["mnt"], "ro")
    try:
        out = service.process(small["a"])  # already-processed bytes: the stored summary, nothing written
        assert out["status"] == "cached" and out["frames"]["count"] > 0, out
        r = _cli("gc", "--dry-run")
        assert r.exit_code == 0 and "would remove" in r.stdout, r.output
        r = _cli("sql", "SELECT count(*) FROM recordings")
        assert r.exit_code == 0, r.output
        for args in (("gc",), ("forget", a, "--yes")):
            r = _cli(*args)
            lines = [x for x in r.output.splitlines() if x.strip()]
            assert r.exit_code == 1 and len(lines) == 1, r.output
            assert f"read-only data root: {store.home()}" in lines[0] and "Traceback" not in r.output
    finally:
        _remount(small["mnt"], "rw")
    assert sorted(str(p) for p in store.home().rglob("*")) == before  # no lock file, nothing lost


def _fill(mnt: Path, leave_bytes: int) -> Path:
    """Take all but ``leave_bytes`` of the filesystem at ``mnt`` (or as close as it can: a run writing beside it
    may take some of what was free between the measure and the allocation; it then tries for a little less)."""
    filler = mnt / "filler"
    for margin in (0, 256 << 10, 1 << 20, 4 << 20):
        free = shutil.disk_usage(mnt).free
        try:
            with open(filler, "wb") as f:
                os.posix_fallocate(f.fileno(), 0, max(1, free - leave_bytes - margin))
            return filler
        except OSError:
            filler.unlink(missing_ok=True)
    raise AssertionError(f"could not fill {mnt}")


def test_preflight_counts_frames_by_resolution_and_the_model_join(small, tmp_path, monkeypatch):
    # the 73-KB clip asks a few MB, not the 35 MB of a 120-frame 1080p budget
    from talkthrough_assets.model.media import ProbeRow
    from talkthrough_assets.stages import probe

    row = store.read_one("probe", small["a_id"], record=ProbeRow)
    need = probe.estimate_need(row, {"max_frames": 120})
    assert need["data"] < 8 * MB, need
    # audio on a data root whose model cache lacks the multilingual base model: its ~145-MB join is counted
    # when it is the Whisper model (the language check of the default tiny.en reads it into memory: nothing)
    from talkthrough_assets.store.models import base_model_join_bytes

    assert base_model_join_bytes("tiny.en") == 0
    monkeypatch.setenv("TALKTHROUGH_WHISPER_MODEL", "base")
    if base_model_join_bytes() == 0:
        pytest.skip("the multilingual base model's wheels are not installed: nothing to join")
    src = unique_copy(FIXTURES_DIR / MEETING_NAME, tmp_path / "talk.m4a", "faults-model")
    kept = _files_of(small["a_id"])
    out = service.process(src)
    assert out["status"] == "failed" and "not enough disk space" in out["reason"], out
    assert "model cache's 1" in out["reason"] and "MB included" in out["reason"], out
    assert not (store.models_dir() / "whisper-base" / "model.bin").exists()
    assert _files_of(small["a_id"]) == kept


def _liar_mkv(path: Path) -> Path:
    """A 1-s Matroska video whose header (Segment Info Duration) says 10 hours."""
    import struct
    from fractions import Fraction

    import av
    import numpy as np

    with av.open(str(path), "w", format="matroska") as out:
        v = out.add_stream("libx264", rate=10)
        v.width, v.height, v.pix_fmt = 64, 48, "yuv420p"
        for i in range(10):
            f = av.VideoFrame.from_ndarray(np.full((48, 64, 3), i * 20, np.uint8), format="rgb24")
            f.pts, f.time_base = i, Fraction(1, 10)
            out.mux(v.encode(f))
        out.mux(v.encode(None))
    data = bytearray(path.read_bytes())
    i = data.find(b"\x44\x89\x88")  # Duration, an 8-byte float in TimecodeScale units (ms)
    assert i > 0
    data[i + 3:i + 11] = struct.pack(">d", 36_000_000.0)
    path.write_bytes(bytes(data))
    return path


def test_decoded_time_beats_header_time(small, tmp_path):
    from talkthrough_assets.stages import probe

    liar = _liar_mkv(tmp_path / "liar.mkv")
    info = probe.probe_file(liar, max_seconds=4 * 3600)
    assert info.duration_ms == 1000 and info.header_duration_ms == 36_000_000 and not info.cap_hit, info
    # a truncated file is processed with a warning saying how much was readable (summary, manifest, --json)
    data = (FIXTURES_DIR / SILENT_NAME).read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: len(data) // 2])
    r = _cli("process", "--json", str(cut))
    (out,) = json.loads(r.stdout)
    assert r.exit_code == 0 and out["status"] == "processed", r.output
    assert out["warning"].startswith("only ") and "of the 7.0 s its header claims could be read" in out["warning"]
    assert out["duration_s"] < 7.0
    media = store.get_json(store.manifest_key(out["recording_id"]))["media"]
    assert media["header_duration_s"] == 7.0 and media["duration_s"] == out["duration_s"], media
    # nothing readable: fails with the reason
    stub = tmp_path / "stub.mp4"
    stub.write_bytes(data[:2000])
    bad = service.process(stub)
    assert bad["status"] == "failed" and ("nothing readable" in bad["reason"] or "not a readable" in bad["reason"])


def test_a_line_break_in_a_file_name_stays_on_its_line(small, tmp_path):
    odd = tmp_path / "notes\nfinal.mp4"
    odd.write_bytes(b"meeting notes, not a video\n" * 50)
    r = _cli("process", str(odd))
    assert r.exit_code == 1
    head = [x for x in r.stdout.splitlines() if "failed" in x]
    assert len(head) == 1 and "notes\\nfinal.mp4" in head[0], r.stdout
    reason = [x for x in r.stdout.splitlines() if "reason:" in x]
    assert len(reason) == 1 and "not a readable media file (it holds text" in reason[0], r.stdout
