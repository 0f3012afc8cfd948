"""skill-assets: skill-routing benchmarks and routers for LLM agents, as a Dagster asset graph."""

__version__ = "0.1.0"
