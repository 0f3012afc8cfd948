"""Evaluation stage: systems run over pools and queries, significance, the report, external benchmarks."""
