"""Capacity and accessibility metrics of hidden states, from streaming second moments (float64).

Reference: *Capacity without Access: Reinterpreting the Mid-Depth Spectral Plateau in LLMs*
(ICML 2026). The paper's exact formulas could not be read; every definition here is a
**Resolution (not from the paper)** reconstructed from the abstract and prior work:
normalised spectral (matrix) entropy as in Skean et al. 2025 ("Layer by Layer"), effective
rank as in Roy & Vetterli 2007, and the output-relevant subspace as the top right singular
vectors of the effective readout ``W_eff = W_U diag(gamma)`` (unembedding times the final
norm's gain).

* :class:`LayerStats` accumulates the token count, mean and second moment of ``(N, d)``
  states in float64 without keeping the states;
* :func:`capacity_metrics` — normalised spectral entropy, effective rank, participation
  ratio, stable rank and the 90 % span ``k90`` of a covariance;
* :func:`readout_basis_from_weights` / :func:`accessibility_metrics` — enrichment of the
  variance in the top-``k`` readout subspace (1 = chance) and the readout-weighted energy.

Examples
--------
>>> import torch
>>> stats = LayerStats(4)
>>> stats.update(torch.randn(2, 500, 4, generator=torch.Generator().manual_seed(0)))
LayerStats(d_model=4, n_tokens=1000)
>>> round(capacity_metrics(stats.cov())["entropy_norm"], 2)
1.0
"""

from __future__ import annotations

import math
import warnings
from typing import Sequence

import numpy as np
import torch

from icml26.core.device import to_numpy
from icml26.core.validation import check_finite_array, check_int

__all__ = ["LayerStats", "spectrum", "capacity_metrics", "participation_ratio", "readout_basis_from_weights",
           "accessibility_metrics", "rms_normalize", "ACCESS_KS"]

ACCESS_KS = (8, 32, 64)


def rms_normalize(x: torch.Tensor, eps: float = 0.0) -> torch.Tensor:
    """``x / rms(x)`` over the last axis (parameter-free RMS normalisation ``n(x)``).

    Parameters
    ----------
    x : Tensor of shape (..., d)
    eps : float
        Added to the mean square before the square root.

    Returns
    -------
    Tensor of the same shape; a zero vector maps to zeros (never NaN).
    """
    if not torch.is_tensor(x) or not x.is_floating_point():
        raise TypeError(f"x must be a real floating tensor, got {getattr(x, 'dtype', type(x).__name__)}")
    ms = x.pow(2).mean(dim=-1, keepdim=True)
    rms = torch.sqrt(ms + eps)
    return torch.where(rms > 0, x / rms.clamp_min(torch.finfo(x.dtype).tiny), torch.zeros_like(x))


