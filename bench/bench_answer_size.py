#!/usr/bin/env python3
"""Answer-size benchmark for the MCP server: characters an agent receives for two everyday tasks,
this tree against another commit's server, both run in this process's venv over the same data root.

Tasks (one real stdio MCP session each, the official Python client):
  * find  "find when X was discussed": search(query=X), then get_transcript of +-15 s around the top hit
  * see   "see the screen then":       get_moment(top hit), then get_frames(at_ms=top hit)
  * list  tools/list (what a client loads once per session)
  * tools one default call of every tool (on the top hit's recording; get_frames/extract_frame on the first
          recording with video): text characters, ~tokens (characters / 4, an estimate), images and their
          tokens (width x height / 750, Anthropic's published estimate for an image block) (issue #38, item 5)

Size = characters of each JSON-RPC result as it travels (``model_dump`` of the result, camelCase,
None fields dropped), with image bytes (base64) counted apart: they cost image tokens, not text.
The ratio is after / before (< 1: leaner).

Usage:
    python bench/bench_answer_size.py --home ~/.talkthrough            # against HEAD~1
    python bench/bench_answer_size.py --home H --before <commit> --query gateway --json
Without --home the committed fixtures are processed into a temporary data root first (minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _export(commit: str, dest: Path) -> Path:
    """The packages of ``commit`` (talkthrough_mcp, talkthrough_assets) under ``dest``."""
    arch = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "talkthrough_mcp", "talkthrough_assets"],
                          capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=arch, check=True)
    return dest


def _server(src: Path | None) -> tuple[str, list[str]]:
    code = ("import sys; sys.path.insert(0, sys.argv[1]) if sys.argv[1] else None; sys.argv = sys.argv[:1]; "
            "from talkthrough_mcp.server import main; sys.exit(main())")
    return sys.executable, ["-c", code, str(src) if src else ""]


def _size(result) -> tuple[int, int]:
    """(text characters, image base64 characters) of one result on the wire."""
    d = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    img = 0
    for c in d.get("content", []):
        if c.get("type") == "image":
            img += len(c.pop("data", ""))
    return len(json.dumps(d, ensure_ascii=False, separators=(",", ":"))), img


async def _measure(home: Path, src: Path | None, query: str) -> dict:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    cmd, args = _server(src)
    params = StdioServerParameters(command=cmd, args=args, env={**os.environ, "TALKTHROUGH_HOME": str(home),
                                                                "TALKTHROUGH_MCP_REFRESH_S": "0"})
    out: dict = {}
    with anyio.fail_after(600):
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            tools = await s.list_tools()
            out["list"] = {"text": len(json.dumps(tools.model_dump(mode="json", by_alias=True, exclude_none=True),
                                                  separators=(",", ":"))), "images": 0}
            se = await s.call_tool("search", {"query": query})
            hits = json.loads(se.content[0].text)["hits"]
            if not hits:
                raise SystemExit(f"no hit for {query!r} in {home}: pick another --query")
            rid, t = hits[0]["recording"], hits[0]["t_ms"]
            tr = await s.call_tool("get_transcript", {"id": rid, "start_ms": max(0, t - 15000), "end_ms": t + 15000})
            sizes = [_size(se), _size(tr)]
            out["find"] = {"text": sum(a for a, _ in sizes), "images": sum(b for _, b in sizes),
                           "search": sizes[0][0], "get_transcript": sizes[1][0]}
            mo = await s.call_tool("get_moment", {"id": rid, "t_ms": t})
            fr = await s.call_tool("get_frames", {"id": rid, "at_ms": t})
            sizes = [_size(mo), _size(fr)] if not fr.is_error else [_size(mo)]
            out["see"] = {"text": sum(a for a, _ in sizes), "images": sum(b for _, b in sizes),
                          "get_moment": sizes[0][0], **({"get_frames": sizes[1][0]} if len(sizes) > 1 else {})}
            listed = json.loads((await s.call_tool("list_recordings", {"limit": 100})).content[0].text)
            video = next((r["id"] for r in listed["recordings"] if r["has_video"]), None)
            out["tools"] = await _per_tool(s, rid, t, video, query)
    return out


def _image_px(result) -> list[tuple[int, int]]:
    import base64
    import io

    from PIL import Image

    out = []
    for c in result.content:
        if getattr(c, "type", None) == "image":
            with Image.open(io.BytesIO(base64.b64decode(c.data))) as img:
                out.append(img.size)
    return out


async def _per_tool(s, rid: str, t: int, video: str | None, query: str) -> dict:
    """What one default call of each tool costs an agent."""
    plan = {"list_recordings": {}, "search": {"query": query}, "get_transcript": {"id": rid},
            "get_moment": {"id": video or rid, "t_ms": t if video in (None, rid) else 1000}}
    if video:
        plan["get_frames"] = {"id": video}
        plan["extract_frame"] = {"id": video, "t_ms": 1000}
    out = {}
    for tool, args in plan.items():
        res = await s.call_tool(tool, args)
        text, img = _size(res)
        px = _image_px(res)
        out[tool] = {"text_chars": text, "text_tokens_est": text // 4, "images": len(px),
                     "image_px": [f"{w}x{h}" for w, h in px], "image_b64_chars": img,
                     "image_tokens_est": sum(round(w * h / 750) for w, h in px)}
    return out


def _processed_home(tmp: Path) -> Path:
    home = tmp / "home"
    env = {**os.environ, "TALKTHROUGH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    exe = Path(sys.executable).with_name("talkthrough")
    subprocess.run([str(exe), "process", str(ROOT / "fixtures")], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return home


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, help="a processed data root (default: process fixtures/ into a temp one)")
    ap.add_argument("--before", default="HEAD~1", help="the commit to compare against (default HEAD~1)")
    ap.add_argument("--query", default="gateway", help="the word of the 'find when X was discussed' task")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    import anyio

    with tempfile.TemporaryDirectory(prefix="tt-answer-size-") as tmp:
        tmp = Path(tmp)
        home = a.home or _processed_home(tmp)
        (tmp / "before").mkdir()
        old = _export(a.before, tmp / "before")
        before = anyio.run(_measure, home, old, a.query)
        after = anyio.run(_measure, home, None, a.query)
    result = {"before": a.before, "query": a.query, "tasks": {},
              "tools": {"before": before["tools"], "after": after["tools"]}}
    for task in ("find", "see", "list"):
        b, n = before[task]["text"], after[task]["text"]
        result["tasks"][task] = {"before_chars": b, "after_chars": n, "ratio": round(n / b, 3),
                                 "before_image_chars": before[task]["images"], "after_image_chars": after[task]["images"],
                                 "before_parts": before[task], "after_parts": after[task]}
    if a.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"answer size, text characters on the wire (before = {a.before}, query {a.query!r})")
    print(f"{'task':<6} {'before':>8} {'after':>8} {'ratio':>6}   parts after")
    for task, r in result["tasks"].items():
        parts = ", ".join(f"{k} {v}" for k, v in r["after_parts"].items() if k not in ("text", "images"))
        print(f"{task:<6} {r['before_chars']:>8} {r['after_chars']:>8} {r['ratio']:>6.3f}   {parts}")
    print("\nper tool, one default call (before -> after): text chars (~tokens), images (~tokens, base64 chars)")
    for tool, n in result["tools"]["after"].items():
        b = result["tools"]["before"].get(tool, {})
        print(f"{tool:<16} text {b.get('text_chars')} -> {n['text_chars']} (~{n['text_tokens_est']} tok); "
              f"images {b.get('images')} x {','.join(sorted(set(b.get('image_px', [])))) or '-'} -> {n['images']} x "
              f"{','.join(sorted(set(n['image_px']))) or '-'} (~{b.get('image_tokens_est')} -> ~{n['image_tokens_est']} tok; "
              f"base64 {b.get('image_b64_chars')} -> {n['image_b64_chars']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
