"""Baselines: proto-value functions, random features, and a learned graph-drawing representation.

- Proto-value functions (Mahadevan & Maggioni, JMLR 2007): eigenvectors of the Laplacian of
  the *unweighted*, undirected state graph — policy-agnostic.
- Random features: the constant plus k − 1 random vectors, ρ-orthonormalized.
- Generalized graph-drawing objective (Wang et al. 2021; Wu et al. 2019 for the plain GDO),
  tabular, in torch, trained on sampled transitions:
  ``Σ_i c_i E_{(s,s')}[(f_i(s) − f_i(s'))²] + β Σ_ij (E_{s~ρ̂}[f_i(s) f_j(s)] − δ_ij)²`` with
  ``c_1 > … > c_k``. Written here (the reference repositories are TensorFlow/JAX research code).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from icml26.core.validation import check_choice, check_int, check_scalar_in, renamed_seed

from .laplacian import symmetric_eigenpairs
from .mdp import as_generator, check_transition_matrix

__all__ = ["proto_value_functions", "random_features", "rho_orthonormalize", "GraphDrawingFeatures",
           "unweighted_count_laplacian"]


def rho_orthonormalize(F: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Columns spanning the same space as F, orthonormal in ``⟨u, v⟩_ρ`` (QR of ``D^{1/2}F``)."""
    q, _ = np.linalg.qr(np.sqrt(rho)[:, None] * np.asarray(F, dtype=np.float64))
    return q / np.sqrt(rho)[:, None]


def proto_value_functions(P: Any, k: int, normalized: bool = False, method: str = "auto") -> np.ndarray:
    """Bottom-k eigenvectors of the unweighted undirected state-graph Laplacian (n × k).

    The graph joins i ≠ j when ``P_ij > 0`` or ``P_ji > 0``; ``normalized=True`` uses
    ``I − D^{-1/2}AD^{-1/2}`` instead of ``D − A``. ``method`` as in
    :func:`~icml26.spectral_rl.laplacian.symmetric_eigenpairs` (``"auto"``: sparse ``eigsh``
    on large graphs; it was always dense, 6.8× slower than eigsh at 30 × 30 and 112× at 60 × 60,
    #42).
    """
    M = check_transition_matrix(P)
    n = M.shape[0]
    k = check_int(k, "k", min_value=1, max_value=n)
    A = (M + M.T).tocoo()
    off = (A.row != A.col) & (A.data > 0)          # the edges i != j (no lil/setdiag: #42)
    A = sp.csr_matrix((np.ones(int(off.sum())), (A.row[off], A.col[off])), shape=(n, n))
    deg = np.asarray(A.sum(axis=1)).ravel()
    if normalized:
        s = 1.0 / np.sqrt(np.maximum(deg, 1e-300))
        L = sp.identity(n) - sp.diags(s) @ A @ sp.diags(s)
    else:
        L = sp.diags(deg) - A
    _, vecs = symmetric_eigenpairs(L, k, method)
    return vecs


def random_features(n_states: int, k: int, rho: np.ndarray, rng: Any = None) -> np.ndarray:
    """The constant vector and k − 1 Gaussian vectors, ρ-orthonormalized (n × k)."""
    n_states = check_int(n_states, "n_states", min_value=1)
    k = check_int(k, "k", min_value=1, max_value=n_states)
    F = np.column_stack([np.ones(n_states), as_generator(rng).standard_normal((n_states, k - 1))])
    return rho_orthonormalize(F, np.asarray(rho, dtype=np.float64))


def unweighted_count_laplacian(states: Any, next_states: Any, n_states: int) -> np.ndarray:
    """The count estimator without its weights: ``I − Â^{-1/2}AÂ^{-1/2}`` of the graph of
    observed transitions (an edge i ≠ j when i → j or j → i was seen; dense, symmetric).

    The negative control of the estimation claims: the same trajectories, but the edges are
    not weighted by how often they are traversed, so it converges to the normalized Laplacian
    of the unweighted state graph (the proto-value-function operator), not to the ρ-weighted
    ``N``. Unvisited or edgeless states are isolated (``N̂_ii = 1``).
    """
    from .estimation import count_weights

    W, _ = count_weights(states, next_states, n_states, unvisited="isolate")
    A = (W.toarray() > 0).astype(np.float64)
    np.fill_diagonal(A, 0.0)
    deg = A.sum(axis=1)
    scale = np.zeros_like(deg)
    scale[deg > 0] = 1.0 / np.sqrt(deg[deg > 0])
    return np.eye(n_states) - scale[:, None] * A * scale[None, :]


