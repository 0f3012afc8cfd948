"""Route requests to skills over any pool with the trained (or bundled) models; no Dagster here.

``Router.from_store().route([...])`` is the public entry point; ``skill-assets route`` (``cli``) wraps it.
"""
from skill_assets.router.pools import PoolLoad, Rejected, Skill, load_pool
from skill_assets.router.routing import Router

__all__ = ["PoolLoad", "Rejected", "Router", "Skill", "load_pool"]
