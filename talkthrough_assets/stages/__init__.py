"""Stage logic as plain functions, one module per stage; no Dagster imports here."""
