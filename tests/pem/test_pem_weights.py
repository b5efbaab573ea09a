"""Weight maps, expected rank weights and rank disagreement vs direct computation."""

import itertools

import numpy as np
import pytest

from icml26.pem import (expected_rank_weights, log_rank_weights, power_rank_weights,
                        rank_disagreement)
from icml26.pem.pem import ranks_of


def test_power_weights_match_formula():
    lam, mu, n = 12, 6, 2.5
    r = np.arange(lam)
    direct = np.where(r < mu, (1 - r / (lam - 1)) ** n, 0.0)
    np.testing.assert_allclose(power_rank_weights(lam, mu, n), direct / direct.sum())


def test_log_weights_match_formula():
    lam, mu = 10, 5
    r = np.arange(mu)
    direct = np.log((lam + 1) / 2) - np.log(r + 1)
    expected = np.zeros(lam)
    expected[:mu] = direct / direct.sum()
    np.testing.assert_allclose(log_rank_weights(lam, mu), expected)


def test_single_candidate_gets_all_weight():
    assert power_rank_weights(1, 1).tolist() == [1.0]
    assert expected_rank_weights([3.0]).tolist() == [1.0]


def test_zero_pool_reduces_to_hard_weights():
    f = np.array([3.0, 1.0, 2.0, 0.5, 7.0, 4.0])
    table = power_rank_weights(6, 3, 1.2)
    w = expected_rank_weights(f, residual_pool=np.zeros(50), scale=(1.0, 0.5), mu=3,
                              weight_fn=table, rng=0)
    np.testing.assert_allclose(w, table[ranks_of(f)])


def test_empty_pool_reduces_to_hard_weights():
    f = np.array([2.0, 1.0, 3.0, 0.0])
    w = expected_rank_weights(f, mu=2, rng=0)
    np.testing.assert_allclose(w, power_rank_weights(4, 2, 1.2)[ranks_of(f)])


def test_ties_are_broken_stably_and_weights_sum_to_one():
    w = expected_rank_weights(np.zeros(5), mu=2, rng=0)
    assert np.isclose(w.sum(), 1.0)
    np.testing.assert_allclose(w, power_rank_weights(5, 2, 1.2))


def test_own_samples_match_exact_enumeration():
    # Two candidates with two samples each, one singly evaluated: enumerate the 4 cases.
    samples = [np.array([0.0, 3.0]), np.array([1.0, 2.0]), np.array([1.5])]
    table = np.array([0.7, 0.3, 0.0])
    exact = np.zeros(3)
    for a, b in itertools.product(samples[0], samples[1]):
        exact += table[ranks_of(np.array([a, b, 1.5]))] / 4
    w = expected_rank_weights([0.0, 1.0, 1.5], samples=samples, weight_fn=table,
                              n_bootstrap=40000, rng=1)
    np.testing.assert_allclose(w, exact, atol=0.01)


def test_pool_noise_matches_monte_carlo_oracle():
    # Gaussian pool with unit scale ≈ the exact conditional expectation under N(0, 1) noise.
    rng = np.random.default_rng(0)
    f = np.array([0.0, 0.5, 1.0, 1.5, 3.0, 4.0])
    table = power_rank_weights(6, 3, 1.2)
    oracle = table[ranks_of(f + rng.standard_normal((50000, 6)), axis=1)].mean(axis=0)
    w = expected_rank_weights(f, residual_pool=rng.standard_normal(5000), scale=(1.0, 0.0),
                              weight_fn=table, n_bootstrap=50000, rng=2)
    np.testing.assert_allclose(w, oracle, atol=0.01)


def test_heteroscedastic_scale_spreads_large_values_more():
    f = np.array([0.0, 0.1, 100.0, 100.1])
    w = expected_rank_weights(f, residual_pool=np.array([-1.0, 1.0]), scale=(0.0, 1.0), mu=2,
                              weight_fn=[0.5, 0.5, 0.0, 0.0], n_bootstrap=4000, rng=0)
    assert w[2] + w[3] > 0.2   # |f| = 100 ⇒ noise scale 100 ⇒ frequent swaps with the small ones


def test_expected_weights_are_deterministic_given_rng():
    f = np.arange(8.0)
    a = expected_rank_weights(f, residual_pool=np.ones(3), scale=(2, 0), rng=5)
    b = expected_rank_weights(f, residual_pool=np.ones(3), scale=(2, 0), rng=5)
    np.testing.assert_array_equal(a, b)


def test_rank_disagreement_matches_direct_computation():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(10), rng.standard_normal(10)
    ra = np.argsort(np.argsort(a))
    rb = np.argsort(np.argsort(b))
    assert rank_disagreement(a, b) == pytest.approx(np.mean(np.abs(ra - rb)) / 10)
    assert rank_disagreement(a, a) == 0.0


@pytest.mark.parametrize("kwargs, match", [
    ({"f_obs": [1.0, np.nan]}, "f_obs"),
    ({"f_obs": [1.0, 2.0], "n_bootstrap": 0}, "n_bootstrap"),
    ({"f_obs": [1.0, 2.0], "mu": 3}, "mu"),
    ({"f_obs": [1.0, 2.0], "scale": (-1.0, 0.0)}, "scale"),
    ({"f_obs": [1.0, 2.0], "weight_fn": [1.0]}, "weight_fn"),
    ({"f_obs": [1.0, 2.0], "samples": [None]}, "samples"),
    ({"f_obs": [1.0, 2.0], "residual_pool": [np.inf]}, "residual_pool"),
])
def test_expected_rank_weights_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        expected_rank_weights(**kwargs)


def test_rank_disagreement_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="same length"):
        rank_disagreement([1, 2], [1, 2, 3])
