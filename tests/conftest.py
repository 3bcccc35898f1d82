"""Shared test setup: the tiers, a private data root, and the fixtures processed ONCE per session
through the real Dagster job (real faster-whisper, RapidOCR, sherpa-onnx), reused by every module.

Tiers are folders; each test is marked with its folder's name and gets that tier's timeout:
- ``tests/unit``: no models, no Dagster instance, no ../shared; seconds in total (``pytest -m unit``).
- ``tests/integration``: a real Dagster instance and the real engines on the fixtures, Postgres, S3.
- ``tests/e2e``: real processes end to end: webserver + Chromium, MCP over stdio and HTTP.
A full run collects the unit tier first, then integration, then e2e.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))  # helper modules (fixture_facts, pg_cluster) import from every tier

# The product under test is the installed package (a wheel, as users install it; an editable install of this
# checkout for a quick loop). A child started as `python -m ...` from the repo folder would put the folder first
# on its path and import the checkout instead: PYTHONSAFEPATH keeps every child on the installed package.
os.environ["PYTHONSAFEPATH"] = "1"
PACKAGES = ("talkthrough_assets", "talkthrough_mcp")
# set by .ci/run: the suite must test an installed wheel, not the checkout
FROM_WHEEL_ENV = "TALKTHROUGH_TEST_FROM_WHEEL"

SHARED = ROOT.parent / "shared"
DIARIZATION_MODELS = SHARED / "models" / "diarization"

# tier folder -> per-test timeout in seconds (pytest-timeout; a test's own @pytest.mark.timeout wins)
TIERS = {"unit": 60, "integration": 600, "e2e": 900}
# session fixtures that need models/../shared or a Dagster instance: never in the unit tier
HEAVY_FIXTURES = {"tt_home", "processed", "pristine_home"}


def _package_files(folder: Path) -> dict[str, Path]:
    return {str(p.relative_to(folder)): p for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith((".pyc", ".pyo"))}


def installed_product() -> dict[str, Path]:
    """Where each package under test is imported from. Outside the checkout (a wheel install), its files must be
    the checkout's, byte for byte: a stale install would test yesterday's code."""
    import importlib

    where = {name: Path(importlib.import_module(name).__file__).resolve().parent for name in PACKAGES}
    for name, folder in where.items():
        if folder == ROOT / name:  # the checkout itself (an editable install, or the repo first on the path)
            if os.environ.get(FROM_WHEEL_ENV):
                raise pytest.UsageError(f"{name} is imported from the checkout ({folder}), but {FROM_WHEEL_ENV} "
                                        f"asks for the installed wheel: install with `pip install .` (not -e) and "
                                        f"run `.venv/bin/pytest` (not `python -m pytest`, which puts the repo first)")
            continue
        ours, theirs = _package_files(ROOT / name), _package_files(folder)
        differ = sorted(k for k in ours.keys() | theirs.keys()
                        if k.endswith(".py") or k in ours
                        if k not in ours or k not in theirs or ours[k].read_bytes() != theirs[k].read_bytes())
        if differ:
            raise pytest.UsageError(f"the installed {name} ({folder}) is not this checkout: {len(differ)} file(s) "
                                    f"differ, e.g. {differ[0]}. Reinstall it: .venv/bin/pip install --no-deps .")
    return where


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_WHERE] = installed_product()


def pytest_report_header(config: pytest.Config) -> str:
    where = config.stash[_WHERE]["talkthrough_assets"]
    return (f"talkthrough under test: {where.parent} "
            f"({'this checkout' if where == ROOT / where.name else 'installed, same files as this checkout'})")


_WHERE = pytest.StashKey[dict]()


def _tier(item: pytest.Item) -> str:
    rel = Path(item.path).resolve().relative_to(TESTS)
    if len(rel.parts) > 1 and rel.parts[0] in TIERS:
        return rel.parts[0]
    raise pytest.UsageError(f"{rel}: tests live in a tier folder, one of {', '.join(f'tests/{t}/' for t in TIERS)}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tiers = {}
    for item in items:
        tier = tiers[item.nodeid] = _tier(item)
        wrong = {m.name for m in item.iter_markers() if m.name in TIERS} - {tier}
        if wrong:
            raise pytest.UsageError(f"{item.nodeid} is in tests/{tier}/ but marked {sorted(wrong)}")
        if tier == "unit" and HEAVY_FIXTURES & set(getattr(item, "fixturenames", ())):
            raise pytest.UsageError(f"{item.nodeid}: a unit test cannot use {sorted(HEAVY_FIXTURES)} "
                                    "(models, ../shared, a Dagster instance): move it to tests/integration/")
        item.add_marker(getattr(pytest.mark, tier))
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIERS[tier]))
    order = list(TIERS)
    items.sort(key=lambda it: order.index(tiers[it.nodeid]))  # stable: file order kept within a tier


@pytest.fixture(autouse=True)
def _rejections_recorded(request):
    """A test whose file `talkthrough process` rejected ends once the failed run recorded for it in the
    background is written (talkthrough_assets/store/rejections.py), so it never lands in the next test's instance."""
    yield
    if _tier(request.node) != "unit":
        from background import wait_background_rejection_runs

        wait_background_rejection_runs()


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

    from talkthrough_assets.app import service

    out = {}
    for name, options in PROCESS_OPTIONS.items():
        out[name] = service.process(FIXTURES_DIR / name, overrides=options or None)
        assert out[name]["status"] == "processed", out[name]
    # a frozen copy holding exactly the four fixtures, for readers that assert on the whole library
    shutil.copytree(tt_home, tt_home.parent / "pristine", ignore=shutil.ignore_patterns("dagster", "locks"))
    return out


