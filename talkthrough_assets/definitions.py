"""Dagster entry point (workspace.yaml, pyproject): assembles the definitions in :mod:`.defs`."""

from talkthrough_assets.defs.assets import defs

__all__ = ["defs"]
