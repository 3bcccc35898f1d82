"""A bad setting value is refused where it enters, with exit 2 and its reason, and nothing is saved: a plain
`process` of the same file afterwards succeeds. The real CLI on a pseudo-terminal, a private data root."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from fixture_facts import SILENT_PATH, unique_copy
from pty_run import on_pty

from talkthrough_assets.core import ids

TALKTHROUGH = str(Path(sys.executable).with_name("talkthrough"))
BAD = [
    (["--recorded-at", "14"], "recorded_at must be an ISO-8601 date and time"),
    (["--recorded-at", "2026-02-30T10:00"], "recorded_at must be an ISO-8601 date and time"),
    (["--beam-size", "0"], "beam_size must be from 1 to 20"),
    (["--beam-size", "abc"], "beam_size must be a whole number"),
    (["--language", "xx"], "language must be a Whisper language code"),
    (["--model", "nosuch"], "model must be a CTranslate2 model folder"),
    (["--max-frames", "-1"], "max_frames must be from 1"),
    (["--num-speakers", "many"], "speaker count must be a number"),
]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    base = tmp_path_factory.mktemp("bad_values")
    src = unique_copy(SILENT_PATH, base / "clip.mp4", "bad-values")
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "TALKTHROUGH_PG_URL")}
    env.update(TALKTHROUGH_HOME=str(base / "home"), COLUMNS="200")
    return {"src": src, "env": env, "root": base / "home", "rid": ids.recording_id(src)}


def _settings(home) -> Path:
    return home["root"] / "settings" / f"{home['rid']}.json"


@pytest.mark.parametrize("args,reason", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_option_value_exits_2_with_its_reason_and_saves_nothing(home, args, reason):
    rc, text = on_pty([TALKTHROUGH, "process", *args, str(home["src"])], home["env"], cols=200)
    assert rc == 2, text
    assert reason in text and "Traceback" not in text, text
    assert not _settings(home).exists()
    assert not (home["root"] / "manifests" / f"{home['rid']}.json").exists()  # no run started


def test_a_bad_environment_value_exits_2_before_any_run(home):
    rc, text = on_pty([TALKTHROUGH, "process", str(home["src"])], {**home["env"], "TALKTHROUGH_MAX_FRAMES": "-1"})
    assert rc == 2 and "TALKTHROUGH_MAX_FRAMES" in text and "Traceback" not in text, text
    assert not (home["root"] / "manifests" / f"{home['rid']}.json").exists()


def test_after_the_bad_values_a_plain_process_succeeds_and_a_bad_stored_value_is_named(home):
    rc, text = on_pty([TALKTHROUGH, "process", str(home["src"])], home["env"])
    assert rc == 0 and "processed" in text, text
    # a value stored by an older version (or edited by hand): the run names it and the file, and giving the
    # setting again replaces it
    _settings(home).parent.mkdir(parents=True, exist_ok=True)
    _settings(home).write_text(json.dumps({"beam_size": 0}))
    rc, text = on_pty([TALKTHROUGH, "process", "--force", str(home["src"])], home["env"], cols=200)
    assert rc == 1 and "beam_size must be from 1 to 20" in text and "settings/" in text, text
    assert "Traceback" not in text, text
    rc, text = on_pty([TALKTHROUGH, "process", "--beam-size", "5", str(home["src"])], home["env"])
    assert rc == 0, text
    assert json.loads(_settings(home).read_text()) == {"beam_size": 5}
