import numpy as np

from skill_assets.lib.common.significance import paired_bootstrap


def test_clear_improvement_is_significant_and_noise_is_not():
    rng = np.random.default_rng(1)
    base = rng.integers(0, 2, 300).astype(float)
    better = np.maximum(base, rng.integers(0, 2, 300) * (rng.random(300) < 0.5))
    delta, p = paired_bootstrap(better, base)
    assert delta > 0.1 and p < 0.01
    _, p_same = paired_bootstrap(base[rng.permutation(300)], base)
    assert p_same > 0.05


def test_identical_and_nan_handling():
    x = np.array([1.0, 0.0, np.nan, 1.0])
    assert paired_bootstrap(x, x) == (0.0, 1.0)
    delta, _ = paired_bootstrap(np.array([1.0, np.nan]), np.array([0.0, 1.0]))
    assert delta == 1.0
