"""Cross-check of the risk-control bounds against MAPIE's implementation (spec §3)."""

import numpy as np
import pytest

from icml26.racer import crc_threshold
from icml26.racer.calibrator import risk_p_values

methods = pytest.importorskip("mapie.risk_control.methods")


def test_hb_p_values_match_mapie():
    n, alpha = 800, 0.1
    counts = np.arange(0, 200, 7)
    # MAPIE takes ceil(n * r_hat) in floating point, which rounds e.g. 800 * (7 / 800) up to 8;
    # compare where that product is exact (ours works on the integer count directly)
    counts = counts[(counts / n) * n == counts]
    assert counts.size > 15
    ours = risk_p_values(counts, n, alpha, "hb")
    theirs = methods.compute_hoeffding_bentkus_p_value(counts / n, n, alpha)[:, 0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-300)


def test_hoeffding_decisions_match_mapie_rcps_upper_bound():
    n, alpha, delta = 500, 0.15, 0.1
    levels = np.random.default_rng(0).random(n)
    lambdas = np.sort(levels)
    losses = (levels[:, None] > lambdas[None, :]).astype(float)  # (n, n_lambdas)
    _, upper = methods.get_r_hat_plus(losses, lambdas, "rcps", "hoeffding", delta, None)
    counts = losses.sum(axis=0)
    assert np.array_equal(risk_p_values(counts, n, alpha, "hoeffding") <= delta, upper <= alpha)


def test_crc_threshold_matches_mapie_crc_bound():
    n, alpha = 300, 0.1
    levels = np.random.default_rng(1).random(n)
    lambdas = np.sort(levels)
    losses = (levels[:, None] > lambdas[None, :]).astype(float)
    _, upper = methods.get_r_hat_plus(losses, lambdas, "crc", None, None, None)
    assert crc_threshold(levels, alpha) == lambdas[np.argmax(upper <= alpha)]
