"""The faster RB-PEM ``tell`` (issue #42) walks the same search path as before.

Reference numbers were produced by the previous implementation (commit 5ce54d9: a median per
candidate, a checked ``expected_rank_weights`` per generation, a noise-model loop over every
candidate, ``np.linalg.lstsq`` for the noise line) on a fixed noisy sphere.
"""

import numpy as np
import pytest

from icml26.pem import RBPEM, BudgetedObjective
from icml26.pem.pem import _line_fit, expected_rank_weights

REFERENCE = {  # (seed, n): (fun, x[:3], sum of the sigma history, generations)
    (0, 5): (0.0011924038484457094, [0.002842841833453507, 0.005905454420798036,
                                     0.005127727317503991], 38.08846777973552, 50),
    (1, 20): (0.0020281035236522377, [0.008184955280918024, 0.011546660438707999,
                                      0.016895663978307926], 70.48086235302283, 135),
}


def _noisy_sphere(seed):
    rng = np.random.default_rng(seed)
    return lambda x: float(np.dot(x, x) * (1.0 + 0.1 * rng.standard_normal()))


@pytest.mark.parametrize("seed, n", sorted(REFERENCE))
def test_search_path_matches_the_previous_implementation(seed, n):
    obj = BudgetedObjective(_noisy_sphere(seed), 100 * n, record_history=False)
    result = RBPEM(np.full(n, 3.0), 2.0, seed=seed).optimize(obj)
    fun, x3, sigma_sum, gens = REFERENCE[(seed, n)]
    sigmas = [h["sigma"] for h in result.history]
    assert len(sigmas) == gens
    assert abs(result.fun - fun) <= 5e-15 * max(1.0, abs(fun))
    np.testing.assert_allclose(result.x[:3], x3, rtol=0, atol=5e-15)
    assert abs(sum(sigmas) - sigma_sum) <= 5e-13


@pytest.mark.parametrize("seed", range(20))
def test_line_fit_equals_lstsq(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(4, 200))
    a = np.abs(rng.normal(size=k)) * 10.0 ** rng.uniform(-3, 3)
    r = np.abs(rng.normal(size=k)) * (0.5 + a)
    design = np.column_stack([np.ones_like(a), a])
    ref = np.linalg.lstsq(design, r, rcond=None)[0]
    np.testing.assert_allclose(_line_fit(a, r), ref, rtol=1e-9, atol=1e-12 * np.abs(r).max())


def test_line_fit_constant_level_is_the_minimum_norm_solution():
    a, r = np.full(8, 2.0), np.linspace(0.5, 1.5, 8)
    ref = np.linalg.lstsq(np.column_stack([np.ones(8), a]), r, rcond=None)[0]
    np.testing.assert_allclose(_line_fit(a, r), ref, rtol=1e-12)


def test_public_expected_rank_weights_unchanged():
    w = expected_rank_weights([0.0, 1.0, 2.0, 3.0], samples=[None, [1.0, 2.5], None, None],
                              residual_pool=[-1.0, 0.0, 1.0], scale=(0.1, 0.0), mu=2, rng=0)
    assert w.shape == (4,) and abs(w.sum() - 1.0) < 1e-12 and w[0] > w[3]


@pytest.mark.parametrize("m", [2, 3, 4, 5])
def test_row_medians_equal_numpy_median(m):
    from icml26.pem.pem import _row_medians

    S = np.random.default_rng(m).normal(size=(50, m)) * 10.0 ** np.arange(-5, 5, 0.2)[:, None]
    S[0, 0] = np.inf
    assert np.array_equal(_row_medians(S), np.median(S, axis=1))
