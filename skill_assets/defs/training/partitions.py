"""Variant partitions of the model assets."""
import dagster as dg

from skill_assets.lib.training.variants import EMBEDDER_VARIANTS, RERANKER_VARIANTS

embedder_variants = dg.StaticPartitionsDefinition(list(EMBEDDER_VARIANTS))
reranker_variants = dg.StaticPartitionsDefinition(list(RERANKER_VARIANTS))
