"""Readable while the rest runs (#19 item 5), end to end: a real `talkthrough process` (real Dagster run, real
faster-whisper, the fixture in 4-s chunks) publishes a partial generation after its first chunk; a real MCP
client over stdio reads it while the run is still going (``partial: true``, the covered range, ``next_start_ms``
where it ends), and every answer it gets names one generation whole (the same generation label never comes
with two covered ranges or two segment counts). The run is then killed: the partial stays, marked partial (the
recording has no finished row, nothing of it looks final). A re-run publishes the final generation, which
replaces it in every tool; the partial transcript was a prefix of the final one."""

from __future__ import annotations

import os
import signal
import time
import subprocess
import sys
from pathlib import Path

import anyio
from test_mcp_search_index import TALKTHROUGH, _body

from fixture_facts import TWO_VOICES_PATH, unique_copy


def _env(home: Path) -> dict:
    return {**os.environ, "TALKTHROUGH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
            "TALKTHROUGH_MCP_REFRESH_S": "0", "TALKTHROUGH_CHUNK_S": "4", "TALKTHROUGH_STAGE_WORKERS": "1"}


def test_an_agent_reads_the_transcript_so_far_while_the_run_goes_on_then_the_final_replaces_it(tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from talkthrough_assets.core import ids

    home = tmp_path / "home"
    src = unique_copy(TWO_VOICES_PATH, tmp_path / "long meeting.m4a", "partial-e2e")
    rid = ids.recording_id(src)
    env = _env(home)
    cmd = [sys.executable, "-m", "talkthrough_assets.cli.main", "process", str(src), "--json"]
    covered: dict[str, set] = {}  # generation label -> the covered ranges answers gave with it
    counts: dict[str, set] = {}  # generation label -> the segment counts answers gave with it

    def saw(gen: str, cov, n: int | None = None) -> None:
        covered.setdefault(gen, set()).add(tuple(cov or ()))
        if n is not None:
            counts.setdefault(gen, set()).add(n)

    async def scenario() -> tuple[dict, dict, dict, dict]:
        params = StdioServerParameters(command=TALKTHROUGH, args=["mcp"], env=env)
        with anyio.fail_after(400):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                run = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True)
                try:
                    first = None
                    while first is None and run.poll() is None:
                        res = await s.call_tool("get_transcript", {"id": rid})
                        body = _body(res)
                        if not res.is_error and body.get("partial"):
                            first = body
                            break
                        await anyio.sleep(0.2)
                    alive = run.poll() is None
                    assert first is not None and alive, "the run ended before a partial transcript was read"
                    # read while the run goes on: listing and search name the same generation whole
                    for _ in range(3):
                        t = _body(await s.call_tool("get_transcript", {"id": rid}))
                        saw(t["generation"], t.get("covered_ms"), t["returned"])
                        listed = _body(await s.call_tool("list_recordings", {}))["recordings"]
                        for item in listed:
                            saw(item["generation"], item.get("covered_ms"), item["counts"]["segments"])
                        word = t["segments"][0]["text"].split()[0].strip(",.?!") if t["segments"] else "the"
                        found = _body(await s.call_tool("search", {"query": word}))
                        for rec in found["recordings"].values():
                            saw(rec["generation"], rec.get("covered_ms"))
                finally:
                    os.killpg(run.pid, signal.SIGKILL)
                    run.wait()
                # killed: the partial stays, and says what it is; nothing of the run looks final
                assert '"partial"' in (home / "manifests" / f"{rid}.json").read_text()
                assert not (home / "tables" / "recordings" / f"recording={rid}").exists()
                assert not (home / "reports" / f"{rid}.html").exists()
                left = _body(await s.call_tool("get_transcript", {"id": rid}))
                listed = _body(await s.call_tool("list_recordings", {}))
                moment = _body(await s.call_tool("get_moment", {"id": rid, "t_ms": 27_000}))
                again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400)
                assert again.returncode == 0, again.stderr[-2000:]
                final = _body(await s.call_tool("get_transcript", {"id": rid}))
                final_list = _body(await s.call_tool("list_recordings", {}))
                word = left["segments"][0]["text"].split()[0].strip(",.?!")
                final_search = _body(await s.call_tool("search", {"query": word, "id": rid}))
                assert final_search["hits"], final_search
                return first, left, listed | {"moment": moment}, {"t": final, "list": final_list,
                                                                 "search": final_search}

    first, left, listed, final = anyio.run(scenario)

    end = first["covered_ms"][1]
    assert first["covered_ms"][0] == 0 and 0 < end < 28_000, first["covered_ms"]
    assert first["truncated"] is False and first["next_start_ms"] == end
    assert first["start_ms"] == 0 and first["end_ms"] == end  # the page ends where covered_ms ends (#38, item 5)
    assert first["continue_with"] == {"id": rid, "start_ms": end} and first["partial_note"]
    assert all(seg["t_ms"] < end for seg in first["segments"]) and first["segments"]
    # every answer named one generation whole
    assert covered and all(len(v) == 1 for v in covered.values()), covered
    assert all(len(v) == 1 for v in counts.values()), counts

    assert left["partial"] is True and left["next_start_ms"] == left["covered_ms"][1] == left["end_ms"]
    item = next(i for i in listed["recordings"] if i["id"] == rid)
    assert item["partial"] is True and item["covered_ms"] == left["covered_ms"]
    assert item["next_start_ms"] == left["next_start_ms"] and listed["partial_note"]
    moment = listed["moment"]
    assert moment["partial"] is True and moment["transcript"]["next_start_ms"] == max(17_000, left["covered_ms"][1])
    t = final["t"]
    assert "partial" not in t and "covered_ms" not in t and t["next_start_ms"] is None
    assert t["generation"] != left["generation"]
    # the partial transcript was a prefix of the final one (same chunks, same assembly)
    n = len(left["segments"])
    assert [(s["t_ms"], s["text"]) for s in t["segments"][:n]] == [(s["t_ms"], s["text"]) for s in left["segments"]]
    assert len(t["segments"]) > n
    item = next(i for i in final["list"]["recordings"] if i["id"] == rid)
    assert "partial" not in item and "partial_note" not in final["list"]
    assert "partial" not in final["search"]["recordings"][rid]
