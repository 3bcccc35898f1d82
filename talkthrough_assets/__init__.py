"""Talkthrough: recordings -> agent-readable data. Dagster definitions live in `definitions`."""

import os as _os

# Determinism under CPU load: with OMP_DYNAMIC=true, libgomp (loaded by CTranslate2) shrinks its thread team when
# the machine is busy and faster-whisper's output changed (or came back empty) from run to run. It is read once,
# when the OpenMP runtime loads, so it is set here, before anything imports ctranslate2.
_os.environ["OMP_DYNAMIC"] = "false"


def __getattr__(name: str):
    """``__version__``: the installed distribution's (pyproject.toml's), the one version everything reports."""
    if name == "__version__":
        from importlib.metadata import version

        return version("talkthrough")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
