"""What an agent sends, as the installed `talkthrough mcp` answers it over stdio (the SDK's client), over the
processed fixtures: an explicit null for any optional argument means "omitted", every invalid argument comes back
with a hint, and each integer argument's range is in its inputSchema."""

from __future__ import annotations

import json

import anyio
import pytest

import fixture_facts as F
from test_mcp_robustness import _calls

# every optional argument of every tool, sent as null: answered as if it were omitted
NULL_CALLS = {
    "list_recordings": {"offset": None, "limit": None, "since": None, "until": None, "tz": None, "person": None},
    "get_transcript": {"start_ms": None, "end_ms": None, "speaker": None, "format": None, "max_chars": None,
                       "with_t_wall": None},
    "get_frames": {"start_ms": None, "end_ms": None, "at_ms": None, "include_duplicates": None, "limit": None},
    "get_moment": {"t_ms": 1000, "window_ms": None},
    "get_moment_at": {"at": "2026-03-14 09:27", "tz": None, "window_ms": None},
    "search": {"query": "slide", "id": None, "speaker": None, "limit": None, "since": None, "until": None,
               "tz": None},
    "extract_frame": {"t_ms": 1000, "crop": None, "full_resolution": None},
}
NEEDS_ID = {"get_transcript", "get_frames", "get_moment", "extract_frame"}
BAD = {
    "negative start": ("get_transcript", {"start_ms": -5}),
    "vtt": ("get_transcript", {"format": "vtt"}),
    "empty query": ("search", {"query": ""}),
    "mars": ("get_moment_at", {"at": "2026-03-14 09:27", "tz": "Mars/Olympus"}),
    "limit 0": ("list_recordings", {"limit": 0}),
    "window": ("get_moment", {"t_ms": 0, "window_ms": 70000}),
    "past the end": ("get_moment", {"t_ms": 10 ** 9}),
    "string ms": ("get_frames", {"at_ms": "5"}),
    "crop": ("extract_frame", {"t_ms": 0, "crop": {"x": 0, "y": 0, "width": 2, "height": 2}}),
}


def _with_id(tool: str, args: dict, rid: str) -> dict:
    return {"id": rid, **args} if tool in NEEDS_ID else args


@pytest.fixture(scope="module")
def answers(processed, pristine_home):
    rid = processed[F.SCREENCAST_NAME]["recording_id"]
    calls = {f"null {t}": (t, _with_id(t, a, rid)) for t, a in NULL_CALLS.items()}
    calls |= {f"omitted {t}": (t, _with_id(t, {k: v for k, v in a.items() if v is not None}, rid))
              for t, a in NULL_CALLS.items()}
    calls |= {f"bad {k}": (t, _with_id(t, a, rid)) for k, (t, a) in BAD.items()}
    return anyio.run(_calls, pristine_home, calls)


@pytest.mark.parametrize("tool", sorted(NULL_CALLS))
def test_null_for_an_optional_argument_is_the_same_as_omitting_it(answers, tool):
    null, omitted = answers[f"null {tool}"], answers[f"omitted {tool}"]
    assert not null.is_error, null.content[0].text
    assert null.content[0].text == omitted.content[0].text  # the very same answer
    assert len(null.content) == len(omitted.content)


@pytest.mark.parametrize("case", sorted(BAD))
def test_every_invalid_argument_comes_with_a_hint(answers, case):
    res = answers[f"bad {case}"]
    assert res.is_error, res.content[0].text
    err = json.loads(res.content[0].text)
    assert err["error"] == "invalid_argument" and err["message"], err
    assert err.get("hint"), err


def test_integer_ranges_are_in_the_input_schemas(answers):
    props = {t.name: t.input_schema["properties"] for t in answers["tools"]}
    assert props["list_recordings"]["limit"].items() >= {"minimum": 1, "maximum": 100}.items()
    assert props["get_transcript"]["max_chars"]["minimum"] == 1000
    assert props["get_frames"]["limit"]["maximum"] == 6 and props["search"]["limit"]["maximum"] == 50
    assert props["get_moment"]["window_ms"]["maximum"] == 60000
    for name, tool in props.items():  # every integer argument says its lower bound
        for arg, schema in tool.items():
            if schema.get("type") == "integer":
                assert "minimum" in schema, (name, arg)


def _serve(home, *args: str) -> tuple[int, str]:
    import subprocess
    import sys
    from pathlib import Path

    from mcp_env import server_env

    r = subprocess.run([str(Path(sys.executable).with_name("talkthrough")), "mcp", "--http", *args],
                       env={**server_env(home), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                       timeout=120)
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_a_port_out_of_range_exits_2(pristine_home, port):
    rc, text = _serve(pristine_home, "--port", port)
    assert rc == 2 and "65535" in text and "Traceback" not in text and "streamable HTTP on" not in text, text


def test_a_port_in_use_is_one_line_not_a_traceback(pristine_home):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        rc, text = _serve(pristine_home, "--port", str(port))
    assert rc == 2 and f"cannot listen on 127.0.0.1:{port}" in text, text
    assert "Traceback" not in text and "streamable HTTP on" not in text, text
