"""The compute log manager of the shipped instance settings: Dagster's local one, capturing each step's stdout and
stderr into its files (the UI shows them as before) without mirroring them back to the process's own streams. The
mirror is a `tail -F` child and a watcher child per step: on Ctrl-C in `talkthrough process` the watcher, in the
terminal's process group, printed its own KeyboardInterrupt traceback into the progress line, and the two cost two
process starts per step. The CLI draws its own progress line; the UI reads the files."""

from __future__ import annotations

import sys
from contextlib import contextmanager

from dagster import Field, StringSource
from dagster._core.execution.compute_logs import redirect_to_file
from dagster._core.storage.compute_log_manager import CapturedLogContext, ComputeIOType
from dagster._core.storage.local_compute_log_manager import IO_TYPE_EXTENSION, LocalComputeLogManager
from dagster._utils import ensure_file, touch_file


class FileComputeLogManager(LocalComputeLogManager):
    """Steps' output captured to files under ``base_dir`` (default: ``$DAGSTER_HOME/storage``, as Dagster's own)."""

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
        ensure_file(out)
        ensure_file(err)
        with redirect_to_file(sys.stdout, out), redirect_to_file(sys.stderr, err):
            yield CapturedLogContext(log_key)
        touch_file(self.complete_artifact_path(log_key))  # the capture is complete (what the UI checks)
