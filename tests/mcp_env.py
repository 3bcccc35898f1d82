"""The environment of a `talkthrough mcp` child in the e2e tier: its data root, no background refresh, and the
test run's PYTHONPATH handed on, so that a checkout run without installing it (PYTHONPATH=$PWD) serves its own
code. MCP clients start servers with a small environment of their own (the Python SDK's ``stdio_client`` keeps
only HOME, PATH, SHELL, TERM, USER and LOGNAME; the Inspector CLI only what ``-e`` names), so it is said here."""

from __future__ import annotations

import os
from pathlib import Path


def server_env(home: Path | str, **extra: str) -> dict[str, str]:
    """Variables for ``StdioServerParameters(env=...)``."""
    # PYTHONSAFEPATH: a server started as `python -m talkthrough_mcp` from the repo folder imports the installed
    # package, not the checkout
    env = {"TALKTHROUGH_HOME": str(home), "TALKTHROUGH_MCP_REFRESH_S": "0", "PYTHONSAFEPATH": "1"}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return {**env, **extra}


def inspector_env_args(home: Path | str, **extra: str) -> list[str]:
    """The same variables as the Inspector CLI's ``-e KEY=VALUE`` arguments."""
    return [arg for k, v in server_env(home, **extra).items() for arg in ("-e", f"{k}={v}")]
