"""Fixtures the e2e modules share."""

from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"  # Debian's package (.ci/run installs it); no browser download


@pytest.fixture(scope="session")
def browser():
    """One Chromium for the session. Defined once here: a module that imported a session fixture from
    another module got a second sync_playwright running beside the first, which Playwright refuses."""
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} missing: apt-get install -y chromium"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()
