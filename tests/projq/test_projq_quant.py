"""GroupQuantizer, RTN, GPTQ and ActivationStats against direct computations."""

import itertools

import numpy as np
import pytest
import torch

from icml26.projq import ActivationStats, GroupQuantizer, gptq_objective, gptq_quantize, rtn_quantize
from icml26.projq.quant import NF4_LEVELS, check_gram


def _minmax_reference(w, bits):
    """The asymmetric min-max grid written out for one group vector (numpy)."""
    w = np.asarray(w, dtype=np.float64)
    lo, hi = min(0.0, w.min()), max(0.0, w.max())
    if lo == 0 and hi == 0:
        lo, hi = -1.0, 1.0
    s = (hi - lo) / (2 ** bits - 1)
    z = np.round(-lo / s)
    q = np.clip(np.round(w / s) + z, 0, 2 ** bits - 1)
    return s * (q - z)


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 8])
def test_rtn_matches_the_minmax_formula_per_group(bits):
    W = torch.randn(5, 12, generator=torch.Generator().manual_seed(bits))
    W_hat = rtn_quantize(W, GroupQuantizer(bits, 4))
    expected = np.concatenate([np.stack([_minmax_reference(row[g:g + 4], bits) for row in W.numpy()])
                               for g in range(0, 12, 4)], axis=1)
    np.testing.assert_allclose(W_hat.numpy(), expected, rtol=1e-5, atol=1e-6)
    for g in range(0, 12, 4):
        assert all(len(set(row.tolist())) <= 2 ** bits for row in W_hat[:, g:g + 4])


def test_symmetric_grid_is_centered():
    W = torch.tensor([[-2.0, -1.0, 0.5, 1.0]])
    scale, zero = GroupQuantizer(3, -1, sym=True).params(W)
    assert float(zero) == 4.0 and float(scale) == pytest.approx(4.0 / 7)


def test_nf4_values_are_scaled_normalfloat_levels():
    W = torch.randn(3, 64, generator=torch.Generator().manual_seed(0))
    W_hat = rtn_quantize(W, GroupQuantizer(4, 64, nf4=True))
    absmax = W.abs().amax(dim=1, keepdim=True)
    ratios = (W_hat / absmax).reshape(-1, 1)
    assert float((ratios - NF4_LEVELS).abs().min(dim=1).values.max()) < 1e-6
    nearest = NF4_LEVELS[(W / absmax).unsqueeze(-1).sub(NF4_LEVELS).abs().argmin(-1)] * absmax
    torch.testing.assert_close(W_hat, nearest)


@pytest.mark.parametrize("bits", [0, 9, -1])
def test_bits_outside_1_to_8_are_rejected(bits):
    with pytest.raises(ValueError, match="bits"):
        GroupQuantizer(bits, 4)


def test_group_size_that_does_not_divide_the_width_is_an_error():
    with pytest.raises(ValueError, match="group_size=3 does not divide the input width 8"):
        rtn_quantize(torch.randn(2, 8), GroupQuantizer(2, 3))
    with pytest.raises(ValueError, match="group_size"):
        GroupQuantizer(2, 0)


def test_short_last_group_quantizes_every_column():
    W = torch.randn(4, 10, generator=torch.Generator().manual_seed(1))
    W_hat = rtn_quantize(W, GroupQuantizer(2, 4, short_last_group=True))
    tail = np.stack([_minmax_reference(row[8:], 2) for row in W.numpy()])
    np.testing.assert_allclose(W_hat[:, 8:].numpy(), tail, rtol=1e-5, atol=1e-6)


def test_nf4_needs_4_bits():
    with pytest.raises(ValueError, match="nf4"):
        GroupQuantizer(3, 64, nf4=True)


def _naive_gptq(W, H, quantizer):
    """OBS column by column, inverting the remaining Hessian block explicitly at each step."""
    W = W.clone().double()
    n = W.shape[1]
    scale, zero = quantizer.params(W.float())
    Q = torch.zeros_like(W)
    for j in range(n):
        Hinv = torch.linalg.inv(H[j:, j:])
        q = quantizer.apply(W[:, j:j + 1].float(), scale, zero).double()
        Q[:, j:j + 1] = q
        err = (W[:, j:j + 1] - q) / Hinv[0, 0]
        W[:, j:] -= err @ Hinv[0:1, :]
    return Q.float()


def test_blocked_gptq_equals_naive_optimal_brain_surgeon():
    g = torch.Generator().manual_seed(3)
    W, X = torch.randn(6, 10, generator=g), torch.randn(40, 10, generator=g) @ torch.randn(10, 10, generator=g)
    H = (2 * X.T @ X / 40).double()
    quantizer = GroupQuantizer(3, -1)
    fast = gptq_quantize(W, H, quantizer, damp=0.0, block_size=3)
    torch.testing.assert_close(fast, _naive_gptq(W, H, quantizer), rtol=1e-4, atol=1e-4)


def test_gptq_with_a_diagonal_hessian_is_round_to_nearest():
    W = torch.randn(4, 8, generator=torch.Generator().manual_seed(2))
    quantizer = GroupQuantizer(2, 4)
    H = torch.diag(torch.rand(8, dtype=torch.float64) + 0.5)
    torch.testing.assert_close(gptq_quantize(W, H, quantizer), rtn_quantize(W, quantizer))


