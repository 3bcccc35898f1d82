"""Runs stages for a recording: the stage specs, settings, planning and execution, the drop folder. No Dagster here."""
