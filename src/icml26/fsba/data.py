"""Problems with known answers: a bilevel and a minimax problem with strict saddles, and data
hyper-cleaning on scikit-learn's digits.

*Resolution (not from the paper):* the paper's synthetic problems could not be read. These are
block-symmetric constructions whose hyper-objective is known in closed form, so first-order
methods started *on* the saddle's stable plane ``x₋ = 0`` provably stay there while
second-order methods leave it; the default start is a generic point 1e-6 off that plane.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26.core.validation import check_int, check_scalar_in

from .problem import BilevelProblem, MinimaxProblem

__all__ = ["make_saddle_bilevel", "make_saddle_minimax", "hyper_cleaning_digits", "HyperCleaning",
           "RHO_PHI", "PLANE_OFFSET"]

#: Scale of the start's offset from the saddle's stable plane: ``x₋ = PLANE_OFFSET·N(0, I)``.
#: On the plane itself (offset 0) every gradient method stays at the saddle by symmetry, so a
#: comparison started there holds by construction; a generic start next to the saddle is the
#: fair test (*Resolution*, not from the paper).
PLANE_OFFSET = 1e-6
#: Hessian-Lipschitz constant used for the SOSP test on the synthetic problems (ψ''' = 6t, |t| ≤ 1).
RHO_PHI = 6.0


def _psi(t):
    return t ** 4 / 4 - t ** 2 / 2


def _dpsi(t):
    return t ** 3 - t


def _ddpsi(t):
    return 3 * t ** 2 - 1


def _spd_block(rng, k):
    A = rng.standard_normal((k, k))
    return A @ A.T / k + np.eye(k)


def _shifted_block(rng, k):
    return rng.normal(0.0, 1.0 / np.sqrt(k), size=(k, k)) + 2.0 * np.eye(k)


def _blockdiag(a, b):
    out = np.zeros((a.shape[0] + b.shape[0], a.shape[1] + b.shape[1]))
    out[:a.shape[0], :a.shape[1]] = a
    out[a.shape[0]:, a.shape[1]:] = b
    return out


def _start(rng_seed, d: int, n_minus: int, plane_offset: float) -> np.ndarray:
    """``x₀ = (x₋, x₊)`` with ``x₊ = 1`` and ``x₋ = plane_offset·N(0, I)`` (its own stream)."""
    offset = check_scalar_in(plane_offset, "plane_offset", low=0.0)
    x_minus = offset * np.random.default_rng(rng_seed).standard_normal(n_minus)
    return np.concatenate([x_minus, np.ones(d - n_minus)])


def make_saddle_bilevel(d: int = 20, seed: int = 0, tau: float = 1.0,
                        plane_offset: float = PLANE_OFFSET):
    """Bilevel problem with ``φ(x) = Σ_{i≤n₋} ψ(x_i) + ½‖x₊‖² + bᵀKx``, ``ψ(t) = t⁴/4 − t²/2``.

    ``g(x, y) = ½yᵀQy − yᵀBx`` (so ``y* = Kx``, ``K = Q^{-1}B``) and, with ``R = B^{-1}Q`` and
    ``u = Ry``, ``f(x, y) = Σ_{i≤n₋} ψ(u_i) + ½Σ_{i>n₋} u_i² + ½τ‖x − u‖² + bᵀy``. Q and B are
    block-diagonal over the n₋ = d/4 "negative" coordinates and the rest, b = (0, b₊). Minimizers:
    ``x₋ ∈ {±1}^{n₋}``, ``x₊ = −(Kᵀb)₊``; the plane ``x₋ = 0`` holds a strict saddle with
    ``λ_min(∇²φ) = −1``.

    Returns
    -------
    problem : BilevelProblem
        With torch ``f``/``g`` *and* analytic numpy derivatives (used), and ``exact`` ground truth
        (``phi, grad, hess, phi_star, rho_phi, n_minus``).
    x0 : array
        The start next to the saddle: ``x₊ = 1`` and ``x₋ = plane_offset·N(0, I)``
        (``plane_offset=0`` starts exactly on the stable plane ``x₋ = 0``, which every gradient
        method keeps invariant).
    """
    d = check_int(d, "d", min_value=4)
    tau = check_scalar_in(tau, "tau", low=0.0, low_inclusive=False)
    rng = np.random.default_rng([seed, 19])
    n_minus = d // 4
    sizes = (n_minus, d - n_minus)
    Q = _blockdiag(*(_spd_block(rng, k) for k in sizes))
    B = _blockdiag(*(_shifted_block(rng, k) for k in sizes))
    b = np.concatenate([np.zeros(n_minus), rng.standard_normal(d - n_minus)])
    K = np.linalg.solve(Q, B)
    R = np.linalg.solve(B, Q)
    Ktb = K.T @ b
    x_star_plus = -Ktb[n_minus:]
    phi_star = -n_minus / 4 - 0.5 * float(Ktb[n_minus:] @ Ktb[n_minus:])
    neg = np.arange(d) < n_minus

    def f_value(x, y):
        u = R @ y
        return float(np.sum(_psi(u[neg])) + 0.5 * np.sum(u[~neg] ** 2)
                     + 0.5 * tau * np.sum((x - u) ** 2) + b @ y)

    def f_grad(x, y):
        u = R @ y
        du = np.where(neg, _dpsi(u), u) - tau * (x - u)
        return tau * (x - u), R.T @ du + b

    def f_hess(x, y):
        u = R @ y
        curv = np.where(neg, _ddpsi(u), 1.0) + tau
        return tau * np.eye(d), -tau * R, R.T @ (curv[:, None] * R)

    def g_value(x, y):
        return float(0.5 * y @ Q @ y - y @ B @ x)

    def g_grad(x, y):
        return -B.T @ y, Q @ y - B @ x

    def g_hess(x, y):
        return np.zeros((d, d)), -B.T, Q

    def torch_f(x, y):
        import torch

        Rt, bt = torch.as_tensor(R), torch.as_tensor(b)
        u = Rt @ y
        negt = torch.as_tensor(neg)
        return (torch.where(negt, u ** 4 / 4 - u ** 2 / 2, 0.5 * u ** 2).sum()
                + 0.5 * tau * ((x - u) ** 2).sum() + bt @ y)

    def torch_g(x, y):
        import torch

        Qt, Bt = torch.as_tensor(Q), torch.as_tensor(B)
        return 0.5 * y @ Qt @ y - y @ Bt @ x

    def phi(x):
        return float(np.sum(_psi(x[neg])) + 0.5 * np.sum(x[~neg] ** 2) + Ktb @ x)

    def phi_grad(x):
        return np.where(neg, _dpsi(x), x) + Ktb

    def phi_hess(x):
        return np.diag(np.where(neg, _ddpsi(x), 1.0))

    derivatives = {"f": {"value": f_value, "grad": f_grad, "hess": f_hess},
                   "g": {"value": g_value, "grad": g_grad, "hess": g_hess}}
    exact = {"phi": phi, "grad": phi_grad, "hess": phi_hess, "phi_star": phi_star,
             "rho_phi": RHO_PHI, "n_minus": n_minus, "x_star_plus": x_star_plus,
             "torch_f": torch_f, "torch_g": torch_g}
    problem = BilevelProblem(torch_f, torch_g, d, d, derivatives=derivatives, exact=exact)
    return problem, _start([seed, 23], d, n_minus, plane_offset)


def make_saddle_minimax(d: int = 20, seed: int = 0, mu: float = 1.0,
                        plane_offset: float = PLANE_OFFSET):
    """``min_x max_y f`` with ``Φ(x) = Σ_{i≤n₋} ψ(x_i) + ½‖x₊‖² + ‖C₊x₊ − c₊‖²/(2μ) + const``.

    ``f(x, y) = Σ_{i≤n₋} x_i⁴/4 − ½x₋ᵀ(I + C₋ᵀC₋/μ)x₋ + ½‖x₊‖² + yᵀ(Cx − c) − (μ/2)‖y‖²`` with
    C block-diagonal (blocks ``N(0, 1/k) + 2I``, *Resolution*: the block law is ours) and
    c = (0, c₊); ``y* = (Cx − c)/μ``. Same saddle plane ``x₋ = 0`` as the bilevel problem.

    Returns ``(problem, x0)`` as :func:`make_saddle_bilevel` (same ``plane_offset`` rule).
    """
    d = check_int(d, "d", min_value=4)
    mu = check_scalar_in(mu, "mu", low=0.0, low_inclusive=False)
    rng = np.random.default_rng([seed, 25])
    n_minus = d // 4
    sizes = (n_minus, d - n_minus)
    blocks = [_shifted_block(rng, k) for k in sizes]
    C = _blockdiag(*blocks)
    c = np.concatenate([np.zeros(n_minus), rng.standard_normal(d - n_minus)])
    neg = np.arange(d) < n_minus
    Cm = blocks[0]
    Am = np.eye(n_minus) + Cm.T @ Cm / mu        # the x₋ quadratic that C₋ cancels in Φ
    Cp, cp = blocks[1], c[n_minus:]
    A_plus = np.eye(d - n_minus) + Cp.T @ Cp / mu
    x_star_plus = np.linalg.solve(A_plus, Cp.T @ cp / mu)

    def f_value(x, y):
        xm = x[neg]
        return float(np.sum(xm ** 4) / 4 - 0.5 * xm @ Am @ xm + 0.5 * np.sum(x[~neg] ** 2)
                     + y @ (C @ x - c) - 0.5 * mu * y @ y)

    def f_grad(x, y):
        gx = np.zeros(d)
        xm = x[neg]
        gx[neg] = xm ** 3 - Am @ xm
        gx[~neg] = x[~neg]
        return gx + C.T @ y, C @ x - c - mu * y

    def f_hess(x, y):
        Hxx = np.zeros((d, d))
        Hxx[np.ix_(neg, neg)] = np.diag(3 * x[neg] ** 2) - Am
        Hxx[np.ix_(~neg, ~neg)] = np.eye(d - n_minus)
        return Hxx, C.T, -mu * np.eye(d)

    def phi(x):
        xp = x[~neg]
        return float(np.sum(_psi(x[neg])) + 0.5 * xp @ xp + np.sum((Cp @ xp - cp) ** 2) / (2 * mu))

    def phi_grad(x):
        out = np.zeros(d)
        out[neg] = _dpsi(x[neg])
        out[~neg] = A_plus @ x[~neg] - Cp.T @ cp / mu
        return out

    def phi_hess(x):
        H = np.zeros((d, d))
        H[np.ix_(neg, neg)] = np.diag(_ddpsi(x[neg]))
        H[np.ix_(~neg, ~neg)] = A_plus
        return H

    x_star = np.concatenate([np.ones(n_minus), x_star_plus])
    exact = {"phi": phi, "grad": phi_grad, "hess": phi_hess, "phi_star": phi(x_star),
             "rho_phi": RHO_PHI, "n_minus": n_minus}
    problem = MinimaxProblem(None, d, d, derivatives={"f": {"value": f_value, "grad": f_grad,
                                                            "hess": f_hess}}, exact=exact)
    return problem, _start([seed, 29], d, n_minus, plane_offset)


@dataclass
class HyperCleaning:
    """The digits hyper-cleaning task: the problem, its data and the evaluation.

    References
    ----------
    Franceschi, Donini, Frasconi & Pontil, "Forward and Reverse Gradient-Based Hyperparameter
    Optimization", ICML 2017 (data hyper-cleaning). Yang, Liu, Chen & Lui, "Second-Order Bilevel
    Optimization with Accelerated Convergence Rates", ICML 2026 (arXiv:2605.06431).

    Examples
    --------
    >>> from icml26.fsba import hyper_cleaning_digits
    >>> task = hyper_cleaning_digits(seed=0, n_train=50, n_val=50, pooling=4)
    >>> task.n_classes, task.train[0].shape, int(task.corrupted.sum()) > 0
    (10, (50, 5), True)
    """

    problem: BilevelProblem
    train: tuple          # (A, noisy labels, clean labels)
    val: tuple
    test: tuple
    corrupted: np.ndarray  # bool mask over training samples
    n_classes: int
    reg: float

    def weights_matrix(self, y: np.ndarray) -> np.ndarray:
        return y.reshape(self.train[0].shape[1], self.n_classes)

    def test_accuracy(self, y: np.ndarray) -> float:
        A, labels = self.test
        return float(np.mean(np.argmax(A @ self.weights_matrix(y), axis=1) == labels))

    def corruption_f1(self, x: np.ndarray) -> float:
        """F1 of flagging ``σ(x_i) < 0.5`` as corrupted against the true corruption mask."""
        flagged = 1.0 / (1.0 + np.exp(-x)) < 0.5
        tp = float(np.sum(flagged & self.corrupted))
        fp = float(np.sum(flagged & ~self.corrupted))
        fn = float(np.sum(~flagged & self.corrupted))
        return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def _softmax(Z):
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def _ce_parts(A, labels, W):
    P = _softmax(A @ W)
    n = A.shape[0]
    ce = -np.log(np.maximum(P[np.arange(n), labels], 1e-300))
    Y = np.zeros_like(P)
    Y[np.arange(n), labels] = 1.0
    return P, Y, ce


def _weighted_ce_hessian(A, P, w):
    """Hessian of Σ_i w_i CE_i in vec(W) (row-major p × C): Σ_i w_i (a_i a_iᵀ) ⊗ (diag P_i − P_iP_iᵀ)."""
    n, p = A.shape
    C = P.shape[1]
    H = np.zeros((p, C, p, C))
    for c in range(C):
        H[:, c, :, c] = (A * (w * P[:, c])[:, None]).T @ A
    Mx = (A[:, :, None] * P[:, None, :]).reshape(n, p * C)
    return H.reshape(p * C, p * C) - Mx.T @ (w[:, None] * Mx)


def hyper_cleaning_digits(seed: int = 0, n_train: int = 200, n_val: int = 200,
                          corruption: float = 0.4, reg: float = 1e-2, pooling: int = 1
                          ) -> HyperCleaning:
    """Data hyper-cleaning on scikit-learn's digits (an offline MNIST-like stand-in).

    Shuffle with ``seed``; ``n_train`` training samples whose labels are corrupted with
    probability ``corruption`` to a uniformly random *other* class, ``n_val`` clean validation
    samples, the rest test. Features /16 plus a bias (p = 65), 10 classes; ``pooling`` = k
    averages k × k pixel blocks first (k ∈ {1, 2, 4, 8}; 2 gives p = 17, for fast tests).
    ``x ∈ R^{n_train}``
    are logits of sample weights σ(x_i);

        g(x, W) = (1/n) Σ σ(x_i) CE(W; a_i, b̃_i) + (c/2)‖W‖²    (μ = c)
        f(x, W) = (1/n_val) Σ CE(W; a_j, b_j).
    """
    from sklearn.datasets import load_digits

    n_train = check_int(n_train, "n_train", min_value=2)
    n_val = check_int(n_val, "n_val", min_value=2)
    corruption = check_scalar_in(corruption, "corruption", low=0.0, high=1.0, high_inclusive=False)
    reg = check_scalar_in(reg, "reg", low=0.0, low_inclusive=False)
    pooling = check_int(pooling, "pooling", min_value=1)
    if 8 % pooling:
        raise ValueError(f"pooling must divide the 8-pixel image side (1, 2, 4 or 8), got {pooling}")
    digits = load_digits()
    rng = np.random.default_rng([seed, 3])
    order = rng.permutation(len(digits.target))
    k = 8 // pooling
    pixels = digits.images[order].reshape(len(order), k, pooling, k, pooling).mean(axis=(2, 4))
    A_all = np.hstack([pixels.reshape(len(order), -1) / 16.0, np.ones((len(order), 1))])
    labels_all = digits.target[order]
    n_classes = 10
    if n_train + n_val >= len(order):
        raise ValueError(f"n_train + n_val must leave test samples (< {len(order)})")
    A_tr, b_tr = A_all[:n_train], labels_all[:n_train]
    A_val, b_val = A_all[n_train:n_train + n_val], labels_all[n_train:n_train + n_val]
    A_te, b_te = A_all[n_train + n_val:], labels_all[n_train + n_val:]
    corrupted = rng.random(n_train) < corruption
    noisy = b_tr.copy()
    shift = rng.integers(1, n_classes, size=n_train)
    noisy[corrupted] = (b_tr[corrupted] + shift[corrupted]) % n_classes
    p = A_tr.shape[1]

    def sig(x):
        return 1.0 / (1.0 + np.exp(-x))

    def g_value(x, y):
        W = y.reshape(p, n_classes)
        _, _, ce = _ce_parts(A_tr, noisy, W)
        return float(np.mean(sig(x) * ce) + 0.5 * reg * y @ y)

    def g_grad_y(x, y):
        W = y.reshape(p, n_classes)
        P, Y, _ = _ce_parts(A_tr, noisy, W)
        w = sig(x) / n_train
        return (A_tr.T @ (w[:, None] * (P - Y))).reshape(-1) + reg * y

    def g_grad(x, y):
        W = y.reshape(p, n_classes)
        P, Y, ce = _ce_parts(A_tr, noisy, W)
        s = sig(x)
        w = s / n_train
        gx = s * (1 - s) * ce / n_train
        return gx, (A_tr.T @ (w[:, None] * (P - Y))).reshape(-1) + reg * y

    def g_hess_yy(x, y):
        W = y.reshape(p, n_classes)
        P, _, _ = _ce_parts(A_tr, noisy, W)
        return _weighted_ce_hessian(A_tr, P, sig(x) / n_train) + reg * np.eye(p * n_classes)

    def g_hess(x, y):
        W = y.reshape(p, n_classes)
        P, Y, ce = _ce_parts(A_tr, noisy, W)
        s = sig(x)
        ds = s * (1 - s)
        Hxx = np.diag(ds * (1 - 2 * s) * ce / n_train)
        grads = (A_tr[:, :, None] * (P - Y)[:, None, :]).reshape(n_train, -1)   # ∇_W CE_i
        Hxy = (ds / n_train)[:, None] * grads
        Hyy = _weighted_ce_hessian(A_tr, P, s / n_train) + reg * np.eye(p * n_classes)
        return Hxx, Hxy, Hyy

    def f_value(x, y):
        _, _, ce = _ce_parts(A_val, b_val, y.reshape(p, n_classes))
        return float(np.mean(ce))

    def f_grad_y(x, y):
        P, Y, _ = _ce_parts(A_val, b_val, y.reshape(p, n_classes))
        return (A_val.T @ ((P - Y) / n_val)).reshape(-1)

    def f_grad(x, y):
        return np.zeros(n_train), f_grad_y(x, y)

    def f_hess_yy(x, y):
        P, _, _ = _ce_parts(A_val, b_val, y.reshape(p, n_classes))
        return _weighted_ce_hessian(A_val, P, np.full(n_val, 1.0 / n_val))

    def f_hess(x, y):
        return np.zeros((n_train, n_train)), np.zeros((n_train, p * n_classes)), f_hess_yy(x, y)

    derivatives = {"f": {"value": f_value, "grad": f_grad, "grad_y": f_grad_y, "hess": f_hess,
                         "hess_yy": f_hess_yy},
                   "g": {"value": g_value, "grad": g_grad, "grad_y": g_grad_y, "hess": g_hess,
                         "hess_yy": g_hess_yy}}
    problem = BilevelProblem(None, None, n_train, p * n_classes, derivatives=derivatives)
    return HyperCleaning(problem=problem, train=(A_tr, noisy, b_tr), val=(A_val, b_val),
                         test=(A_te, b_te), corrupted=corrupted, n_classes=n_classes, reg=reg)
