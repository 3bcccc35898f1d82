"""The compute log manager of the shipped instance settings: Dagster's local one (each step's stdout and stderr
captured into files the UI shows, and mirrored to the process's own streams by a `tail -F` child and a watcher
child that ends the tail if this process dies), with both children started in a session of their own. Dagster
starts them in the caller's process group: on Ctrl-C in `talkthrough process` the terminal's SIGINT reached the
watcher, whose KeyboardInterrupt traceback landed in the progress line. Here a Ctrl-C reaches only the command;
its children end when the step does, or when the watcher sees the command gone."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager

from dagster import Field, StringSource
from dagster._core.execution.compute_logs import redirect_to_file
from dagster._core.execution.scripts import watch_orphans
from dagster._core.storage.compute_log_manager import CapturedLogContext, ComputeIOType
from dagster._core.storage.local_compute_log_manager import IO_TYPE_EXTENSION, LocalComputeLogManager
from dagster._utils import ensure_file, touch_file


@contextmanager
def _mirrored(stream, path: str):
    """``stream``'s file descriptor written into ``path`` for the block, and ``path`` tailed back to it."""
    ensure_file(path)
    try:
        out = stream.fileno()
    except (AttributeError, OSError, ValueError):  # no descriptor (a test's captured stream): capture only
        out = None
    tail = watcher = None
    if out is not None:
        tail = subprocess.Popen(["tail", "-F", "-c", "+0", path], stdout=out, start_new_session=True)
        watcher = subprocess.Popen([sys.executable, os.path.abspath(watch_orphans.__file__), str(os.getpid()),
                                    str(tail.pid)], stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        with redirect_to_file(stream, path):
            yield
    finally:
        for child in (tail, watcher):
            if child is not None:
                child.terminate()
                try:
                    child.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    child.kill()


class FileComputeLogManager(LocalComputeLogManager):
    """Steps' output captured under ``base_dir`` (default: ``$DAGSTER_HOME/storage``, as Dagster's own) and
    mirrored to this process's streams by children no terminal signal reaches."""

    @classmethod
    def config_type(cls):
        return {"base_dir": Field(StringSource, is_required=False), "polling_timeout": Field(float, is_required=False)}

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> "FileComputeLogManager":
        from talkthrough_assets.defs.instance import current_home

        config = dict(config_value)
        config.setdefault("base_dir", str(current_home() / "storage"))
        return cls(inst_data=inst_data, **config)

    @contextmanager
    def capture_logs(self, log_key):
        out = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDOUT])
        err = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDERR])
        with _mirrored(sys.stdout, out), _mirrored(sys.stderr, err):
            yield CapturedLogContext(log_key)
        touch_file(self.complete_artifact_path(log_key))  # the capture is complete (what the UI checks)