@pytest.fixture(autouse=True)
def _fixtures_first(request):
    """A test that writes to the shared data root (tt_home) runs after the four fixtures are processed, so the
    pristine copy (pristine_home) holds exactly them, whatever order or subset of tests is run (test_export
    then test_mcp_robustness alone used to copy five recordings)."""
    if "tt_home" in request.fixturenames and "processed" not in request.fixturenames:
        request.getfixturevalue("processed")
    yield


@pytest.fixture(scope="session")
def pristine_home(processed, tt_home) -> Path:
    """A data root with only the four processed fixtures (other modules add recordings to tt_home)."""
    return tt_home.parent / "pristine"


@pytest.fixture()
def drop(tmp_path, tt_home, monkeypatch) -> Path:
    """An empty drop folder that the drop-folder sensor watches (TALKTHROUGH_DROP_DIR)."""
    d = tmp_path / "drop"
    d.mkdir()
    monkeypatch.setenv("TALKTHROUGH_DROP_DIR", str(d))
    return d


def _unavailable(reason: str) -> None:
    """Skip with the reason; where the runner says the servers must be there (.ci/run sets
    TALKTHROUGH_REQUIRE_SERVERS=1 after installing them), fail instead, so CI never counts a skip as a pass."""
    if os.environ.get("TALKTHROUGH_REQUIRE_SERVERS") == "1":
        pytest.fail(f"required server unavailable (TALKTHROUGH_REQUIRE_SERVERS=1): {reason}", pytrace=False)
    pytest.skip(reason)


def _needs(module: str, package: str) -> None:
    """Skip (or fail under TALKTHROUGH_REQUIRE_SERVERS) when ``module`` cannot be imported."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        _unavailable(f"{package} is not installed (pip install -c constraints.txt '.[test]')")


@pytest.fixture(scope="session")
def pg():
    """One throwaway Postgres cluster (Debian's `postgresql`, which .ci/run installs) for the session;
    each test module makes its own database. Skipped, with the reason, where it cannot run."""
    from pg_cluster import PgUnavailable, start_cluster

    _needs("dagster_postgres", "dagster-postgres")
    try:
        cluster = start_cluster()
    except PgUnavailable as e:
        _unavailable(f"Postgres cannot be started here: {e}")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def s3():
    """One S3-compatible endpoint (a moto server on loopback) for the session; each test module makes
    its own bucket. Skipped, with the reason, where moto cannot run."""
    from s3_server import S3Server, S3Unavailable

    try:
        server = S3Server()
    except S3Unavailable as e:
        _unavailable(f"no S3 endpoint here: {e}")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def rabbitmq():
    """One throwaway RabbitMQ node (Debian's `rabbitmq-server`, which .ci/run installs) on a loopback port, the
    Celery broker of the worker tests; each test module uses its own virtual host or queue names as it needs.
    Skipped, with the reason, where it cannot run (failed when TALKTHROUGH_REQUIRE_SERVERS=1)."""
    from rabbitmq_server import RabbitUnavailable, start_rabbitmq

    _needs("dagster_celery", "dagster-celery")
    try:
        server = start_rabbitmq()
    except RabbitUnavailable as e:
        _unavailable(f"RabbitMQ cannot be started here: {e}")
    yield server
    server.stop()


# ------------------------------------------------------------------ Chromium (e2e)

CHROMIUM = "/usr/bin/chromium"  # Debian's package (.ci/run installs it); no browser download


@pytest.fixture(scope="session")
def browser():
    """One Chromium for the session (the e2e browser tests). Defined once, here: a module that imported a
    session fixture from another module got a second sync_playwright running beside the first, which
    Playwright refuses."""
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} missing: apt-get install -y chromium"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    """A new, empty data root of SQLite storage (no Postgres), its DAGSTER_HOME returned."""
    monkeypatch.delenv("TALKTHROUGH_PG_URL", raising=False)
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home" / "dagster"))
    return tmp_path / "home" / "dagster"


@pytest.fixture(scope="session")
def fixture_samples(tmp_path_factory):
    """A function: the 16-kHz mono samples of a file in fixtures/ (e.g. "two_voices.m4a"), as the audio stage
    extracts them; each file extracted once per session."""
    from talkthrough_assets.stages import audio

    got: dict[str, object] = {}

    def samples(name: str):
        if name not in got:
            path = tmp_path_factory.mktemp("fixture-audio") / (Path(name).stem + ".wav")
            audio.extract_wav(ROOT / "fixtures" / name, path)
            got[name] = audio.load_wav(path)
        return got[name]

    return samples
