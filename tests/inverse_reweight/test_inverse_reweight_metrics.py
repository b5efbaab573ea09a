"""NC metrics and the loss imbalance coefficient vs direct computation."""

import numpy as np
import pytest

from icml26.inverse_reweight import etf_distance, loss_imbalance_coefficient, nc_metrics, per_class_mean_loss


def _simplex_etf(n_classes, dim, seed=0):
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((dim, n_classes)))
    etf = np.sqrt(n_classes / (n_classes - 1)) * (np.eye(n_classes) - 1 / n_classes)
    return 3.0 * etf @ basis.T  # (C, dim), rotated and scaled


def test_planted_simplex_etf_has_zero_collapse_metrics():
    means = _simplex_etf(5, 12)
    counts = [40, 20, 10, 5, 2]
    labels = np.repeat(np.arange(5), counts)
    features = means[labels] + 7.0  # a global shift must not matter
    out = nc_metrics(features, labels, classifier_weight=2.0 * means)
    for key in ("nc1", "nc2_means", "nc2_classifier", "nc3", "equinorm_means", "equinorm_classifier",
                "equiangular_means", "equiangular_classifier"):
        assert out[key] == pytest.approx(0.0, abs=1e-9), key


def test_nc1_matches_direct_loop_computation():
    rng = np.random.default_rng(1)
    means = _simplex_etf(4, 6)
    labels = np.repeat(np.arange(4), [30, 15, 8, 3])
    features = means[labels] + 0.5 * rng.standard_normal((len(labels), 6))
    mu = np.stack([features[labels == c].mean(0) for c in range(4)])
    mu_g = mu.mean(0)
    sigma_w = sum(np.outer(h - mu[y], h - mu[y]) for h, y in zip(features, labels)) / len(labels)
    sigma_b = sum(np.outer(m - mu_g, m - mu_g) for m in mu) / 4
    expected = np.trace(sigma_w @ np.linalg.pinv(sigma_b, rcond=1e-6)) / 4
    assert nc_metrics(features, labels)["nc1"] == pytest.approx(expected, rel=1e-9)


def test_nc2_and_nc3_match_direct_formulas():
    rng = np.random.default_rng(2)
    labels = np.repeat(np.arange(3), [10, 6, 4])
    features = rng.standard_normal((20, 5))
    weight = rng.standard_normal((3, 5))
    out = nc_metrics(features, labels, weight)
    mu = np.stack([features[labels == c].mean(0) for c in range(3)])
    centred = mu - mu.mean(0)
    etf = (np.eye(3) - 1 / 3) / np.sqrt(2)
    gram = centred @ centred.T
    assert out["nc2_means"] == pytest.approx(np.linalg.norm(gram / np.linalg.norm(gram) - etf))
    nc3 = np.linalg.norm(weight / np.linalg.norm(weight) - centred / np.linalg.norm(centred)) ** 2
    assert out["nc3"] == pytest.approx(nc3)
    norms = np.linalg.norm(weight, axis=1)
    assert out["equinorm_classifier"] == pytest.approx(norms.std() / norms.mean())


def test_perturbed_etf_has_positive_metrics():
    means = _simplex_etf(4, 8)
    means[0] *= 2.0
    labels = np.repeat(np.arange(4), 5)
    out = nc_metrics(means[labels], labels, means)
    assert out["nc2_means"] > 0.05 and out["equinorm_means"] > 0.1


def test_single_sample_class_and_rank_deficient_between_class_covariance():
    labels = np.array([0, 0, 1, 2])
    features = np.array([[1.0, 0, 0, 0], [1.2, 0, 0, 0], [0, 1.0, 0, 0], [0, 1.0, 0, 0]])
    out = nc_metrics(features, labels)
    assert np.isfinite(out["nc1"])


def test_loss_imbalance_coefficient_is_cv_of_class_means():
    loss = np.array([1.0, 3.0, 2.0, 2.0, 8.0])
    labels = np.array([0, 0, 1, 1, 2])
    class_means = np.array([2.0, 2.0, 8.0])
    lic, ratio = loss_imbalance_coefficient(loss, labels, 3, return_ratio=True)
    assert lic == pytest.approx(class_means.std() / class_means.mean())
    assert ratio == pytest.approx(4.0)
    assert loss_imbalance_coefficient([2.0, 2.0, 2.0], [0, 1, 2], 3) == 0.0


def test_per_class_mean_loss_marks_empty_classes_nan():
    out = per_class_mean_loss([1.0, 2.0], [0, 0], 2)
    assert out[0] == 1.5 and np.isnan(out[1])


def test_nc_metrics_bad_input():
    with pytest.raises(ValueError, match="at least 2 classes"):
        nc_metrics(np.ones((3, 2)), [0, 0, 0])
    with pytest.raises(ValueError, match="inconsistent lengths"):
        nc_metrics(np.ones((3, 2)), [0, 1])
    with pytest.raises(ValueError, match="features contains NaN"):
        nc_metrics([[np.nan, 1.0], [0.0, 1.0]], [0, 1])
    with pytest.raises(ValueError, match="classifier_weight has 3 columns"):
        nc_metrics(np.eye(2), [0, 1], np.ones((2, 3)))
    with pytest.raises(ValueError, match="at least 2 rows"):
        etf_distance(np.ones((1, 3)))


def test_lic_bad_input():
    with pytest.raises(ValueError, match="labels must be < n_classes"):
        loss_imbalance_coefficient([1.0, 2.0], [0, 3], 2)
    with pytest.raises(ValueError, match="inconsistent lengths"):
        loss_imbalance_coefficient([1.0, 2.0, 3.0], [0, 1], 2)
    with pytest.raises(TypeError, match="integer class indices"):
        loss_imbalance_coefficient([1.0, 2.0], [0.5, 1.0], 2)
