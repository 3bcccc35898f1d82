"""Shared test setup: a private data root, and the fixtures processed ONCE per session through
the real Dagster job (real faster-whisper, RapidOCR, sherpa-onnx), reused by every module."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

SHARED = ROOT.parent / "shared"
DIARIZATION_MODELS = SHARED / "models" / "diarization"


@pytest.fixture(scope="session")
def tt_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("tthome")
    os.environ["TALKTHROUGH_HOME"] = str(home)
    os.environ["DAGSTER_HOME"] = str(home / "dagster")
    # CI has ../shared beside the clone; the diarization tests need its offline model copies
    assert DIARIZATION_MODELS.is_dir() or os.environ.get("TALKTHROUGH_DIARIZATION_MODELS"), (
        f"diarization models not found at {DIARIZATION_MODELS}: clone next to shared/ "
        "or set TALKTHROUGH_DIARIZATION_MODELS")
    os.environ.setdefault("TALKTHROUGH_DIARIZATION_MODELS", str(DIARIZATION_MODELS))
    return home


@pytest.fixture(scope="session")
def processed(tt_home) -> dict[str, dict]:
    """Summaries of every fixture processed through `service.process` (the CLI's code path)."""
    from fixture_facts import FIXTURES_DIR, PROCESS_OPTIONS

    from talkthrough_assets import service

    out = {}
    for name, options in PROCESS_OPTIONS.items():
        out[name] = service.process(FIXTURES_DIR / name, overrides=options or None)
        assert out[name]["status"] == "processed", out[name]
    # a frozen copy holding exactly the four fixtures, for readers that assert on the whole library
    shutil.copytree(tt_home, tt_home.parent / "pristine", ignore=shutil.ignore_patterns("dagster", "locks"))
    return out


@pytest.fixture(scope="session")
def pristine_home(processed, tt_home) -> Path:
    """A data root with only the four processed fixtures (other modules add recordings to tt_home)."""
    return tt_home.parent / "pristine"
