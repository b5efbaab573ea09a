"""Exact sequence laws of SafeDec and its baselines on small problems (experiment E4).

Enumerates every executed token sequence of length ``horizon`` and computes, in closed
form, the probability that each decoding rule executes it:

* ``pi``: the base policy;
* ``Q``: the paper's target, Eq. (1): ``Q(a) = π(a)·1[traj(a) ⊨ φ] / Σ_a' π(a')·1[traj(a') ⊨ φ]``;
* ``hcd``: hard-constrained decoding (masked, renormalised logits);
* ``filter``: sample from π, replace a violating token by ``fallback_token``;
* ``rcd``: robustness-constrained decoding ``softmax(z + α·exp(β·min(r, r_clip)))``.

Reference: Kapoor et al., "SafeDec", ICML 2026 (arXiv:2509.01728), Eq. (1) and Sec. 3.
"""

from __future__ import annotations

import numpy as np
import torch

from ..core.device import to_numpy
from ..core.validation import check_int
from .decoding import constrain_logits
from .stl import Formula, SafetyMonitor, is_satisfied

__all__ = ["exact_sequence_laws", "total_variation"]


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """``½ Σ |p − q|`` between two laws on the same sequence set."""
    return 0.5 * float(np.abs(np.asarray(p) - np.asarray(q)).sum())


def exact_sequence_laws(logit_fn, spec: Formula, dynamics, start, horizon: int, *,
                        fallback_token: int, alpha: float = 5.0, beta: float = 2.0,
                        r_clip: float = 1.0, max_sequences: int = 2_000_000) -> dict:
    """Enumerate all ``|A|^horizon`` executed sequences and their laws under each decoder.

    Parameters
    ----------
    logit_fn : callable
        ``logit_fn(states (S, n), t) -> logits (S, |A|)`` (numpy or torch; ``-inf`` allowed):
        a Markov policy table, one logit vector per (state, t).
    spec : Formula
        Specification; its invariant (G) fragment drives the masks.
    dynamics : DynamicsModel
        Exact one-step dynamics (``f̂ = f``) used both to predict and to execute.
    start : array, shape (n,)
        Start state (must satisfy ``spec``).
    horizon : int
    fallback_token : int
        The filter's (and HCD's infeasibility) fallback.
    alpha, beta, r_clip : float
        RCD parameters.

    Returns
    -------
    dict
        ``sequences`` (S, horizon) int, ``sat`` (S,) bool, and laws ``pi``, ``Q``,
        ``hcd``, ``filter``, ``rcd`` (each (S,), summing to 1), plus ``hcd_infeasible``
        (number of (sequence, step) pairs where HCD's mask was empty).

    Examples
    --------
    >>> import numpy as np
    >>> from icml26.safedec import Always, Predicate
    >>> class Line:
    ...     def predict_all(self, s):
    ...         return s[:, None, :] + np.array([[-1.0], [0.0], [1.0]])[None]
    >>> spec = Always(Predicate("x<=1", lambda x: 1.0 - x[..., 0]))
    >>> laws = exact_sequence_laws(lambda s, t: np.zeros((len(s), 3)), spec, Line(),
    ...                            np.array([0.0]), 2, fallback_token=1)
    >>> round(float(laws["hcd"][laws["sat"]].sum()), 12)
    1.0
    """
    check_int(horizon, "horizon", min_value=1)
    start = np.asarray(start, dtype=np.float64)
    probe = np.asarray(dynamics.predict_all(start[None]))
    n_tokens = probe.shape[1]
    n_seq = n_tokens ** horizon
    if n_seq > max_sequences:
        raise ValueError(f"{n_tokens}^{horizon} = {n_seq} sequences exceed max_sequences={max_sequences}")
    seqs = np.stack(np.unravel_index(np.arange(n_seq), (n_tokens,) * horizon), axis=1)
    rows = np.arange(n_seq)
    states = np.repeat(start[None], n_seq, axis=0)
    monitor = SafetyMonitor(spec, batch=n_seq)
    log = {k: np.zeros(n_seq) for k in ("pi", "hcd", "filter", "rcd")}
    traj = [states]
    hcd_infeasible = 0
    for t in range(horizon):
        monitor.update(states)
        preds = np.asarray(dynamics.predict_all(states), dtype=np.float64)
        raw = logit_fn(states, t)          # numpy, or a tensor on any device
        logits = torch.as_tensor(np.asarray(to_numpy(raw) if isinstance(raw, torch.Tensor) else raw,
                                            dtype=np.float64))
        r_prefix = monitor.candidates(preds, prefix=True)
        r_state = monitor.candidates(preds, prefix=False)
        safe = is_satisfied(r_prefix)
        p = torch.softmax(logits, 1).numpy()
        hcd_logits, infeasible = constrain_logits(logits, r_prefix, mode="hcd", fallback_token=fallback_token)
        hcd_infeasible += int(infeasible.sum())
        rcd_logits, _ = constrain_logits(logits, r_state, mode="rcd", alpha=alpha, beta=beta, r_clip=r_clip)
        q_filter = p * safe
        q_filter[:, fallback_token] += (p * ~safe).sum(1)
        tok = seqs[:, t]
        with np.errstate(divide="ignore"):
            log["pi"] += np.log(p[rows, tok])
            log["hcd"] += np.log(torch.softmax(hcd_logits, 1).numpy()[rows, tok])
            log["rcd"] += np.log(torch.softmax(rcd_logits, 1).numpy()[rows, tok])
            log["filter"] += np.log(q_filter[rows, tok])
        states = preds[rows, tok]
        traj.append(states)
    sat = is_satisfied(spec.robustness(np.stack(traj, axis=1)))
    laws = {k: np.exp(v) for k, v in log.items()}
    z = laws["pi"][sat].sum()
    if z <= 0:
        raise ValueError("no sequence with positive base probability satisfies the spec; Q is undefined")
    laws["Q"] = np.where(sat, laws["pi"], 0.0) / z
    return {"sequences": seqs, "sat": sat, "hcd_infeasible": hcd_infeasible, **laws}
