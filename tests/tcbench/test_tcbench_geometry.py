"""Geometry diagnostics against direct computation."""

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from icml26.tcbench import feature_spread, geometry_report, participation_ratio, pca_per_bin


def test_participation_ratio_matches_eigenvalue_formula():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((300, 5)) * np.array([5.0, 2.0, 1.0, 0.5, 0.1])
    lam = np.linalg.eigvalsh(np.cov(Z, rowvar=False))
    assert participation_ratio(Z) == pytest.approx(lam.sum() ** 2 / (np.sum(lam ** 2) + 1e-12))


def test_participation_ratio_gram_path_equals_covariance_path():
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((10, 40))            # d > n: Gram matrix
    lam = np.clip(np.linalg.eigvalsh(np.cov(Z, rowvar=False)), 0, None)
    assert participation_ratio(Z) == pytest.approx(lam.sum() ** 2 / np.sum(lam ** 2), rel=1e-8)


def test_participation_ratio_of_too_few_rows_is_nan():
    assert np.isnan(participation_ratio(np.ones((1, 3))))
    assert np.isnan(feature_spread(np.ones((1, 3))))


def test_feature_spread_exact_and_sampled():
    rng = np.random.default_rng(2)
    Z = rng.standard_normal((120, 3))
    assert feature_spread(Z) == pytest.approx(pdist(Z).mean())
    sampled = feature_spread(Z, max_pairs=2000, seed=0)
    assert sampled == pytest.approx(pdist(Z).mean(), rel=0.05)
    assert sampled == feature_spread(Z, max_pairs=2000, seed=0)


def test_pca_per_bin_tracks_pressure_in_a_faithful_latent():
    rng = np.random.default_rng(3)
    p = rng.uniform(900, 1000, 4000)
    Z = p[:, None] + rng.standard_normal((4000, 3))          # all features follow P_c
    df = pca_per_bin(Z, p, edges=(900, 950, 1000), min_count=10)
    assert (df.pc1_abs_r > 0.99).all()


def test_geometry_report_small_bins_are_nan_not_errors():
    rng = np.random.default_rng(4)
    p = np.r_[rng.uniform(990, 1000, 600), [930.0]]
    df = geometry_report(rng.standard_normal((601, 4)), p, edges=(920, 980, 1000), min_count=500)
    assert np.isnan(df.d_eff.iloc[0]) and np.isfinite(df.d_eff.iloc[1])
    assert df.n.tolist() == [1, 600]


def test_geometry_report_bad_input():
    with pytest.raises(ValueError, match="inconsistent lengths"):
        geometry_report(np.ones((5, 2)), np.ones(4) * 990)
    with pytest.raises(ValueError, match="strictly increasing"):
        geometry_report(np.ones((5, 2)), np.ones(5) * 990, edges=(1000, 990))
    with pytest.raises(ValueError, match="NaN"):
        geometry_report(np.full((5, 2), np.nan), np.ones(5) * 990)


def test_participation_ratio_of_an_empty_array_raises():
    for empty in (np.empty((0, 3)), np.empty((4, 0)), np.zeros((0, 0))):
        with pytest.raises(ValueError, match="Z is empty"):
            participation_ratio(empty)
        with pytest.raises(ValueError, match="Z is empty"):
            feature_spread(empty)


def test_standardized_geometry_is_scale_free_and_differs_from_raw():
    # one loud feature makes raw d_eff ≈ 1; z-scoring restores the 4 equal directions
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((2000, 4)) * np.array([100.0, 1.0, 1.0, 1.0])
    p = rng.uniform(960, 1000, 2000)
    raw = geometry_report(Z, p, edges=(960, 1000), min_count=10)
    std = geometry_report(Z, p, edges=(960, 1000), min_count=10, standardize=True)
    assert raw.d_eff.iloc[0] < 1.1
    assert std.d_eff.iloc[0] == pytest.approx(4.0, rel=0.05)
    rescaled = geometry_report(Z * np.array([0.01, 5.0, 1.0, 3.0]), p, edges=(960, 1000),
                               min_count=10, standardize=True)
    assert rescaled.d_eff.iloc[0] == pytest.approx(std.d_eff.iloc[0], rel=1e-9)
