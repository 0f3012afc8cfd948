"""Corpus stage: sources, SKILL.md parsing, ingest, hash and MinHash dedup, streamed through the store."""
