"""Taxonomy stage: rule-based classification of SKIP rationales."""
