"""The persistent search index (issue #26, item 4) on the processed fixtures, through a real MCP client over
stdio: the pipeline wrote one part per recording and merged them; the server answers from them without
tokenizing a manifest, exactly as it answers from the manifests alone; the SQL ``terms`` table holds the
same terms as MCP search (one tokenizer: plurals folded on both sides); ``talkthrough forget`` removes a
recording's postings from the parts and the merged files while a server keeps running."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pyarrow as pa
import pytest
from test_mcp_robustness import _copy_home

import fixture_facts as F

TALKTHROUGH = shutil.which("talkthrough") or str(Path(sys.executable).with_name("talkthrough"))
QUERIES = [("checkout", {}), ("dashboards", {}), ("gateway timeout", {}), ("budget xylophone", {}),
           ("rollback", {}), ('"roll back"', {}), ("survey", {"speaker": "S2"}), ("database", {"limit": 50})]


@pytest.fixture(scope="module")
def ids(processed) -> dict[str, str]:
    return {name: s["recording_id"] for name, s in processed.items()}


def _body(res) -> dict:
    return json.loads(res.content[0].text)


def _env(home: Path) -> dict:
    return {**os.environ, "TALKTHROUGH_HOME": str(home), "TALKTHROUGH_MCP_REFRESH_S": "0"}


async def _session(home: Path, steps) -> list:
    """Run ``steps`` (async callables taking the client session) in one stdio session of `talkthrough mcp`."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    out = []
    params = StdioServerParameters(command=TALKTHROUGH, args=["mcp"], env=_env(home))
    with anyio.fail_after(240):
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            for step in steps:
                out.append(await step(s))
    return out


async def _search_all(sess) -> list[dict]:
    return [_body(await sess.call_tool("search", {"query": q, **kw})) for q, kw in QUERIES]


def _with_home(home: Path):
    class _Home:
        def __enter__(self):
            self.old = os.environ.get("TALKTHROUGH_HOME")
            os.environ["TALKTHROUGH_HOME"] = str(home)

        def __exit__(self, *exc):
            os.environ["TALKTHROUGH_HOME"] = self.old
    return _Home()


def test_pipeline_writes_parts_and_merged_buckets_the_server_reads_them_as_it_would_the_manifests(
        processed, pristine_home, ids, tmp_path):
    from talkthrough_assets.model import search_index as si
    from talkthrough_assets.read.reader import Reader

    home = _copy_home(pristine_home, tmp_path / "home")
    with _with_home(home):
        parts = si.list_parts()
        assert set(parts) == set(ids.values()) and all(len(p) == 1 for p in parts.values()), parts
        merged = {r["rid"]: r["part"] for b in si.BUCKETS if (lb := si.load_bucket(b)) for r in lb[1].recs}
        assert merged == {rid: p[0][0] for rid, p in parts.items()}  # every part merged (small library)
        rd = Reader(refresh_interval=0)
        rd.warm()
        assert rd.index.manifest_loads == 0 and rd.index.loads == 0  # nothing tokenized, no part even read
        assert rd.index.view.where.keys() == set(ids.values())
        rd.index.close()
    with_index = anyio.run(_session, home, [_search_all])[0]
    assert sum(r["returned"] for r in with_index) > 10
    # the same library without its index: the server indexes the manifests itself, same answers
    bare = _copy_home(pristine_home, tmp_path / "bare")
    shutil.rmtree(bare / "index")
    without = anyio.run(_session, bare, [_search_all])[0]
    assert _no_generation(with_index) == _no_generation(without)


def _no_generation(answers: list[dict]) -> list[dict]:
    """Answers less the generation labels (a label names the manifest file's identity: a copy has new ones)."""
    return [{**a, "recordings": {rid: {k: v for k, v in r.items() if k != "generation"}
                                 for rid, r in a["recordings"].items()}} for a in answers]


def test_sql_terms_and_mcp_search_fold_plurals_alike(processed, pristine_home, ids):
    """One tokenizer: the SQL terms table has 'dashboard' (never 'dashboards'), and search("dashboards")
    counts exactly the documents the SQL table lists for it."""
    from talkthrough_assets import store
    from talkthrough_assets.model import terms

    with _with_home(pristine_home):
        con = store.connect()
        try:
            assert con.execute("SELECT count(*) FROM terms WHERE term = 'dashboards'").fetchone()[0] == 0
            for word in ("dashboards", "timeouts", "checkout", "budgets"):
                (term,) = terms.index_terms(word)
                docs = con.execute("SELECT count(*) FROM (SELECT DISTINCT recording, source, ref FROM terms "
                                   "WHERE term = ?)", [term]).fetchone()[0]
                hits = con.execute("SELECT DISTINCT recording, source, t_ms FROM terms WHERE term = ?",
                                   [term]).fetchall()
                from talkthrough_assets.read.reader import Reader

                rd = Reader(refresh_interval=0)
                res = rd.search(word, limit=50).dump()
                rd.index.close()
                assert res["total_matches"] == docs, (word, res["total_matches"], docs)
                assert {(h["recording"], h["source"], h["t_ms"]) for h in res["hits"]} <= set(hits), word
                if word == "dashboards":
                    assert docs >= 1
        finally:
            con.close()


def test_forget_removes_postings_while_a_server_runs(processed, pristine_home, ids, tmp_path):
    from talkthrough_assets.model import search_index as si

    home = _copy_home(pristine_home, tmp_path / "home")
    sc = ids[F.SCREENCAST_NAME]

    async def forget(sess):  # the CLI, in its own process, while the server keeps its session
        return subprocess.run([TALKTHROUGH, "forget", sc, "--yes", "--json"], env=_env(home),
                              capture_output=True, text=True, timeout=300)

    async def search(sess):
        return _body(await sess.call_tool("search", {"query": "checkout", "limit": 50}))

    before, done, after = anyio.run(_session, home, [search, forget, search])
    assert done.returncode == 0, done.stderr
    removed = json.loads(done.stdout)["removed"]
    assert any("index/parts/" + sc in r for r in removed), removed
    assert any(h["recording"] == sc for h in before["hits"])
    assert not any(h["recording"] == sc for h in after["hits"])
    assert sc not in after["recordings"]
    with _with_home(home):
        assert sc not in si.list_parts()
        for b in si.BUCKETS:
            lb = si.load_bucket(b)
            if lb:
                assert sc not in {r["rid"] for r in lb[1].recs}
    # no merged file anywhere holds a document of it: its text is gone from every docs file
    text = next(h for h in before["hits"] if h["recording"] == sc)["snippet"].strip("…")
    for f in (home / si.MERGED).rglob("*-docs.arrow"):
        with pa.memory_map(str(f)) as mm:
            docs = pa.ipc.open_file(mm).read_all()
        assert not any(text in t for t in docs.column("text").to_pylist() if t), f
