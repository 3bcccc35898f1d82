"""Ticks of the drop-folder sensor for tests, as the daemon makes them. Plain module, no pytest."""

from __future__ import annotations

from types import SimpleNamespace

from dagster import build_sensor_context


class Sensor:
    """Each tick is evaluated with the cursor the previous tick returned (as the daemon stores it; a
    tick that raises returns none, so the cursor stays)."""

    def __init__(self, instance, cursor: str | None = None):
        self.instance, self.cursor = instance, cursor

    def __call__(self):
        from talkthrough_assets.defs.sensors import drop_dir_sensor

        res = drop_dir_sensor(build_sensor_context(instance=self.instance, cursor=self.cursor))
        self.cursor = res.cursor
        skip = res.skip_reason.skip_message if res.skip_reason else None
        return SimpleNamespace(run_requests=res.run_requests, skip_message=skip, cursor=res.cursor,
                               dynamic_partitions_requests=res.dynamic_partitions_requests)
