"""Generators carry their ground truth; the baselines do what their papers define."""

import numpy as np
import pytest

from icml26.cdal import balance, load_reverse_digits, make_fair_multiview, make_preset
from icml26.cdal.baselines import LMVSC, FairSpectralAnchor, ResidualizedKMeans
from icml26.cdal.cdal import anchor_spectral_embedding, prepare_views


def test_generator_is_deterministic_and_shaped():
    a, b = make_fair_multiview(n=150, seed=4), make_fair_multiview(n=150, seed=4)
    for X, Y in zip(a.views, b.views):
        np.testing.assert_array_equal(X, Y)
    assert [X.shape for X in a.views] == [(150, 30), (150, 40), (150, 50)]
    assert not np.array_equal(a.views[0], make_fair_multiview(n=150, seed=5).views[0])


def test_rho_ties_groups_to_clusters():
    independent = make_fair_multiview(n=4000, rho=0.0, seed=0)
    tied = make_fair_multiview(n=4000, rho=0.6, seed=0)
    assert balance(independent.labels, independent.groups) > 0.8
    assert balance(tied.labels, tied.groups) == pytest.approx(0.4 / 1.6, abs=0.08)  # (1 − ρ)/(1 + ρ)


def test_group_offset_dominates_the_raw_views():
    data = make_preset("meanshift", seed=0, n=800)
    gap = np.linalg.norm(data.views[0][data.groups == 0].mean(0) - data.views[0][data.groups == 1].mean(0))
    assert gap > 2.0


@pytest.mark.parametrize("kwargs, message", [(dict(rho=0.3, n_groups=3), "needs n_groups=2"),
                                             (dict(view_dims=(3, 40, 50)), "smaller than latent_dim"),
                                             (dict(noise=(1.0,)), "noise has 1 values"),
                                             (dict(rotate_view=5), "rotate_view")])
def test_generator_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_fair_multiview(n=50, **kwargs)


def test_reverse_digits_inverts_group_one_and_keeps_gradients():
    data = load_reverse_digits(seed=0)
    raw, gradient = data.views[0], data.views[2]
    from sklearn.datasets import load_digits
    original = load_digits().data
    inverted = data.groups == 1
    np.testing.assert_allclose(raw[inverted], 16 - original[inverted])
    np.testing.assert_allclose(raw[~inverted], original[~inverted])
    images = original.reshape(-1, 8, 8)
    dx, dy = images[:, :7, 1:] - images[:, :7, :7], images[:, 1:, :7] - images[:, :7, :7]
    np.testing.assert_allclose(gradient, np.sqrt(dx ** 2 + dy ** 2).reshape(-1, 49))
    assert 0.4 < inverted.mean() < 0.6


def test_fair_spectral_embedding_has_equal_group_means():
    rng = np.random.default_rng(0)
    Z = rng.dirichlet(np.ones(6), size=300).T
    groups = rng.integers(0, 3, 300)
    embedding, _ = anchor_spectral_embedding(Z, 3, groups=groups, normalize_rows=False)
    means = np.stack([embedding[groups == g].mean(axis=0) for g in range(3)])
    np.testing.assert_allclose(means - embedding.mean(axis=0), 0.0, atol=1e-10)   # Fᵀ H = 0


def test_fair_spectral_anchor_runs_on_views():
    data = make_fair_multiview(n=200, seed=2)
    model = FairSpectralAnchor(4, random_state=0).fit(data.views, sensitive=data.groups)
    assert model.labels_.shape == (200,) and model.embedding_.shape == (200, 4)


def test_lmvsc_embedding_has_orthonormal_columns():
    data = make_fair_multiview(n=200, seed=1)
    model = LMVSC(4, alpha=1.0, random_state=0).fit(data.views)
    assert model.embedding_.shape == (200, 4)
    np.testing.assert_allclose(model.embedding_.T @ model.embedding_, np.eye(4), atol=1e-8)


def test_residualised_kmeans_is_balanced_under_a_pure_offset():
    data = make_preset("meanshift", seed=0, n=1000)
    labels = ResidualizedKMeans(4, random_state=0).fit(data.views, sensitive=data.groups).labels_
    assert balance(labels, data.groups) > 0.7
    X = np.hstack(prepare_views(data.views).data)
    assert np.abs(X[data.groups == 0].mean(0) - X[data.groups == 1].mean(0)).max() > 0.5


def test_fits_leave_the_global_random_state_alone():
    import numpy as np

    from icml26.cdal import CDAL, make_preset
    from icml26.cdal.baselines import LMVSC, AnchorMVC, ResidualizedKMeans

    data = make_preset("rotated", seed=0, n=300)
    before = np.random.get_state()[1].copy()
    for model in (CDAL(4, random_state=0), AnchorMVC(4, random_state=0), LMVSC(4, random_state=0),
                  ResidualizedKMeans(4, random_state=0)):
        model.fit(data.views, sensitive=data.groups)
    assert np.array_equal(np.random.get_state()[1], before)
