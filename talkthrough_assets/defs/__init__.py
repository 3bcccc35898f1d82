"""Dagster definitions, one module each (assembled by :mod:`talkthrough_assets.definitions`): assets (and the
specs they are built from), checks, jobs, sensors, resources; beside them, the instance every process opens
and how runs whose process is gone are ended."""