class LayerStats:
    """Streaming token count, mean and second moment of hidden states (float64).

    Accumulates around a fixed shift (the first batch's mean) so the centred covariance of
    states with a large mean (massive activations) keeps its precision.
The moments live on the device of the first batch (later batches are moved there), so
states of a model on a GPU are accumulated on the GPU.

    Parameters
    ----------
    d_model : int
        Width of the states.

    Attributes
    ----------
    n_tokens : int
        Tokens accumulated so far.

    References
    ----------
    "Capacity without Access: Reinterpreting the Mid-Depth Spectral Plateau in LLMs", ICML 2026
    (authors not retrieved; see the package README). The per-layer statistics behind its spectral
    profile.

    Examples
    --------
    >>> x = torch.randn(300, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    >>> s = LayerStats(3).update(x[:100]).update(x[100:]); s.n_tokens
    300
    >>> bool(torch.allclose(s.cov(), torch.cov(x.T, correction=0)))
    True
    """

    def __init__(self, d_model: int):
        self.d_model = check_int(d_model, "d_model", min_value=1)
        self.n_tokens = 0
        self._shift: torch.Tensor | None = None
        self._sum = torch.zeros(self.d_model, dtype=torch.float64)
        self._outer = torch.zeros(self.d_model, self.d_model, dtype=torch.float64)

    def update(self, hidden: torch.Tensor, mask: torch.Tensor | None = None) -> "LayerStats":
        """Add the tokens of ``hidden`` (``(..., d)``); ``mask`` (``hidden.shape[:-1]``, bool)
        keeps only its True positions (padding, skipped sink positions)."""
        if not isinstance(hidden, torch.Tensor):
            raise TypeError(f"hidden must be a torch.Tensor, got {type(hidden).__name__}")
        if hidden.ndim < 1 or hidden.shape[-1] != self.d_model:
            raise ValueError(f"hidden must have last dimension d_model={self.d_model}, got shape "
                             f"{tuple(hidden.shape)}")
        rows = hidden.detach().reshape(-1, self.d_model)
        if mask is not None:
            mask = torch.as_tensor(mask, dtype=torch.bool)
            if tuple(mask.shape) != tuple(hidden.shape[:-1]):
                raise ValueError(f"mask must have shape {tuple(hidden.shape[:-1])}, got {tuple(mask.shape)}")
            rows = rows[mask.reshape(-1)]
        if rows.shape[0] == 0:
            return self
        if self.n_tokens == 0 and self._sum.device != rows.device:   # accumulate where the data is
            self._sum, self._outer = self._sum.to(rows.device), self._outer.to(rows.device)
        rows = rows.to(device=self._sum.device, dtype=torch.float64)
        if not bool(torch.isfinite(rows).all()):
            raise FloatingPointError("hidden contains NaN or infinity (overflow in the forward pass? run "
                                     "the model in float32)")
        if self._shift is None:
            self._shift = rows.mean(dim=0)
        centred = rows - self._shift
        self._sum += centred.sum(dim=0)
        self._outer += centred.T @ centred
        self.n_tokens += rows.shape[0]
        return self

    def merge(self, other: "LayerStats") -> "LayerStats":
        """Add another accumulator's tokens (same ``d_model``)."""
        if not isinstance(other, LayerStats) or other.d_model != self.d_model:
            raise ValueError("other must be a LayerStats of the same d_model")
        if other.n_tokens == 0:
            return self
        if self.n_tokens == 0 and self._sum.device != other._sum.device:
            self._sum, self._outer = self._sum.to(other._sum.device), self._outer.to(other._sum.device)
        device = self._sum.device
        other_shift, other_sum = other._shift.to(device), other._sum.to(device)
        if self._shift is None:
            self._shift = other_shift.clone()
        delta = other_shift - self._shift  # re-express other's sums around self's shift
        n = other.n_tokens
        self._outer += (other._outer.to(device) + torch.outer(other_sum, delta)
                        + torch.outer(delta, other_sum) + n * torch.outer(delta, delta))
        self._sum += other_sum + n * delta
        self.n_tokens += n
        return self

    def copy(self) -> "LayerStats":
        out = LayerStats(self.d_model)
        out.n_tokens = self.n_tokens
        out._shift = None if self._shift is None else self._shift.clone()
        out._sum, out._outer = self._sum.clone(), self._outer.clone()
        return out

    def mean(self) -> torch.Tensor:
        """Mean state (float64, ``(d,)``)."""
        self._require_tokens()
        return self._shift + self._sum / self.n_tokens

    def cov(self, centered: bool = True) -> torch.Tensor:
        """Covariance ``(1/N) Σ (h − μ)(h − μ)ᵀ`` or, with ``centered=False``, the raw second
        moment ``(1/N) Σ h hᵀ`` (float64, ``(d, d)``, symmetric)."""
        self._require_tokens()
        n = self.n_tokens
        m = self._sum / n
        cov = self._outer / n - torch.outer(m, m)
        if not centered:
            mu = self._shift + m
            cov = cov + torch.outer(mu, mu)
        return 0.5 * (cov + cov.T)

    def state_dict(self) -> dict:
        """Plain tensors (for caching with ``torch.save``)."""
        return {"d_model": self.d_model, "n_tokens": self.n_tokens, "shift": self._shift,
                "sum": self._sum, "outer": self._outer}

    @classmethod
    def from_state_dict(cls, state: dict) -> "LayerStats":
        out = cls(int(state["d_model"]))
        out.n_tokens, out._shift = int(state["n_tokens"]), state["shift"]
        out._sum, out._outer = state["sum"], state["outer"]
        return out

    def _require_tokens(self) -> None:
        if self.n_tokens == 0:
            raise ValueError("LayerStats holds no tokens; call update() first")

    def __repr__(self) -> str:
        return f"LayerStats(d_model={self.d_model}, n_tokens={self.n_tokens})"


