"""Dagster definitions, one folder per pipeline stage; each stays thin over ``skill_assets.lib``."""
