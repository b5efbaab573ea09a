"""The geometry-aware start. At step 0 (no optimiser update) EpiTwin's leave-one-shaft-out
RMSE is within 5 % of IDW's (not worse than 1.05 x IDW), the LaBraM-style baseline with the
same residual start equals IDW, and the RBF read-out starts at the least-squares fit of -2 ln d."""

import numpy as np
import torch

from icml26.epitwin import EpiTwin, make_synthetic_seeg
from icml26.epitwin.baselines import IDWReconstructor
from icml26.epitwin.data import windows
from icml26.epitwin.estimator import LaBraMStyleReconstructor
from icml26.epitwin.experiment import leave_one_shaft_out
from icml26.epitwin.model import LAMBDA_F0, GFBAttention, log_distance_logits


def _data():
    X, montage, _ = make_synthetic_seeg(0, 0, 60.0, n_shafts=5)
    Z = ((X - X.mean(1, keepdims=True)) / X.std(1, keepdims=True)).astype(np.float32)
    return windows(Z[:, :10240], 512, 512), windows(Z[:, 10240:], 512, 512), montage


def _rmse(model, W, montage):
    return float(np.sqrt(np.mean((leave_one_shaft_out(model, W, montage) - W) ** 2)))


def test_step0_epitwin_within_5pct_of_idw_and_labram_equals_idw():
    torch.set_num_threads(1)
    train, test, montage = _data()
    small = dict(d_model=16, n_layers=1, n_heads=2, epochs=1, lr=0.0, batch_size=8,
                 window=512, stride=512)  # lr = 0: the fitted model is the step-0 model
    idw = _rmse(IDWReconstructor().fit(train, montage), test, montage)
    ep = EpiTwin(**small, patch=64, adversarial=False).fit(train, montage)
    assert ep.n_steps_ == len(train) // 8 + (len(train) % 8 > 0)
    r_ep = _rmse(ep, test, montage)
    assert r_ep <= 1.05 * idw, (r_ep, idw)
    lb = LaBraMStyleReconstructor(**small, patch=128).fit(train, montage)
    assert abs(_rmse(lb, test, montage) - idw) < 1e-4 * idw
    # the old start (no residual) is far from IDW at step 0: the start is what changed
    old = EpiTwin(**small, patch=64, adversarial=False, geometry_start=False).fit(train, montage)
    assert _rmse(old, test, montage) > 1.05 * idw


def test_readout_fits_minus_two_log_d_and_lambda_start():
    att = GFBAttention(8, 2, geometry_start=True)
    d = torch.linspace(3.0, 110.0, 200)
    beta = att.distance_bias(d).detach()
    target = log_distance_logits(d)[:, None]
    assert float((beta - target).abs().max()) < 0.5
    assert torch.allclose(att.lam, torch.full((2,), LAMBDA_F0))
    assert 10.0 <= LAMBDA_F0 <= 20.0


def test_switching_world_keeps_the_spec_draws_and_gates_by_state():
    X0, m0, i0 = make_synthetic_seeg(0, 0, 20.0, n_shafts=4)
    Xs, ms, i_s = make_synthetic_seeg(0, 0, 20.0, n_shafts=4, world="spec")
    np.testing.assert_array_equal(X0, Xs)  # the default world is unchanged
    X1, m1, i1 = make_synthetic_seeg(0, 0, 20.0, n_shafts=4, world="switching")
    np.testing.assert_array_equal(m0.pos, m1.pos)
    np.testing.assert_array_equal(i0["state"], i1["state"])
    assert not np.allclose(X0, X1)
    # each hemisphere's sources are louder in their own state
    left = i1["source_pos"][:, 0] < 0
    S, st = i1["sources"], i1["state"]
    if (st == 0).any() and (st == 1).any():
        ratio = S[:, st == 0].std(1) / S[:, st == 1].std(1)
        assert np.all(ratio[left] > 1.5) and np.all(ratio[~left] < 1 / 1.5)
    import pytest
    with pytest.raises(ValueError, match="world"):
        make_synthetic_seeg(0, 0, 4.0, n_shafts=2, world="other")
