"""lcl_loss against a direct computation, gradcheck, numerical traps; the encoder's layout."""

import math

import numpy as np
import pytest
import torch

from icml26.lcl import LCLEncoder, lcl_loss


def _direct_loss(za, zb, zu, tau, lam):
    Z = np.vstack([za, zb])
    Z = Z / (np.linalg.norm(Z, axis=1, keepdims=True) + 1e-8)
    B = za.shape[0]
    total = 0.0
    for u in range(2 * B):
        partner = u + B if u < B else u - B
        logits = [Z[u] @ Z[v] / tau for v in range(2 * B) if v != u]
        denominator = sum(math.exp(s) for s in logits)
        total += -(Z[u] @ Z[partner] / tau - math.log(denominator))
    con = total / (2 * B)
    ent = 0.0
    if zu is not None:
        U = zu / (np.linalg.norm(zu, axis=1, keepdims=True) + 1e-8)
        for w in range(U.shape[0]):
            s = U[w] @ Z.T / tau
            p = np.exp(s - s.max())
            p /= p.sum()
            ent += -(p * np.log(p + 1e-8)).sum()
        ent /= U.shape[0]
    return con + lam * ent, con, ent


def _tensors(B=5, d=4, n_u=3, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, d, generator=g, dtype=dtype), torch.randn(B, d, generator=g, dtype=dtype),
            torch.randn(n_u, d, generator=g, dtype=dtype))


def test_loss_matches_direct_computation():
    za, zb, zu = _tensors()
    loss, con, ent = lcl_loss(za, zb, zu, temperature=0.3, lambda_penalty=0.7)
    d_loss, d_con, d_ent = _direct_loss(za.numpy(), zb.numpy(), zu.numpy(), 0.3, 0.7)
    assert con.item() == pytest.approx(d_con, rel=1e-10)
    assert ent.item() == pytest.approx(d_ent, rel=1e-8)
    assert loss.item() == pytest.approx(d_loss, rel=1e-10)


def test_loss_without_unlabelled_cells_has_zero_entropy():
    za, zb, _ = _tensors()
    loss, con, ent = lcl_loss(za, zb, None, lambda_penalty=1.0)
    assert ent.item() == 0.0 and loss.item() == con.item()


def test_gradcheck_of_the_full_loss():
    za, zb, zu = (t.requires_grad_() for t in _tensors(B=3, d=3, n_u=2))
    assert torch.autograd.gradcheck(lambda a, b, u: lcl_loss(a, b, u, 0.5, 0.3)[0], (za, zb, zu))


def test_identical_pairs_far_apart_give_a_low_loss():
    eye = torch.eye(4, dtype=torch.float64) * 5
    _, con, _ = lcl_loss(eye, eye, temperature=0.05)
    # partner similarity 1, negatives 0: each row's loss is log(1 + 6 exp(-20))
    assert con.item() == pytest.approx(math.log1p(6 * math.exp(-20)), abs=1e-12)


def test_small_temperature_does_not_overflow():
    za, zb, zu = _tensors(dtype=torch.float32)
    loss, _, ent = lcl_loss(za, zb, zu, temperature=1e-4, lambda_penalty=1.0)
    assert torch.isfinite(loss) and torch.isfinite(ent)


def test_half_precision_is_computed_in_float32():
    za, zb, zu = _tensors(dtype=torch.float16)
    loss, _, _ = lcl_loss(za, zb, zu, temperature=0.01, lambda_penalty=0.1)
    assert loss.dtype == torch.float32 and torch.isfinite(loss)


@pytest.mark.parametrize("kwargs, message", [
    ({"temperature": 0.0}, "temperature"),
    ({"lambda_penalty": -1.0}, "lambda_penalty"),
])
def test_loss_rejects_bad_parameters(kwargs, message):
    za, zb, _ = _tensors()
    with pytest.raises(ValueError, match=message):
        lcl_loss(za, zb, **kwargs)


def test_loss_rejects_mismatched_pairs_and_nan():
    za, zb, zu = _tensors()
    with pytest.raises(ValueError, match="same shape"):
        lcl_loss(za, zb[:-1])
    with pytest.raises(ValueError, match="z_u must have"):
        lcl_loss(za, zb, zu[:, :2])
    za[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        lcl_loss(za, zb)


def test_encoder_layout_matches_the_paper():
    enc = LCLEncoder(600)
    linear = [m for m in enc.base if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linear] == [(600, 1024), (1024, 256), (256, 64)]
    head = [m for m in enc.projection if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in head] == [(64, 64), (64, 32)]
    assert isinstance(enc.projection[-1], torch.nn.BatchNorm1d)  # z has no final ReLU
    h, z = enc.eval()(torch.randn(3, 600))
    assert h.shape == (3, 64) and z.shape == (3, 32) and bool((h >= 0).all())
