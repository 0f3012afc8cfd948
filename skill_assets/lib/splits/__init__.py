"""Splits stage: benchmark queries per split and the benchmark release files."""