@pytest.mark.parametrize("bits", [1, 2])
def test_gptq_against_the_brute_force_optimum_on_tiny_layers(bits):
    """m=2, n=4, one group: enumerate every grid point of every row (rows are independent)."""
    quantizer = GroupQuantizer(bits, -1)
    codes = torch.tensor(list(itertools.product(range(2 ** bits), repeat=4)), dtype=torch.float32)
    g = torch.Generator().manual_seed(10 + bits)
    gptq_ratio, rtn_ratio = [], []
    for _ in range(30):
        W = torch.randn(2, 4, generator=g)
        X = torch.randn(12, 4, generator=g) @ torch.randn(4, 4, generator=g)
        H = (2 * X.T @ X / 12).double()
        scale, zero = quantizer.params(W)
        optimum = 0.0
        for i in range(2):
            E = (W[i] - scale[i] * (codes - zero[i])).double()
            optimum += float(torch.einsum("kj,jl,kl->k", E, H, E).min())
        gptq_ratio.append(gptq_objective(W, gptq_quantize(W, H, quantizer, damp=0.0), H) / optimum)
        rtn_ratio.append(gptq_objective(W, rtn_quantize(W, quantizer), H) / optimum)
    gptq_ratio, rtn_ratio = np.array(gptq_ratio), np.array(rtn_ratio)
    assert gptq_ratio.min() >= 1 - 1e-9            # never below the true optimum on the same grid
    assert np.median(gptq_ratio) < np.median(rtn_ratio)
    assert np.mean(gptq_ratio <= rtn_ratio + 1e-12) >= 0.75
    assert np.mean(np.isclose(gptq_ratio, 1.0)) >= 0.2   # GPTQ often finds the optimum itself


def test_gptq_zeroes_dead_input_columns():
    W = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    X = torch.randn(20, 4, generator=torch.Generator().manual_seed(1))
    X[:, 2] = 0
    W_hat = gptq_quantize(W, (X.T @ X).double(), GroupQuantizer(4, -1))
    assert torch.all(W_hat[:, 2] == 0)


def test_gptq_rejects_bad_hessians():
    W, quantizer = torch.randn(2, 3), GroupQuantizer(2, -1)
    with pytest.raises(ValueError, match="positive semi-definite"):
        gptq_quantize(W, -torch.eye(3, dtype=torch.float64), quantizer)
    bad = torch.eye(3, dtype=torch.float64)
    bad[0, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        gptq_quantize(W, bad, quantizer)
    with pytest.raises(ValueError, match="shape"):
        gptq_quantize(W, torch.eye(4), quantizer)
    with pytest.raises(ValueError, match="symmetric"):
        check_gram(torch.tensor([[1.0, 2.0], [0.0, 1.0]]), 2)
    with pytest.raises(ValueError, match="NaN"):
        gptq_quantize(torch.tensor([[float("nan"), 0.0, 0.0]] * 2), torch.eye(3), quantizer)


def test_gptq_raises_damping_until_cholesky_succeeds():
    # a singular but PSD Hessian with damp=0: the 0.0015 increments make it factorisable
    X = torch.ones(5, 3, dtype=torch.float64)
    W_hat = gptq_quantize(torch.randn(2, 3), X.T @ X, GroupQuantizer(2, -1), damp=0.0)
    assert torch.isfinite(W_hat).all()


def test_activation_stats_from_hooks_equal_the_direct_gram():
    layer = torch.nn.Linear(5, 3)
    stats, handle = ActivationStats.from_module_hook(layer, "layer")
    X1, X2 = torch.randn(2, 7, 5), torch.randn(4, 5)
    layer(X1), layer(X2)
    handle.remove()
    layer(torch.randn(3, 5))
    X = torch.cat([X1.reshape(-1, 5), X2]).double()
    torch.testing.assert_close(stats.G, X.T @ X)
    assert stats.N == 18 and stats.N_last == 4
    torch.testing.assert_close(stats.G_last, X2.double().T @ X2.double())
    S = stats.sqrt_gram()
    torch.testing.assert_close(S @ S, stats.G)


def test_activation_stats_reject_nan_and_wrong_width():
    stats = ActivationStats(3, "blk.q")
    with pytest.raises(ValueError, match="blk.q: the inputs contain NaN"):
        stats.update(torch.tensor([[0.0, float("nan"), 1.0]]))
    with pytest.raises(ValueError, match="features"):
        stats.update(torch.zeros(2, 4))
    with pytest.raises(ValueError, match="no activations"):
        stats.hessian()
    with pytest.raises(TypeError):
        ActivationStats.from_module_hook(torch.nn.Conv1d(2, 2, 1))


def test_too_few_tokens_warn():
    stats = ActivationStats.from_tensor(torch.randn(2, 5))
    with pytest.warns(UserWarning, match="rank-deficient"):
        stats.hessian()


def test_one_eigendecomposition_serves_the_check_and_the_square_root(monkeypatch):
    """ActivationStats validates G (PSD) and takes its square root from one cached ``eigh``."""
    counts = {"eigh": 0, "eigvalsh": 0}
    real_eigh, real_eigvalsh = torch.linalg.eigh, torch.linalg.eigvalsh

    def eigh(*a, **k):
        counts["eigh"] += 1
        return real_eigh(*a, **k)

    def eigvalsh(*a, **k):
        counts["eigvalsh"] += 1
        return real_eigvalsh(*a, **k)

    monkeypatch.setattr(torch.linalg, "eigh", eigh)
    monkeypatch.setattr(torch.linalg, "eigvalsh", eigvalsh)
    X = torch.randn(64, 8, generator=torch.Generator().manual_seed(0))
    stats = ActivationStats.from_tensor(X)
    stats.check()
    S = stats.sqrt_gram()
    assert counts == {"eigh": 1, "eigvalsh": 0}
    torch.testing.assert_close(S @ S, stats.G)
    stats.update(X)                               # new data: the cache is cleared
    stats.sqrt_gram()
    assert counts["eigh"] == 2
