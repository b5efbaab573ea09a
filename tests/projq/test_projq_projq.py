"""ProjQ Phase 1, lordq, LoftQ and ρ_r against direct sample-space computations."""

import numpy as np
import pytest
import torch

from icml26.projq import (ActivationStats, GroupQuantizer, ProjQ, gptq_quantize, loftq_init, lordq_init,
                          residual_profile, rtn_quantize, synthetic_layer, uncorrectable_residual)

# the E1 calibration bar: median over layers of rho_r(GPTQ) / rho_r(ProjQ)
CALIBRATION_BAR = 1.15


def _small_case(seed=0, m=6, n=8, tokens=40):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(m, n, generator=g)
    X = torch.randn(tokens, n, generator=g) @ torch.randn(n, n, generator=g)
    return W, X


def _sample_space_step(W, W_prev, X, rank, quantizer):
    """One ProjQ step written in sample space with the N×N projector (the paper's form)."""
    R = (W - W_prev).double() @ X.double().T                      # (m, N)
    V = torch.linalg.svd(R, full_matrices=False).Vh[:rank].T       # (N, r)
    P_perp = torch.eye(X.shape[0], dtype=torch.float64) - V @ V.T
    X_perp_T = X.double().T @ P_perp                               # X_⊥ᵀ = Xᵀ(I − P)
    H_perp = 2.0 / X.shape[0] * X_perp_T @ X_perp_T.T
    W_new = gptq_quantize(W, 0.5 * (H_perp + H_perp.T), quantizer)
    proj_loss = float((((W - W_new).double() @ X_perp_T) ** 2).sum())
    return W_new, V, proj_loss


