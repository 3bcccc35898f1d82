"""Keyframe generations: each keyframes run writes a new folder ``frames/<id>/<generation>/``; readers find
its JPEGs only through the table written after them, and older folders are pruned once unused."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Iterable

from talkthrough_assets.store.backend import delete_tree, list_names, publish_file
from talkthrough_assets.store.paths import frames_key, frames_root, home, is_remote


def new_frames_generation(recording_id: str) -> Path:
    root = frames_root(recording_id)
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"g{int(time.time() * 1000)}-", dir=root))


def generation_key(gen: Path) -> str:
    """The data-root key of a frames generation folder made by ``new_frames_generation``."""
    return gen.relative_to(home()).as_posix()


def publish_frames_generation(gen: Path) -> None:
    """Make a finished generation folder's JPEGs visible in the data root (uploads on an object
    store; locally they already are). Readers find them only through the table written after."""
    if is_remote():
        prefix = generation_key(gen)
        for f in sorted(gen.iterdir()):
            if f.is_file() and f.suffix == ".jpg":
                publish_file(f, f"{prefix}/{f.name}")


def prune_frame_generations(recording_id: str, keep: Iterable[str]) -> None:
    """Delete frame generation folders not listed in ``keep`` (relative names), in the data root
    and in this machine's cache."""
    keep = set(keep)
    prefix = frames_key(recording_id)
    for name in list_names(prefix):
        if name not in keep and not name.startswith("."):
            delete_tree(f"{prefix}/{name}")
    root = frames_root(recording_id)
    if root.exists():
        for d in root.iterdir():
            if d.is_dir() and d.name not in keep:
                shutil.rmtree(d, ignore_errors=True)