def _check_cov(cov) -> torch.Tensor:
    cov = torch.as_tensor(cov)
    if cov.is_complex() or cov.dtype == torch.bool:
        raise TypeError(f"cov must be a real matrix, got dtype {cov.dtype}")
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1] or cov.shape[0] == 0:
        raise ValueError(f"cov must be a square (d, d) matrix, got shape {tuple(cov.shape)}")
    cov = cov.to(torch.float64)
    if not bool(torch.isfinite(cov).all()):
        raise ValueError("cov contains NaN or infinity; expected finite values")
    return cov


def spectrum(cov) -> np.ndarray:
    """Eigenvalues of a symmetric PSD matrix, descending, float64, tiny negatives clamped to 0."""
    cov = _check_cov(cov)
    lam = torch.linalg.eigvalsh(0.5 * (cov + cov.T)).flip(0).clamp_min(0.0)
    return to_numpy(lam)


def participation_ratio(eigenvalues) -> float:
    """``(Σ λ)² / Σ λ²`` of a non-negative spectrum (NaN for an all-zero spectrum).

    The same quantity as ``icml26.tcbench.geometry.participation_ratio`` computes from raw
    feature rows; here from the covariance eigenvalues, without the 1e-12 guard.
    """
    lam = check_finite_array(eigenvalues, "eigenvalues", dtype=np.float64, ndim=1)
    sq = float(np.sum(lam ** 2))
    return float(lam.sum() ** 2 / sq) if sq > 0 else float("nan")


def capacity_metrics(cov) -> dict:
    """Spectral-capacity metrics of a covariance (or raw second moment) ``C``.

    With ``λ`` the eigenvalues (float64 ``eigvalsh``, negatives clamped to 0) and
    ``p = λ / Σ λ``:

    * ``entropy_norm`` ``Ĥ = −Σ p log p / log d`` in [0, 1];
    * ``erank`` ``exp(−Σ p log p)`` (Roy & Vetterli 2007);
    * ``participation_ratio`` ``(Σλ)² / Σλ²``; ``stable_rank`` ``Σλ / λ_1``;
    * ``k90``: the smallest ``k`` with ``Σ_{i≤k} p_i ≥ 0.9``.

    Parameters
    ----------
    cov : (d, d) symmetric matrix (Tensor or array)

    Returns
    -------
    dict of float. An all-zero matrix (a constant layer) has undefined metrics: every value
    is NaN and a ``RuntimeWarning`` is raised.

    Examples
    --------
    >>> m = capacity_metrics(torch.diag(torch.tensor([1.0, 1.0, 0.0, 0.0])))
    >>> round(m["erank"], 6), m["k90"]
    (2.0, 2)
    """
    lam = spectrum(cov)
    d = lam.size
    total = float(lam.sum())
    if total <= 0:
        warnings.warn("all-zero covariance (constant states): capacity metrics are undefined (NaN)",
                      RuntimeWarning, stacklevel=2)
        nan = float("nan")
        return {"entropy_norm": nan, "erank": nan, "participation_ratio": nan, "stable_rank": nan, "k90": nan}
    p = lam / total
    nz = p[p > 0]
    entropy = float(-(nz * np.log(nz)).sum())
    k90 = int(np.searchsorted(np.cumsum(p), 0.9 - 1e-12) + 1)
    return {"entropy_norm": entropy / math.log(d) if d > 1 else 0.0,
            "erank": math.exp(entropy),
            "participation_ratio": participation_ratio(lam),
            "stable_rank": total / float(lam[0]),
            "k90": min(k90, d)}


