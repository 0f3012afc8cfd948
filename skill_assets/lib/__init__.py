"""Framework-free domain logic of skill-assets.

Nothing under ``skill_assets.lib`` imports Dagster: every stage's maths, parsing and
rules can be imported, tested and reused (notebooks, other orchestrators) on its own.
"""
