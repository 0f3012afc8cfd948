"""Estimated cost of generator calls from a per-model price table.

Providers bill per token with separate input and output prices, quoted per million tokens. The
table comes from run config, so a price change never needs a code change; a model missing from
the table costs 0 (the bundled local model, a self-hosted server) and is reported as unpriced so a
paid model with a forgotten price is visible in the run's metadata instead of silently free.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per one million tokens."""

    input_per_m: float = 0.0
    output_per_m: float = 0.0


PriceTable = Mapping[str, ModelPrice]


def price_of(prices: PriceTable, model: str) -> ModelPrice:
    return prices.get(model, ModelPrice())


def cost_usd(prices: PriceTable, model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """Estimated dollars for one call; 0 for a model without a price."""
    p = price_of(prices, model)
    return (prompt_tokens * p.input_per_m + completion_tokens * p.output_per_m) / 1_000_000


def unpriced(prices: PriceTable, models: set[str]) -> list[str]:
    """Models that are called but have no price (their cost counts as 0)."""
    return sorted(m for m in models if m not in prices)
