"""Dagster definitions: assets, checks, jobs, sensors, resources, the instance."""
