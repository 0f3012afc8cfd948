"""Generation stage: prompts, the LLM client with its cache and journal, output parsing, pricing, query audits, the local LLM server."""