def test_n_space_form_equals_the_sample_space_projection():
    W, X = _small_case()
    quantizer = GroupQuantizer(3, -1)
    fitted = ProjQ(bits=3, group_size=-1, rank=2, max_iter=2, tol=0.0).fit(W, ActivationStats.from_tensor(X))
    W0 = gptq_quantize(W, (2 * X.T @ X / X.shape[0]).double(), quantizer)
    torch.testing.assert_close(fitted.W_gptq_, W0)
    W1, V1, loss1 = _sample_space_step(W, W0, X, 2, quantizer)
    W2, V2, loss2 = _sample_space_step(W, W1, X, 2, quantizer)
    torch.testing.assert_close(fitted.W_hat_, W2, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(fitted.proj_loss_, [loss1, loss2], rtol=1e-6)
    p_diff = float(torch.linalg.norm(V2 @ V2.T - V1 @ V1.T))
    assert fitted.p_diff_[1] == pytest.approx(p_diff, rel=1e-5, abs=1e-6)
    full = float((((W - W2).double() @ X.double().T) ** 2).sum())
    assert fitted.full_loss_[1] == pytest.approx(full, rel=1e-6)


def test_rho_r_equals_the_direct_tail_of_the_output_error_spectrum():
    W, X = _small_case(1)
    W_hat = rtn_quantize(W, GroupQuantizer(2, 4))
    sigma2 = torch.linalg.svdvals((W - W_hat).double() @ X.double().T) ** 2
    reference = float(((W.double() @ X.double().T) ** 2).sum())
    stats = ActivationStats.from_tensor(X)
    for r in (0, 1, 3):
        assert uncorrectable_residual(W, W_hat, stats, r) == pytest.approx(float(sigma2[r:].sum()) / reference)
    assert residual_profile(W, W_hat, stats, (0, 1))[0] >= residual_profile(W, W_hat, stats, (0, 1))[1]


def test_projq_shapes_noise_into_the_adapter_subspace_on_the_synthetic_layer():
    W, X = synthetic_layer(96, 96, tokens=2048, seed=0)
    stats = ActivationStats.from_tensor(X)
    W_gptq = gptq_quantize(W, stats.hessian(), GroupQuantizer(2, 32))
    fitted = ProjQ(bits=2, group_size=32, rank=12).fit(W, stats)
    gptq, projq = residual_profile(W, W_gptq, stats, (0, 12)), residual_profile(W, fitted.W_hat_, stats, (0, 12))
    assert gptq[12] / projq[12] >= CALIBRATION_BAR
    assert projq[0] > gptq[0]          # the total error grows: it is pushed into the adapter's subspace
    assert 2 <= fitted.n_iter_ <= 5


@pytest.mark.parametrize("projector", ["left_singular", "weight_space"])
def test_a_wrong_projector_fails_the_calibration_bar(projector):
    ratios, good = [], []
    for seed in range(3):
        W, X = synthetic_layer(64, 64, tokens=1024, seed=seed)
        stats = ActivationStats.from_tensor(X)
        base = uncorrectable_residual(W, gptq_quantize(W, stats.hessian(), GroupQuantizer(2, 64)), stats, 8)
        wrong = ProjQ(bits=2, group_size=64, rank=8, projector=projector).fit(W, stats).W_hat_
        right = ProjQ(bits=2, group_size=64, rank=8).fit(W, stats).W_hat_
        ratios.append(base / uncorrectable_residual(W, wrong, stats, 8))
        good.append(base / uncorrectable_residual(W, right, stats, 8))
    assert np.median(ratios) < CALIBRATION_BAR <= np.median(good)


def test_last_batch_projection_and_return_best():
    W, X = synthetic_layer(32, 32, tokens=512, seed=1)
    stats = ActivationStats(32)
    stats.update(X[:256])
    stats.update(X[256:])
    last = ProjQ(bits=2, group_size=32, rank=4, projection_tokens="last_batch").fit(W, stats)
    best = ProjQ(bits=2, group_size=32, rank=4, return_best=True, tol=0.0).fit(W, stats)
    everything = ProjQ(bits=2, group_size=32, rank=4).fit(W, stats)
    assert not torch.equal(last.W_hat_, everything.W_hat_)      # the projection tokens matter
    assert best.n_iter_ == 5
    chosen = int(np.argmin(best.proj_loss_))
    last_iterate = ProjQ(bits=2, group_size=32, rank=4, tol=0.0, max_iter=chosen + 1).fit(W, stats)
    assert torch.equal(best.W_hat_, last_iterate.W_hat_)


def test_projq_is_deterministic_and_randomized_svd_is_seeded():
    W, X = synthetic_layer(48, 48, tokens=512, seed=2)
    stats = ActivationStats.from_tensor(X)
    a = ProjQ(bits=2, group_size=48, rank=6, svd="randomized", random_state=3).fit(W, stats).W_hat_
    b = ProjQ(bits=2, group_size=48, rank=6, svd="randomized", random_state=3).fit(W, stats).W_hat_
    assert torch.equal(a, b)


def test_projq_follows_the_estimator_contract():
    model = ProjQ(bits=3, rank=4)
    assert model.get_params()["bits"] == 3 and model.set_params(rank=5).rank == 5
    with pytest.raises(AttributeError, match="not fitted"):
        model.transform()


@pytest.mark.parametrize("rank", [0, 8, 9])
def test_rank_must_be_between_1_and_min_shape(rank):
    W, X = _small_case(m=8, n=10)
    with pytest.raises(ValueError, match="rank"):
        ProjQ(bits=2, group_size=-1, rank=rank).fit(W, ActivationStats.from_tensor(X))


def test_projq_rejects_bad_inputs():
    W, X = _small_case()
    stats = ActivationStats.from_tensor(X)
    with pytest.raises(ValueError, match="bits"):
        ProjQ(bits=9, group_size=-1, rank=2).fit(W, stats)
    with pytest.raises(ValueError, match="group_size=3"):
        ProjQ(bits=2, group_size=3, rank=2).fit(W, stats)
    with pytest.raises(ValueError, match="features"):
        ProjQ(bits=2, group_size=-1, rank=2).fit(W, ActivationStats.from_tensor(torch.randn(20, 5)))
    with pytest.raises(ValueError, match="NaN"):
        ProjQ(bits=2, group_size=-1, rank=2).fit(W * float("nan"), stats)
    not_psd = ActivationStats(8, "blk.3.q_proj")
    not_psd.G, not_psd.N = -torch.eye(8, dtype=torch.float64), 10
    with pytest.raises(ValueError, match="blk.3.q_proj.*positive semi-definite"):
        ProjQ(bits=2, group_size=-1, rank=2).fit(W, not_psd)
    with pytest.raises(ValueError, match="projection_tokens"):
        ProjQ(bits=2, group_size=-1, rank=2, projection_tokens="first").fit(W, stats)


def test_lordq_is_the_activation_weighted_optimum():
    W, X = _small_case(4, m=10, n=12, tokens=60)
    W_hat = rtn_quantize(W, GroupQuantizer(2, 4))
    stats = ActivationStats.from_tensor(X)
    A, B = lordq_init(W, W_hat, stats, 3)
    assert A.shape == (3, 12) and B.shape == (10, 3)
    compensated = float((((W - W_hat - B @ A).double() @ X.double().T) ** 2).sum())
    sigma2 = torch.linalg.svdvals((W - W_hat).double() @ X.double().T) ** 2
    assert compensated == pytest.approx(float(sigma2[3:].sum()), rel=1e-4)
    # first-order optimality: the gradient of the compensated loss vanishes at (A, B)
    A_, B_ = A.double().requires_grad_(), B.double().requires_grad_()
    loss = (((W - W_hat).double() - B_ @ A_) @ X.double().T).pow(2).sum()
    grad_A, grad_B = torch.autograd.grad(loss, (A_, B_))
    assert float(grad_A.abs().max()) < 1e-3 * float(loss.detach()) and float(grad_B.abs().max()) < 1e-3 * float(loss.detach())


def test_lordq_scaling_and_randomized_svd():
    W, X = _small_case(5, m=16, n=16, tokens=80)
    W_hat = rtn_quantize(W, GroupQuantizer(2, 8))
    stats = ActivationStats.from_tensor(X)
    A, B = lordq_init(W, W_hat, stats, 4)
    A_s, B_s = lordq_init(W, W_hat, stats, 4, lora_alpha=16)
    torch.testing.assert_close((16 / 4) * B_s @ A_s, B @ A, rtol=1e-4, atol=1e-5)
    A_u, B_u = lordq_init(W, W_hat, stats, 4, respect_scaling=False, lora_alpha=16)
    torch.testing.assert_close(B_u @ A_u, B @ A)
    A_r, B_r = lordq_init(W, W_hat, stats, 4, svd="randomized", random_state=0)
    torch.testing.assert_close(B_r @ A_r, B @ A, rtol=1e-3, atol=1e-3)


def test_loftq_alternation_reduces_the_weight_error():
    W = synthetic_layer(32, 32, tokens=1, seed=3)[0]
    quantizer = GroupQuantizer(2, 16)
    W_hat, A, B = loftq_init(W, quantizer, 4, n_iter=5)
    assert torch.equal(rtn_quantize(W_hat, quantizer), W_hat)       # the base weight lies on the grid
    assert float(torch.linalg.norm(W - W_hat - B @ A)) < float(torch.linalg.norm(W - rtn_quantize(W, quantizer)))
    one = loftq_init(W, quantizer, 4, n_iter=1)
    assert float(torch.linalg.norm(W - W_hat - B @ A)) <= float(torch.linalg.norm(W - one[0] - one[2] @ one[1])) + 1e-6
    with pytest.raises(ValueError, match="rank"):
        loftq_init(W, quantizer, 32)


def test_gptq_eora_alternation_round_zero_is_gptq_plus_eora():
    from icml26.projq import gptq_eora_alternation

    W, X = synthetic_layer(48, 64, tokens=512, seed=2)
    stats = ActivationStats.from_tensor(X)
    quantizer = GroupQuantizer(2, -1)
    W_gptq = gptq_quantize(W, stats.hessian(), quantizer)
    A0, B0 = lordq_init(W, W_gptq, stats, 6)
    # the first round has no correction yet: GPTQ, then the EoRA adapter of its error
    W_hat, A, B = gptq_eora_alternation(W, stats, quantizer, 6, n_iter=0 + 1, return_best=True)
    S = stats.sqrt_gram().float()

    def loss(W_hat, A, B):
        return float((((W - W_hat - B @ A) @ S) ** 2).sum())

    # the best round is never worse than round 0 on the calibration objective (what return_best picks)
    assert loss(W_hat, A, B) <= loss(W_gptq, A0, B0) * (1 + 1e-5)
    # the adapter is the EoRA optimum of the returned weight: rho_r equals the compensated residual
    rho = uncorrectable_residual(W, W_hat, stats, 6)
    reference = float(((W.double() @ S.double()) ** 2).sum())
    assert loss(W_hat, A, B) / reference == pytest.approx(rho, rel=1e-3)
    with pytest.raises(ValueError, match="n_iter"):
        gptq_eora_alternation(W, stats, quantizer, 6, n_iter=0)
    with pytest.raises(TypeError, match="quantizer"):
        gptq_eora_alternation(W, stats, "2-bit", 6)


def test_gptq_eora_alternation_runs_the_requested_rounds(monkeypatch):
    import icml26.projq.projq as projq_module
    from icml26.projq import gptq_eora_alternation

    calls = []
    real = projq_module._gptq
    monkeypatch.setattr(projq_module, "_gptq", lambda *a, **k: calls.append(1) or real(*a, **k))
    W, X = synthetic_layer(16, 32, tokens=128, seed=0)
    gptq_eora_alternation(W, ActivationStats.from_tensor(X), GroupQuantizer(2, -1), 2, n_iter=3)
    assert len(calls) == 4                      # T + 1 GPTQ calls, as ProjQ's max_iter = T


@pytest.mark.parametrize("svd", ["exact", "randomized"])
def test_fit_leaves_the_global_rng_untouched(svd):
    W, X = synthetic_layer(32, 32, tokens=256, seed=0)
    stats = ActivationStats.from_tensor(X)
    state = torch.get_rng_state()
    ProjQ(2, -1, 4, max_iter=2, svd=svd, random_state=3).fit(W, stats)
    lordq_init(W, rtn_quantize(W, GroupQuantizer(2, -1)), stats, 4, svd=svd, random_state=3)
    assert torch.equal(torch.get_rng_state(), state)
