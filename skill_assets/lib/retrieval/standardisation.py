"""A fitted linear model's feature standardisation: each feature's mean and spread over the rows it was fitted on.

The abstention and the selection cut both standardise their features before their weights read them, so the weights
they save mean something only together with these two vectors; the pair is saved beside the weights and applied to
every request's features exactly as it was to the fitting rows.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Standardisation:
    """``(x - mean) / scale`` per feature; a feature constant over the fitting rows has scale 1 (it centres to 0)."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]

    @classmethod
    def fit(cls, rows: np.ndarray) -> Standardisation:
        mean, scale = rows.mean(0), rows.std(0)
        scale[scale == 0] = 1.0
        return cls(tuple(mean.tolist()), tuple(scale.tolist()))

    @classmethod
    def identity(cls, width: int) -> Standardisation:
        """The standardisation that changes nothing: an unfitted model's."""
        return cls((0.0,) * width, (1.0,) * width)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        return (rows - np.asarray(self.mean)) / np.asarray(self.scale)
