"""Talkthrough: recordings -> agent-readable data. Dagster definitions live in `definitions`."""

__version__ = "0.1.0"
