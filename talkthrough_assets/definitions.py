"""Dagster's entry point (workspace.yaml, pyproject's [tool.dagster]): assembles the definitions of :mod:`.defs`,
one module each for assets, checks, jobs, sensors and resources."""

import dagster as dg

from talkthrough_assets.defs import assets, jobs, resources, sensors

defs = dg.Definitions(assets=assets.ASSETS, jobs=jobs.JOBS, sensors=sensors.SENSORS,
                      resources=resources.RESOURCES, executor=dg.in_process_executor)
