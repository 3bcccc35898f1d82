"""get_moment_at at an instant four recordings cover, one of them a screencast: the answer (three moments at most)
holds the screencast's moment and its frame, whatever order the recordings started in. The installed
`talkthrough mcp` over stdio, on data the real pipeline made."""

from __future__ import annotations

import json

import anyio

import fixture_facts as F
from test_mcp_robustness import _calls, _copy_home


def test_the_moment_with_a_screen_is_never_the_one_left_to_more(processed, pristine_home, tmp_path, monkeypatch):
    from talkthrough_assets.app import service

    home = _copy_home(pristine_home, tmp_path / "home")
    monkeypatch.setenv("TALKTHROUGH_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    for i in range(3):  # three calls that began before the screencast (09:26:53 UTC) and still run at 09:27:00
        src = F.unique_copy(F.TWO_VOICES_PATH, tmp_path / f"call {i}.m4a", f"rank-{i}")
        out = service.process(src, overrides={"recorded_at": f"2026-03-14T09:26:4{i}+00:00"})
        assert out["status"] == "processed", out
    got = anyio.run(_calls, home, {"at": ("get_moment_at", {"at": "2026-03-14T09:27:00Z"})})
    res = got["at"]
    assert not res.is_error, res.content[0].text
    meta = json.loads(res.content[0].text)
    assert meta["covering"] == 4 and len(meta["moments"]) == 3 and "1 more recording" in meta["more"], meta
    screencast = processed[F.SCREENCAST_NAME]["recording_id"]
    assert meta["moments"][0]["recording"] == screencast, [m["recording"] for m in meta["moments"]]
    assert any(c.type == "image" for c in res.content), [c.type for c in res.content]