def readout_basis_from_weights(unembedding, gamma=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Right singular basis of the effective readout ``W_eff = W_U diag(gamma)``.

    Computed from the ``d × d`` Gram matrix ``W_effᵀ W_eff`` with ``eigh`` in float64 (never
    an SVD of the ``V × d`` matrix, never a ``V × V`` product).

    Parameters
    ----------
    unembedding : (V, d) matrix ``W_U`` (the ``lm_head`` weight, rows = tokens)
    gamma : (d,) vector, optional
        The final norm's gain (``None``: all ones, i.e. the readout of post-norm states).

    Returns
    -------
    Q : Tensor (d, d), float64
        Columns are right singular vectors, by decreasing singular value.
    sv : Tensor (d,), float64
        The singular values, descending.

    Examples
    --------
    >>> Q, sv = readout_basis_from_weights(torch.diag(torch.tensor([1.0, 3.0, 2.0])))
    >>> sv.tolist(), Q[:, 0].abs().tolist()
    ([3.0, 2.0, 1.0], [0.0, 1.0, 0.0])
    """
    W = torch.as_tensor(unembedding)
    if W.ndim != 2 or min(W.shape) == 0:
        raise ValueError(f"unembedding must be a (vocab, d_model) matrix, got shape {tuple(W.shape)}")
    W = W.detach().to(torch.float64)
    if gamma is not None:
        g = torch.as_tensor(gamma).detach().to(torch.float64)
        if g.shape != (W.shape[1],):
            raise ValueError(f"gamma must have shape ({W.shape[1]},) to match the unembedding's "
                             f"d_model, got {tuple(g.shape)}")
        W = W * g
    if not bool(torch.isfinite(W).all()):
        raise ValueError("unembedding (times gamma) contains NaN or infinity")
    gram = W.T @ W
    lam, vecs = torch.linalg.eigh(0.5 * (gram + gram.T))
    order = torch.argsort(lam, descending=True)
    return vecs[:, order], lam[order].clamp_min(0.0).sqrt()


def accessibility_metrics(cov, Q, sv, ks: Sequence[int] = ACCESS_KS) -> dict:
    """How much of a layer's variance lies in the output-relevant subspace.

    * ``access_k`` ``A_k = tr(Q_kᵀ C Q_k) / tr C`` (chance ``k/d``) and ``enrichment_k``
      ``Â_k = A_k d / k`` (1 = chance) for each ``k``;
    * ``readout_energy`` ``R = d tr(C G) / (tr C · tr G)`` with ``G = W_effᵀ W_eff = Q diag(sv²) Qᵀ``:
      the readout energy ``E‖W_eff h̃‖²`` relative to isotropic states of equal energy (1 = chance).

    Parameters
    ----------
    cov : (d, d) covariance of the states
    Q, sv : from :func:`readout_basis_from_weights` (or :func:`~icml26.accessibility.readout_basis`)
    ks : sequence of int, each in [1, d]

    Returns
    -------
    dict of float (NaN with a ``RuntimeWarning`` for an all-zero covariance)

    Examples
    --------
    >>> Q, sv = torch.eye(4, dtype=torch.float64), torch.tensor([2.0, 1, 1, 1], dtype=torch.float64)
    >>> accessibility_metrics(torch.diag(torch.tensor([1.0, 0, 0, 0])), Q, sv, ks=(1,))["enrichment_1"]
    4.0
    """
    cov = _check_cov(cov)
    d = cov.shape[0]
    Q = torch.as_tensor(Q).to(device=cov.device, dtype=torch.float64)
    sv = torch.as_tensor(sv).to(device=cov.device, dtype=torch.float64)
    if Q.shape != (d, d):
        raise ValueError(f"Q must be ({d}, {d}) to match cov, got {tuple(Q.shape)}")
    if sv.shape != (d,):
        raise ValueError(f"sv must have shape ({d},), got {tuple(sv.shape)}")
    ks = [check_int(k, "k", min_value=1) for k in ks]
    for k in ks:
        if k > d:
            raise ValueError(f"k={k} exceeds the hidden size d={d}")
    total = float(torch.trace(cov))
    out = {}
    if total <= 0:
        warnings.warn("all-zero covariance: accessibility metrics are undefined (NaN)", RuntimeWarning,
                      stacklevel=2)
        for k in ks:
            out[f"access_{k}"] = out[f"enrichment_{k}"] = float("nan")
        out["readout_energy"] = float("nan")
        return out
    diag = torch.einsum("ik,ij,jk->k", Q, cov, Q)  # q_kᵀ C q_k for every basis vector
    for k in ks:
        a = float(diag[:k].sum()) / total
        out[f"access_{k}"] = a
        out[f"enrichment_{k}"] = a * d / k
    sv2 = sv ** 2
    out["readout_energy"] = float(d * (diag * sv2).sum() / (total * sv2.sum()))
    return out
