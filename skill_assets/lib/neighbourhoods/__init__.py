"""Neighbourhoods stage: clustering (sub-clusters, super-domains), skill-level pools, combination sampling."""