class GraphDrawingFeatures:
    """Tabular generalized graph-drawing features learned with Adam from transitions.

    Parameters
    ----------
    n_components : int
        k features.
    beta : float
        Weight of the orthonormality penalty (5 as in the reference setting).
    lr : float
        Adam learning rate.
    n_steps : int
        Optimisation steps (mini-batches of ``batch_size`` transitions).
    batch_size : int
    coefficients : {"decreasing", "equal"}
        ``c_i = k − i + 1`` (generalized GDO, recovers individual eigenvectors) or all 1
        (Wu et al.'s GDO, recovers the subspace only).
    random_state : int, default 0
        Seed of the local ``torch.Generator`` that draws the initial features and the batches
        (the global torch generator is left alone).
    device : str or torch.device, default "cpu"
        Where the features are optimised (``"cuda"``, ``"cuda:N"``, ``"auto"``). The initial
        features and the transition batches are drawn on the CPU (the same on every device);
        ``features_`` is numpy.

    Attributes
    ----------
    features_ : (n_states, k) array
        The learned f_i(s).
    loss_curve_ : list of float
        Objective every 100 steps.

    References
    ----------
    Wang, Zhou, Zhang, Shao, Hooi & Feng, "Towards Better Laplacian Representation in Reinforcement
    Learning with Generalized Graph Drawing", ICML 2021; Wu, Tucker & Nachum, "The Laplacian in RL:
    Learning Representations with Efficient Approximations", ICLR 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from icml26.spectral_rl import GridWorld
    >>> world = GridWorld.open_room(4, 4)
    >>> P = world.transition("uniform").toarray()
    >>> rng = np.random.default_rng(0)
    >>> s = rng.integers(world.n_states, size=2000)
    >>> s_next = np.array([rng.choice(world.n_states, p=P[i]) for i in s])
    >>> gdo = GraphDrawingFeatures(n_components=3, n_steps=20, batch_size=64, random_state=0)
    >>> gdo.fit(s, s_next, world.n_states).features_.shape
    (16, 3)
    """

    def __init__(self, n_components: int = 4, beta: float = 5.0, lr: float = 1e-3,
                 n_steps: int = 5000, batch_size: int = 1024, coefficients: str = "decreasing",
                 random_state: int = 0, device="cpu", seed: int | None = None):
        self.n_components = n_components
        self.beta = beta
        self.lr = lr
        self.n_steps = n_steps
        self.batch_size = batch_size
        self.coefficients = coefficients
        self.random_state = random_state
        self.device = device
        self.seed = seed

    def fit(self, states: Any, next_states: Any, n_states: int) -> "GraphDrawingFeatures":
        import torch

        from icml26.core.device import resolve_device, to_numpy

        from .estimation import _check_transitions

        s, s2 = _check_transitions(states, next_states, n_states)
        k = check_int(self.n_components, "n_components", min_value=1, max_value=n_states)
        check_scalar_in(self.beta, "beta", low=0.0)
        check_scalar_in(self.lr, "lr", low=0.0, low_inclusive=False)
        n_steps = check_int(self.n_steps, "n_steps", min_value=1)
        batch = check_int(self.batch_size, "batch_size", min_value=1)
        check_choice(self.coefficients, "coefficients", ("decreasing", "equal"))
        device = resolve_device(self.device)
        seed = check_int(renamed_seed(self.random_state, self.seed, "GraphDrawingFeatures",
                                      stacklevel=2), "random_state", min_value=0)
        gen = torch.Generator().manual_seed(seed)
        c = torch.arange(k, 0, -1, dtype=torch.float64) if self.coefficients == "decreasing" \
            else torch.ones(k, dtype=torch.float64)
        c = c.to(device)
        F = torch.randn(n_states, k, generator=gen, dtype=torch.float64).to(device).requires_grad_(True)
        opt = torch.optim.Adam([F], lr=self.lr)
        s_t, s2_t = torch.from_numpy(s).to(device), torch.from_numpy(s2).to(device)
        eye = torch.eye(k, dtype=torch.float64, device=device)
        self.loss_curve_ = []
        for step in range(n_steps):
            idx = torch.randint(0, s_t.numel(), (batch,), generator=gen).to(device)
            fa, fb = F[s_t[idx]], F[s2_t[idx]]
            smooth = (c * (fa - fb).pow(2).mean(dim=0)).sum()
            # Orthonormality under the empirical state distribution (the batch's s).
            gram = fa.T @ fa / batch
            loss = smooth + self.beta * (gram - eye).pow(2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 100 == 0:
                self.loss_curve_.append(float(loss.detach()))
        self.features_ = to_numpy(F).copy()
        return self

    def orthonormal_basis(self, rho: np.ndarray) -> np.ndarray:
        """Euclidean-orthonormal ``Φ̂`` spanning ``D^{1/2}F`` (to compare with the true Φ)."""
        q, _ = scipy.linalg.qr(np.sqrt(rho)[:, None] * self.features_, mode="economic")
        return q
