"""Route requests to skills over any pool: the ``Router`` facade, the CLI and the MCP server; no Dagster here.

``Router.from_store().route([...])`` is the public entry point; ``skill-assets route`` (``cli``) wraps it.
"""
from skill_assets.lib.retrieval.pools import PoolLoad, Rejected, Skill, load_pool
from skill_assets.lib.retrieval.results import RankedSkill, RoutedRequest
from skill_assets.router.routing import Router

__all__ = ["PoolLoad", "RankedSkill", "Rejected", "RoutedRequest", "Router", "Skill", "load_pool"]
