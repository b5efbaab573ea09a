"""Synthetic ground truth for the capacity/accessibility metrics and the diagnostic pathway.

Reference: *Capacity without Access* (ICML 2026); the generators are ours (the paper's data
could not be read).

:func:`planted_states` — layer states with chosen spectra and a readout with a known right
singular basis. Generative process (``d`` dims, ``L`` layers, plateau ``P = ⌈0.4L⌉..⌊0.8L⌋``):

* a random orthonormal basis ``R``; the output-relevant subspace is ``Q* = R[:, :k]``;
* two "sink" coordinates (massive activations) that the readout ignores: ``W_eff``'s singular
  value there is 0.02 and the final norm's gain ``γ`` is 0.01;
* the effective readout ``W_eff = U diag(s) Rᵀ`` (``U`` random orthonormal columns, ``s`` = 8
  on ``Q*``, 1.5 → 0.5 on the other non-sink directions, ``Q*`` a random orientation inside the
  non-sink coordinates); ``γ`` is log-normal (σ = 0.3) except the sinks and ``k`` "small-gain"
  coordinates (``γ = 0.05``), and ``W_U = W_eff diag(1/γ)`` — so ``W_U`` alone has a different
  top subspace (the small-gain coordinates) than ``W_eff``;
* plateau layers: a broad 1/i spectrum in a random orientation outside ``Q*`` plus 2 % of their
  energy in ``Q*`` (capacity high, access below chance);
* the final pre-norm layer: 35 % of the energy on the sinks, 27 % spread evenly over ``Q*``,
  3 % isotropic elsewhere — a low effective rank before the norm; after the norm (what
  ``output_hidden_states[-1]`` holds) the sinks vanish and the effective rank doubles;
* transition layers interpolate to the final layer, early layers have steeper spectra.

:func:`planted_pathway_cache` — a :class:`~icml26.accessibility.pathway.PathwayCache` whose
next tokens depend on a binary hidden feature ``f_t`` that only layer ``m`` carries (along a
direction the base readout input lacks): a pathway from ``m`` must lower CE, one from ``L`` or
fed shuffled states cannot, beyond what the bias learns.

Examples
--------
>>> ps = planted_states(seed=0)
>>> tuple(ps.states[ps.n_layers].shape), ps.plateau
((4096, 64), [5, 6, 7, 8, 9])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from icml26.core.validation import check_int

from .pathway import PathwayCache, PathwaySplit

__all__ = ["PlantedStates", "planted_states", "planted_pathway_cache", "plateau_layers"]


def plateau_layers(n_layers: int) -> list:
    """The plateau ``P = ⌈0.4 L⌉ .. ⌊0.8 L⌋`` (12..24 for L = 30)."""
    check_int(n_layers, "n_layers", min_value=1)
    return list(range(math.ceil(0.4 * n_layers - 1e-9), math.floor(0.8 * n_layers + 1e-9) + 1))


@dataclass
class PlantedStates:
    """Planted layer states and readout (see the module docstring).

    Attributes
    ----------
    states : dict int -> Tensor (N, d) float64, pre-norm states of layers 0..L
    unembedding : Tensor (V, d) float64 ``W_U``
    gamma : Tensor (d,) float64, the final norm's gain
    q_true : Tensor (d, k), the planted output-relevant basis (top-k of ``W_eff``)
    plateau : list of int

    References
    ----------
    "Capacity without Access: Reinterpreting the Mid-Depth Spectral Plateau in LLMs", ICML 2026
    (authors not retrieved; see the package README). A planted positive control of our own (not
    from the paper).

    Examples
    --------
    >>> ps = planted_states(d=32, vocab=32, n_tokens=256, n_layers=6, k=4, seed=0)
    >>> ps.states[ps.n_layers].shape, ps.q_true.shape
    (torch.Size([256, 32]), torch.Size([32, 4]))
    """

    states: dict
    unembedding: torch.Tensor
    gamma: torch.Tensor
    q_true: torch.Tensor
    plateau: list
    n_layers: int
    k: int

    def post_norm_final(self) -> torch.Tensor:
        """``γ ⊙ h^L / rms(h^L)``: what ``output_hidden_states[-1]`` would hold."""
        h = self.states[self.n_layers]
        return self.gamma * h / h.pow(2).mean(-1, keepdim=True).sqrt()


def _orthonormal(rng, rows, cols):
    q, r = np.linalg.qr(rng.standard_normal((rows, cols)))
    return q * np.sign(np.diag(r))


def planted_states(d: int = 64, vocab: int = 256, n_tokens: int = 4096, n_layers: int = 12, k: int = 8,
                   seed: int = 0) -> PlantedStates:
    """Layer states with a planted capacity plateau and a planted readout subspace.

    Parameters
    ----------
    d, vocab : int
        Hidden size and vocabulary (``vocab >= d``).
    n_tokens : int
    n_layers : int
        ``L`` (>= 5).
    k : int
        Dimension of the planted output-relevant subspace (``k < d / 4``).
    seed : int

    Returns
    -------
    PlantedStates
    """
    check_int(d, "d", min_value=8)
    check_int(vocab, "vocab", min_value=d)
    check_int(n_tokens, "n_tokens", min_value=2)
    check_int(n_layers, "n_layers", min_value=5)
    check_int(k, "k", min_value=1, max_value=max(1, d // 4 - 1))
    check_int(seed, "seed", min_value=0)
    rng = np.random.default_rng(seed)
    n_sink = 2
    coords = rng.permutation(d)
    sink, small, other = coords[:n_sink], coords[n_sink:n_sink + k], coords[n_sink:]
    # basis: k output-relevant directions and d - k - 2 others inside the non-sink coordinates,
    # then the sink coordinates (read out with a tiny singular value)
    R_o = _orthonormal(rng, d - n_sink, d - n_sink)
    R = np.zeros((d, d))
    R[np.ix_(other, np.arange(d - n_sink))] = R_o
    R[sink, np.arange(d - n_sink, d)] = 1.0
    U = _orthonormal(rng, vocab, d)
    s = np.concatenate([8.0 - 0.1 * np.arange(k), np.linspace(1.5, 0.5, d - k - n_sink), np.full(n_sink, 0.02)])
    w_eff = (U * s) @ R.T
    gamma = np.exp(0.3 * rng.standard_normal(d))
    gamma[sink] = 0.01      # massive-activation coordinates: the final norm suppresses them
    gamma[small] = 0.05     # small-gain coordinates: W_U alone is large there
    w_u = w_eff / gamma
    q_true, q_rest = R[:, :k], R[:, k:d - n_sink]
    m_rest = d - k - n_sink

    def draw(top, rest, sink_var):
        rot = _orthonormal(rng, m_rest, m_rest)
        z_top = rng.standard_normal((n_tokens, k)) * np.sqrt(top)
        z_rest = rng.standard_normal((n_tokens, m_rest)) * np.sqrt(rest)
        h = z_top @ q_true.T + z_rest @ rot.T @ q_rest.T
        h[:, sink] += rng.standard_normal((n_tokens, n_sink)) * np.sqrt(sink_var)
        return h

    L = n_layers
    plateau = plateau_layers(L)
    broad = np.arange(1, m_rest + 1, dtype=float) ** -1.0
    broad /= broad.sum()
    top_final, rest_final, sink_final = np.full(k, 0.27 / k), np.full(m_rest, 0.03 / m_rest), 0.35
    states = {}
    for layer in range(L + 1):
        if layer == L:
            top, rest, sv = top_final, rest_final, sink_final
        elif layer > plateau[-1]:  # transition: part-way to the final collapse
            frac = (layer - plateau[-1]) / (L - plateau[-1])
            top = (1 - frac) * np.full(k, 0.02 / k) + frac * top_final
            rest = (1 - frac) * 0.98 * broad + frac * rest_final
            sv = frac * sink_final
        elif layer in plateau:
            top, rest, sv = np.full(k, 0.02 / k), 0.98 * broad, 0.0
        else:  # early layers: steeper spectra, ramping up to the plateau
            steep = np.arange(1, m_rest + 1, dtype=float) ** -(3.0 - 2.0 * layer / plateau[0])
            top, rest, sv = np.full(k, 0.02 / k), 0.98 * steep / steep.sum(), 0.0
        states[layer] = torch.from_numpy(draw(top, rest, sv) * 3.0)
    return PlantedStates(states, torch.from_numpy(w_u), torch.from_numpy(gamma), torch.from_numpy(q_true),
                         plateau, L, k)


def planted_pathway_cache(d: int = 32, vocab: int = 64, n_train: int = 4096, n_dev: int = 1024,
                          n_test: int = 1024, hidden_layer: int = 3, n_layers: int = 6, strength: float = 2.0,
                          seed: int = 0) -> PathwayCache:
    """A pathway cache with a planted hidden feature at ``hidden_layer``.

    ``h^L_t ~ N(0, I)`` gives the base logits ``W_U N(h^L_t)`` (``γ = 1``); a binary feature
    ``f_t = ±1`` is written into ``h^m_t`` (``m = hidden_layer``) along a fixed direction, and the
    next token is drawn from ``softmax(base_t + strength · f_t · W_U v)``. Only the pathway from
    ``m`` can express the ``f_t``-dependent shift; the cache holds sources ``m`` and ``L``.

    Returns
    -------
    PathwayCache with ``meta["hidden_layer"]``.
    """
    check_int(d, "d", min_value=2)
    check_int(vocab, "vocab", min_value=2)
    check_int(hidden_layer, "hidden_layer", min_value=0)
    check_int(n_layers, "n_layers", min_value=hidden_layer + 1)
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(vocab, d, generator=g) / d ** 0.5 * 3.0
    v = torch.randn(d, generator=g)
    v = v / v.norm() * d ** 0.5 * 0.3
    direction = torch.randn(d, generator=g)
    direction /= direction.norm()

    def split(n):
        h_final = torch.randn(n, d, generator=g)
        normed = h_final / h_final.pow(2).mean(-1, keepdim=True).sqrt()
        base = normed @ W.T
        f = torch.randint(0, 2, (n,), generator=g).float() * 2 - 1
        true = base + strength * f[:, None] * (W @ v)[None, :]
        labels = torch.multinomial(torch.softmax(true, dim=1), 1, generator=g).squeeze(1)
        h_mid = torch.randn(n, d, generator=g) + 3.0 * f[:, None] * direction
        src = {hidden_layer: h_mid / h_mid.pow(2).mean(-1, keepdim=True).sqrt(), n_layers: normed}
        return PathwaySplit(base.numpy(), labels.numpy().astype(np.int64), normed.numpy(), h_final.numpy(),
                            {m: s.numpy() for m, s in src.items()})

    return PathwayCache(split(n_train), split(n_dev), split(n_test), unembedding=W, gamma=None, norm_eps=0.0,
                        n_layers=n_layers, meta={"hidden_layer": hidden_layer, "norm": "RMSNorm",
                                                 "layers": [hidden_layer, n_layers]})
