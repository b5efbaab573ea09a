"""ProjQ Phase 1 (project-and-quantize), Phase 2 (the "lordq" adapter initialisation), LoftQ,
and the uncorrectable residual ρ_r.

Reference: Yu, Zhang, Wang, Lasaulce, Debbah, "ProjQ: Project-and-Quantize for Adapter-Aware
LLM Compression", ICML 2026 (arXiv:2606.00494); official code ``yy9301/ProjQ``
(``gptqmodel/quantization/projq_gptq.py``, ``gptqmodel/eora/lordq.py``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.base import BaseEstimator

from icml26.core.validation import check_choice, check_int, check_scalar_in

from .quant import ActivationStats, GroupQuantizer, _gptq, check_weight

__all__ = ["ProjQ", "lordq_init", "loftq_init", "gptq_eora_alternation", "uncorrectable_residual", "residual_profile",
           "top_right_singular_vectors", "check_rank"]

# Randomized SVD settings of the reference (Phase 1: oversample 8; Phase 2: oversample 5).
PROJECTION_OVERSAMPLE = 8
COMPENSATION_OVERSAMPLE = 5
POWER_ITERATIONS = 2
# Phase 2 eigenvalue floor and jitter (lordq.py).
EIGENVALUE_FLOOR = 1e-6
SVD_JITTER = 1e-6


def check_rank(rank, m: int, n: int, name: str = "rank") -> int:
    """1 <= rank < min(m, n): at min(m, n) the adapter corrects everything and ProjQ degenerates."""
    check_int(rank, name, min_value=1)
    if rank >= min(m, n):
        raise ValueError(f"{name} must be < min(out, in) = {min(m, n)} for a {m}x{n} weight, got {rank}")
    return int(rank)


def _check_stats(stats, n: int) -> ActivationStats:
    if not isinstance(stats, ActivationStats):
        raise TypeError(f"stats must be an ActivationStats, got {type(stats).__name__}")
    if stats.n_features != n:
        raise ValueError(f"{stats.name}: stats have {stats.n_features} features, the weight W has {n} inputs")
    if stats.N == 0:
        raise ValueError(f"{stats.name}: no activations collected yet")
    stats.check("all")
    return stats


def svd_flip(U: torch.Tensor, Vh: torch.Tensor):
    """Singular-vector pairs with a fixed sign: the largest-magnitude entry of each column of
    ``U`` is positive (scikit-learn's ``svd_flip`` convention).

    An SVD defines each pair ``(u_i, v_i)`` only up to a common sign, and LAPACK (CPU) and
    cuSOLVER (CUDA) choose differently; fixing it makes the adapters ``A``, ``B`` the same on
    every device. ``B A`` is unchanged, and LoRA training from ``(A, B)`` or from the flipped
    pair is the same up to that sign (exactly, in floating point).
    """
    pivot = U.abs().argmax(dim=0)
    signs = torch.sign(U.gather(0, pivot[None]))[0]
    signs = torch.where(signs == 0, 1.0, signs).to(U.dtype)
    return U * signs, Vh * signs[:, None]


def _generator(random_state) -> torch.Generator:
    if random_state is None:
        random_state = 0
    check_int(random_state, "random_state", min_value=0)
    return torch.Generator().manual_seed(int(random_state))


def _randomized_svd(M: torch.Tensor, rank: int, oversample: int, generator: torch.Generator,
                    scale_test_matrix: bool = True):
    """Halko-style randomized SVD with Gaussian test matrix and power iterations (float64)."""
    width = min(rank + oversample, min(M.shape))
    # drawn on the CPU (the generator's device) and moved: the same test matrix on every device
    omega = torch.randn(M.shape[1], width, generator=generator, dtype=M.dtype).to(M.device)
    if scale_test_matrix:
        omega /= math.sqrt(width)
    Y = M @ omega
    for _ in range(POWER_ITERATIONS):
        Y = torch.linalg.qr(Y).Q
        Y = M @ (M.T @ Y)
    Q = torch.linalg.qr(Y).Q
    U_small, sigma, Vh = torch.linalg.svd(Q.T @ M, full_matrices=False)
    return (Q @ U_small)[:, :rank], sigma[:rank], Vh[:rank]


def top_right_singular_vectors(M: torch.Tensor, rank: int, svd: str = "exact",
                               generator: torch.Generator | None = None) -> torch.Tensor:
    """The top-``rank`` right singular vectors of ``M`` (columns of an n × rank matrix)."""
    if svd == "exact":
        # eigh of the smaller Gram matrix: the same subspace as the SVD, at a fraction of the cost
        if M.shape[0] >= M.shape[1]:
            return torch.linalg.eigh(M.T @ M).eigenvectors[:, -rank:].flip(1)
        eigenvalues, U = torch.linalg.eigh(M @ M.T)
        U, sigma = U[:, -rank:].flip(1), eigenvalues[-rank:].flip(0).clamp(min=0).sqrt()
        Q, R = torch.linalg.qr((M.T @ U) / torch.where(sigma > 0, sigma, torch.ones_like(sigma)))
        return Q * torch.sign(torch.diagonal(R))
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    return _randomized_svd(M, rank, PROJECTION_OVERSAMPLE, generator)[2].T


class ProjQ(BaseEstimator):
    """ProjQ Phase 1: quantize a linear layer knowing that a rank-r adapter will follow.

    Alternates between (i) the r-dimensional subspace the adapter will absorb (the top-r right
    singular directions of the output error ``R = (W − Ŵ)Xᵀ``) and (ii) GPTQ of the *original*
    ``W`` with the Hessian projected onto the complement, so quantization minimises only the
    error the adapter cannot correct.

    Parameters
    ----------
    bits : int
        Bits per weight (1–8).
    group_size : int
        Quantization group along the input dimension (−1: whole row).
    rank : int
        Adapter rank r the projection anticipates (1 <= rank < min(m, n)).
    max_iter : int
        T_max alternations after the initial GPTQ.
    tol : float
        Stop when the relative change of the projected loss, or ‖P_t − P_{t−1}‖_F, is below it
        (checked from the second iteration on).
    damp : float
        GPTQ damping (fraction of the mean diagonal).
    sym : bool
        Symmetric grid.
    projection_tokens : {"all", "last_batch"}
        Tokens that define the projection: all calibration tokens (default) or only the last
        batch, as the reference code does.
    svd : {"exact", "randomized"}
        How the top-r subspace is computed (randomized: oversample 8, 2 power iterations, seeded).
    random_state : int, optional
        Seed of the randomized SVD.
    return_best : bool
        Return the iterate with the lowest projected loss instead of the last one (the reference
        returns the last).
    short_last_group : bool
        Allow a width that ``group_size`` does not divide (shorter last group).
    block_size : int
        GPTQ lazy-update block.
    projector : {"activation", "left_singular", "weight_space"}
        "activation" is ProjQ. The other two are deliberately wrong projectors kept as negative
        controls (the error's top left singular vectors used as input directions; a projection
        computed from the weight error without the activation metric); they should not beat
        GPTQ's uncorrectable residual by much.

    Attributes
    ----------
    W_hat_ : Tensor (m, n)
        The quantized (dequantised) weight.
    W_gptq_ : Tensor (m, n)
        The initial plain-GPTQ weight Ŵ₀.
    n_iter_ : int
        Alternations run.
    history_ : dict
        ``proj_loss``, ``full_loss``, ``p_diff`` per iteration (also as ``proj_loss_`` etc.).

    Notes
    -----
    N-independent exact form: with ``S = G^{1/2}`` (``G = XᵀX``), ``R̃ = (W − Ŵ) S`` has the
    singular values of ``R``; with ``Ṽ_r`` its top-r right singular vectors the projected
    Hessian is ``H_⊥ = (2/N) S (I − Ṽ_r Ṽ_rᵀ) S`` and the projected loss
    ``‖R̃ (I − Ṽ_r Ṽ_rᵀ)‖²_F``. ``‖P_t − P_{t−1}‖²_F = 2r − 2‖Ṽ_tᵀ Ṽ_{t−1}‖²_F`` (the sample-space
    projectors' inner products equal those of the Ṽ's). The N × N projector is never formed.

    References
    ----------
    Yu et al., "ProjQ: Project-and-Quantize for Adapter-Aware LLM Compression", ICML 2026.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> W, X = torch.randn(16, 32, generator=g), torch.randn(256, 32, generator=g)
    >>> model = ProjQ(bits=2, group_size=16, rank=4).fit(W, ActivationStats.from_tensor(X))
    >>> model.W_hat_.shape, 1 <= model.n_iter_ <= 5
    (torch.Size([16, 32]), True)
    """

    def __init__(self, bits=2, group_size=128, rank=64, max_iter=5, tol=0.02, damp=0.1, sym=False,
                 projection_tokens="all", svd="exact", random_state=None, return_best=False,
                 short_last_group=False, block_size=128, projector="activation"):
        self.bits = bits
        self.group_size = group_size
        self.rank = rank
        self.max_iter = max_iter
        self.tol = tol
        self.damp = damp
        self.sym = sym
        self.projection_tokens = projection_tokens
        self.svd = svd
        self.random_state = random_state
        self.return_best = return_best
        self.short_last_group = short_last_group
        self.block_size = block_size
        self.projector = projector

    def _quantizer(self) -> GroupQuantizer:
        return GroupQuantizer(self.bits, self.group_size, sym=self.sym,
                              short_last_group=self.short_last_group)

    def fit(self, W: torch.Tensor, stats: ActivationStats):
        """Quantize ``W`` (m × n) with calibration statistics ``stats``; returns self."""
        W = check_weight(W)
        m, n = W.shape
        quantizer = self._quantizer()
        quantizer.group_width(n)
        rank = check_rank(self.rank, m, n)
        check_int(self.max_iter, "max_iter", min_value=1)
        check_scalar_in(self.tol, "tol", low=0.0)
        check_scalar_in(self.damp, "damp", low=0.0, high=1.0, high_inclusive=False)
        check_choice(self.projection_tokens, "projection_tokens", ("all", "last_batch"))
        check_choice(self.svd, "svd", ("exact", "randomized"))
        check_int(self.block_size, "block_size", min_value=1)
        check_choice(self.projector, "projector", ("activation", "left_singular", "weight_space"))
        if self.projector == "left_singular" and m != n:
            raise ValueError(f"projector='left_singular' needs a square weight, got {m}x{n}")
        stats = _check_stats(stats, n)
        generator = _generator(self.random_state)
        layer = stats.name
        W_hat = _gptq(W, stats.hessian("all"), quantizer, self.damp, self.block_size, layer)
        self.W_gptq_ = W_hat
        G_proj, N_proj = stats.gram(self.projection_tokens)
        stats.check(self.projection_tokens)
        S = stats.sqrt_gram(self.projection_tokens)
        W64 = W.to(torch.float64)
        history = {"proj_loss": [], "full_loss": [], "p_diff": []}
        best, best_loss, V_prev = W_hat, math.inf, None
        E = W64 - W_hat.to(torch.float64)
        ES = E @ S
        for t in range(1, self.max_iter + 1):
            V, H_perp = self._projection(E, ES, S, G_proj, N_proj, rank, generator)
            W_hat = _gptq(W, H_perp, quantizer, self.damp, self.block_size, layer)
            E = W64 - W_hat.to(torch.float64)
            ES = E @ S
            full_loss = float((ES ** 2).sum())
            if self.projector == "weight_space":
                proj_loss = 0.5 * N_proj * float(torch.einsum("ij,jk,ik->", E, H_perp, E))
            else:   # ‖ES (I − VVᵀ)‖² for an orthonormal V
                proj_loss = full_loss - float(((ES @ V) ** 2).sum())
            p_diff = (math.sqrt(max(0.0, 2 * rank - 2 * float(((V.T @ V_prev) ** 2).sum())))
                      if V_prev is not None else math.nan)
            history["proj_loss"].append(proj_loss)
            history["full_loss"].append(full_loss)
            history["p_diff"].append(p_diff)
            if proj_loss < best_loss:
                best, best_loss = W_hat, proj_loss
            if t >= 2:
                previous = history["proj_loss"][-2]
                change = abs(proj_loss - previous) / previous if previous > 0 else 0.0
                if change < self.tol or p_diff < self.tol:
                    break
            V_prev = V
        self.n_iter_ = len(history["proj_loss"])
        self.history_ = history
        self.proj_loss_ = np.array(history["proj_loss"])
        self.full_loss_ = np.array(history["full_loss"])
        self.p_diff_ = np.array(history["p_diff"])
        self.W_hat_ = best if self.return_best else W_hat
        return self

    def _projection(self, E, ES, S, G, N, rank, generator):
        """The projector basis V and the projected Hessian H_⊥ for the current error E (ES = E S)."""
        if self.projector == "activation":
            V = top_right_singular_vectors(ES, rank, self.svd, generator)
        elif self.projector == "left_singular":   # negative control: output-space directions
            V = torch.linalg.svd(ES, full_matrices=False).U[:, :rank]
        else:                                      # negative control: weight-space projection
            V = top_right_singular_vectors(E, rank, self.svd, generator)
            P_perp = torch.eye(E.shape[1], dtype=E.dtype, device=E.device) - V @ V.T
            H_perp = (2.0 / N) * (P_perp @ G @ P_perp)
            return V, 0.5 * (H_perp + H_perp.T)
        SV = S @ V                                 # S (I − VVᵀ) S = G − (SV)(SV)ᵀ
        H_perp = (2.0 / N) * (G - SV @ SV.T)
        return V, 0.5 * (H_perp + H_perp.T)

    def transform(self, W=None) -> torch.Tensor:
        """The quantized weight (``W`` is ignored; the fitted ``W_hat_``)."""
        if not hasattr(self, "W_hat_"):
            raise AttributeError("ProjQ is not fitted yet; call fit(W, stats) first")
        return self.W_hat_


def residual_profile(W: torch.Tensor, W_hat: torch.Tensor, stats: ActivationStats, ranks=(0, 16, 64),
                     tokens: str = "all") -> dict:
    """ρ_r for several ranks from one SVD: ``{r: Σ_{i>r} σ_i²(E S) / ‖W S‖²_F}``.

    Parameters
    ----------
    W, W_hat : Tensor (m, n)
        Full-precision and quantized weight.
    stats : ActivationStats
        The *evaluation* activations (calibration or held-out).
    ranks : sequence of int
        Each 0 <= r < min(m, n) (r = 0 gives the total residual ρ_0).
    tokens : {"all", "last_batch"}

    Returns
    -------
    dict of int to float
    """
    W = check_weight(W)
    W_hat = check_weight(W_hat, "W_hat")
    if W_hat.shape != W.shape:
        raise ValueError(f"W_hat has shape {tuple(W_hat.shape)}, W has {tuple(W.shape)}")
    m, n = W.shape
    stats = _check_stats(stats, n)
    for r in ranks:
        check_int(r, "rank", min_value=0, max_value=min(m, n) - 1)
    S = stats.sqrt_gram(tokens)
    return residual_profile_from_sqrt(W, W_hat, S, ranks)


def residual_profile_from_sqrt(W, W_hat, S, ranks) -> dict:
    """:func:`residual_profile` with the square root ``S`` of the Gram matrix given."""
    W64 = W.to(torch.float64)
    ES = (W64 - W_hat.to(torch.float64)) @ S
    gram = ES @ ES.T if ES.shape[0] <= ES.shape[1] else ES.T @ ES     # σ² from the smaller Gram matrix
    sigma2 = torch.linalg.eigvalsh(gram).flip(0).clamp(min=0)
    reference = float(((W64 @ S) ** 2).sum())
    if reference == 0:
        raise ValueError("‖W S‖ is zero: the weight or the activations vanish; ρ is undefined")
    return {int(r): float(sigma2[int(r):].sum()) / reference for r in ranks}


def uncorrectable_residual(W: torch.Tensor, W_hat: torch.Tensor, stats: ActivationStats, rank: int,
                           tokens: str = "all") -> float:
    """ρ_r(Ŵ) = Σ_{i>r} σ_i²((W − Ŵ) S) / ‖W S‖²_F, the error a rank-r adapter cannot remove.

    Parameters
    ----------
    W, W_hat : Tensor (m, n)
    stats : ActivationStats
        Evaluation activations; ``S = G^{1/2}``.
    rank : int
        0 <= rank < min(m, n); 0 gives the total residual ρ_0 = ‖E S‖²/‖W S‖².

    Returns
    -------
    float

    Examples
    --------
    >>> W = torch.eye(4)
    >>> uncorrectable_residual(W, torch.zeros(4, 4), ActivationStats.from_tensor(torch.eye(4)), 1)
    0.75
    """
    return residual_profile(W, W_hat, stats, (rank,), tokens)[int(rank)]


def lordq_init(W: torch.Tensor, W_hat: torch.Tensor, stats: ActivationStats, rank: int,
               respect_scaling: bool = True, lora_alpha: float | None = None, svd: str = "exact",
               random_state=None):
    """Phase 2 ("lordq", EoRA-style): the rank-r adapter minimising ‖(W − Ŵ − BA) Xᵀ‖_F.

    Parameters
    ----------
    W, W_hat : Tensor (m, n)
    stats : ActivationStats
        Calibration activations; ``C = XᵀX / N``.
    rank : int
        Adapter rank r_c.
    respect_scaling : bool
        With ``lora_alpha`` given, return ``A·√(r/α)``, ``B·√(r/α)`` so that PEFT's scaled
        correction ``(α/r)·BA`` equals the computed one (a Resolution, not from the paper: the
        reference loads them unscaled, so its initial correction is α/r of the computed one;
        ``False`` reproduces that).
    lora_alpha : float, optional
        PEFT's ``lora_alpha``; None means no scaling is applied.
    svd : {"exact", "randomized"}
        Randomized: 1e-6 Gaussian jitter, oversample 5, 2 power iterations (the reference).
    random_state : int, optional

    Returns
    -------
    A : Tensor (r, n), B : Tensor (m, r)
        PEFT's ``lora_A`` / ``lora_B`` weights; ``W ≈ Ŵ + B A``.

    Notes
    -----
    ``C = U diag(λ) Uᵀ``, ``λ ← max(λ, 1e−6)``, ``Y = U diag(√λ)``; ``ΔW Y ≈ U_r Σ_r V_rᵀ``;
    ``B = U_r Σ_r^{1/2}``, ``A = Σ_r^{1/2} V_rᵀ Y⁻¹``.
    """
    W = check_weight(W)
    W_hat = check_weight(W_hat, "W_hat")
    if W_hat.shape != W.shape:
        raise ValueError(f"W_hat has shape {tuple(W_hat.shape)}, W has {tuple(W.shape)}")
    m, n = W.shape
    rank = check_rank(rank, m, n)
    stats = _check_stats(stats, n)
    check_choice(svd, "svd", ("exact", "randomized"))
    A, B = _eora(W - W_hat, stats, rank, svd, random_state)
    if respect_scaling and lora_alpha is not None:
        check_scalar_in(lora_alpha, "lora_alpha", low=0.0, low_inclusive=False)
        factor = math.sqrt(rank / lora_alpha)
        A, B = A * factor, B * factor
    return A.to(torch.float32), B.to(torch.float32)


def _eora(E: torch.Tensor, stats: ActivationStats, rank: int, svd: str = "exact", random_state=None):
    """``(A, B)`` (float64) minimising ‖(E − BA) Xᵀ‖_F over rank ``rank`` (EoRA's whitened SVD)."""
    eigenvalues, eigenvectors = stats.eigh()          # of G = N·C: C's eigenvalues are these / N
    root = (eigenvalues / stats.N).clamp(min=EIGENVALUE_FLOOR).sqrt()
    M = E.to(torch.float64) @ (eigenvectors * root)
    if svd == "exact":
        U, sigma, Vh = torch.linalg.svd(M, full_matrices=False)
        U, sigma, Vh = U[:, :rank], sigma[:rank], Vh[:rank]
    else:
        generator = _generator(random_state)
        M = M + SVD_JITTER * torch.randn(M.shape, generator=generator, dtype=M.dtype).to(M.device)
        U, sigma, Vh = _randomized_svd(M, rank, COMPENSATION_OVERSAMPLE, generator, scale_test_matrix=False)
    U, Vh = svd_flip(U, Vh)
    half = sigma.sqrt()
    return (half[:, None] * Vh) @ (eigenvectors / root).T, U * half


def gptq_eora_alternation(W: torch.Tensor, stats: ActivationStats, quantizer: GroupQuantizer, rank: int,
                          n_iter: int = 5, damp: float = 0.1, block_size: int = 128, return_best: bool = False):
    """GPTQ ↔ EoRA alternation: the activation-space analogue of LoftQ (a competitor of ProjQ).

    ``Ŵ₀ = GPTQ(W)``, ``L₀ = EoRA_r(W − Ŵ₀)``; then ``n_iter`` rounds of ``Ŵ_t = GPTQ(W − L_{t−1})``
    (GPTQ's full Hessian ``(2/N)XᵀX``) and ``L_t = EoRA_r(W − Ŵ_t)``, the rank-r correction that
    minimises ‖(W − Ŵ_t − L) Xᵀ‖_F. Both steps lower (GPTQ greedily) the same objective
    ‖(W − Ŵ − L)Xᵀ‖²_F whose minimum over L is ProjQ's ρ_r, so it is block-coordinate descent
    on ProjQ's own objective, with ``n_iter + 1`` GPTQ calls (ProjQ's ``max_iter + 1``).

    Parameters
    ----------
    W : Tensor (m, n)
    stats : ActivationStats
        Calibration activations.
    quantizer : GroupQuantizer
    rank : int
        Rank r of the correction (ProjQ's ``rank``).
    n_iter : int
        Alternation rounds after the first GPTQ call (the same T as ProjQ's ``max_iter``).
    damp, block_size : GPTQ's.
    return_best : bool
        Return the round with the lowest calibration objective ‖(W − Ŵ_t − L_t) Xᵀ‖²_F (round 0
        is GPTQ + EoRA, so it is never worse than that on the calibration tokens) instead of the
        last one.

    Returns
    -------
    W_hat : Tensor (m, n), A : Tensor (r, n), B : Tensor (m, r)
        ``W ≈ W_hat + B A``; ``A, B`` unscaled (as :func:`lordq_init` with ``lora_alpha=None``).

    Examples
    --------
    >>> from icml26.projq import synthetic_layer
    >>> W, X = synthetic_layer(32, 32, tokens=256, seed=0)
    >>> W_hat, A, B = gptq_eora_alternation(W, ActivationStats.from_tensor(X), GroupQuantizer(2, -1), 4, 2)
    >>> tuple(A.shape), tuple(B.shape)
    ((4, 32), (32, 4))
    """
    if not isinstance(quantizer, GroupQuantizer):
        raise TypeError(f"quantizer must be a GroupQuantizer, got {type(quantizer).__name__}")
    W = check_weight(W)
    m, n = W.shape
    quantizer.group_width(n)
    rank = check_rank(rank, m, n)
    check_int(n_iter, "n_iter", min_value=1)
    check_scalar_in(damp, "damp", low=0.0, high=1.0, high_inclusive=False)
    stats = _check_stats(stats, n)
    H = stats.hessian()
    S = stats.sqrt_gram() if return_best else None
    correction = torch.zeros_like(W)
    best, best_loss = None, math.inf
    for _ in range(n_iter + 1):
        W_hat = _gptq(W - correction, H, quantizer, damp, block_size, stats.name)
        A, B = _eora(W - W_hat, stats, rank)
        correction = (B @ A).to(torch.float32)
        if return_best:
            loss = float((((W - W_hat).to(torch.float64) - B @ A) @ S).pow(2).sum())
            if loss < best_loss:
                best, best_loss = (W_hat, A, B), loss
    W_hat, A, B = best if return_best else (W_hat, A, B)
    return W_hat, A.to(torch.float32), B.to(torch.float32)


def loftq_init(W: torch.Tensor, quantizer: GroupQuantizer, rank: int, n_iter: int = 5):
    """LoftQ (Li et al., 2024): alternate ``Q_t = Quant(W − A_{t−1}B_{t−1})``, ``AB = SVD_r(W − Q_t)``.

    Parameters
    ----------
    W : Tensor (m, n)
    quantizer : GroupQuantizer
        The same quantizer as every other method (apples to apples; PEFT's LoftQ uses NF4/NF2).
    rank : int
    n_iter : int
        Alternations T (PEFT's default is 1; the paper's baseline uses 5).

    Returns
    -------
    W_hat : Tensor (m, n), A : Tensor (r, n), B : Tensor (m, r)
        ``W ≈ W_hat + B A`` in weight space (no activations).
    """
    if not isinstance(quantizer, GroupQuantizer):
        raise TypeError(f"quantizer must be a GroupQuantizer, got {type(quantizer).__name__}")
    W = check_weight(W)
    m, n = W.shape
    rank = check_rank(rank, m, n)
    check_int(n_iter, "n_iter", min_value=1)
    correction = torch.zeros_like(W)
    for _ in range(n_iter):
        W_hat = quantizer.quantize(W - correction)[0]
        U, sigma, Vh = torch.linalg.svd(W - W_hat, full_matrices=False)   # float32, as PEFT's LoftQ
        U, Vh = svd_flip(U[:, :rank], Vh[:rank])
        half = sigma[:rank].sqrt()
        B, A = U * half, half[:, None] * Vh
        correction = (B @ A).to(torch.float32)
    return W_hat, A.to(torch.float32), B.to(torch.float32)
