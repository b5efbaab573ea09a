"""The per-view residual without full-size temporaries: ‖X‖² − 2⟨XW, L⟩ + ⟨LᵀL, WᵀW⟩
equals the direct ‖X − LWᵀ‖² on fixed inputs, and a whole fit takes the same path."""

import numpy as np
import pytest

import icml26.cdal.cdal as cdal_module
from icml26.cdal import CDAL, make_fair_multiview, make_preset


def _old_residuals(Xs, sq_norms, XW, W, latent):
    return np.array([max(float(np.sum((X - latent @ Wv.T) ** 2)), cdal_module.RESIDUAL_FLOOR)
                     for X, Wv in zip(Xs, W)])


def test_residuals_equal_the_direct_form():
    rng = np.random.default_rng(0)
    Xs = [rng.standard_normal((500, dv)) for dv in (30, 40, 5)]
    latent = rng.standard_normal((500, 8))
    W = [cdal_module._procrustes(X.T @ latent) for X in Xs]        # the third has d_v < d
    XW = [X @ Wv for X, Wv in zip(Xs, W)]
    sq = [float(np.vdot(X, X)) for X in Xs]
    new = cdal_module._view_residuals(Xs, sq, XW, W, latent)
    old = _old_residuals(Xs, sq, XW, W, latent)
    np.testing.assert_allclose(new, old, rtol=1e-10)


@pytest.mark.parametrize("make", [lambda: make_fair_multiview(n=400, seed=1),
                                  lambda: make_preset("rotated", seed=0, n=600)])
def test_fit_takes_the_same_path_as_the_direct_residual(make, monkeypatch):
    data = make()
    fast = CDAL(4, random_state=0).fit(data.views, sensitive=data.groups)
    monkeypatch.setattr(cdal_module, "_view_residuals", _old_residuals)
    old = CDAL(4, random_state=0).fit(data.views, sensitive=data.groups)
    assert fast.n_iter_ == old.n_iter_
    np.testing.assert_array_equal(fast.labels_, old.labels_)
    np.testing.assert_allclose(fast.objective_, old.objective_, rtol=1e-9)
    np.testing.assert_allclose(fast.view_weights_, old.view_weights_, rtol=1e-9)
    np.testing.assert_allclose(fast.anchor_graph_, old.anchor_graph_, atol=1e-8)
