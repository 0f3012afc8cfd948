"""Pieces every stage shares: the DuckDB store and table contract, hashing, language, JSONL input, skill text, the embedding cache and encoder backends, retrieval and metrics."""
