"""The paper's decoding baselines: unconstrained decoding and post-hoc filtering (Simplex),
plus rejection sampling (ours), all with :class:`~icml26.safedec.SafeDecoder`'s interface.

Paper: Kapoor et al., "SafeDec: Constrained Decoding for Safe Autoregressive Generalist
Robot Navigation Policies", ICML 2026 (arXiv:2509.01728), Sec. 4 (baselines).
No maintained library provides these wrappers for a token policy, so they are written here.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

from .decoding import _check_fallback, _check_logits, _DecoderBase
from .stl import is_satisfied

__all__ = ["UnconstrainedDecoder", "FilterDecoder", "RejectionDecoder"]


class UnconstrainedDecoder(_DecoderBase):
    """Base policy decoding (sampling at temperature τ or greedy); ignores the spec.

    Same signature as :class:`~icml26.safedec.SafeDecoder` (``spec`` and ``dynamics``
    are kept so that ``info["robustness"]`` reports the candidates' robustness).

    References
    ----------
    Kapoor, Ganlath, Clifford, Liu, Scherer, Kang, "SafeDec: Constrained Decoding for Safe
    Autoregressive Generalist Robot Navigation Policies", ICML 2026, arXiv:2509.01728 (Sec. 4:
    the unconstrained base policy is its first baseline).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from icml26.safedec import Always, Predicate, UnconstrainedDecoder
    >>> class Line:
    ...     def predict_all(self, s):
    ...         return s[:, None, :] + np.array([[-1.0], [0.0], [1.0]])[None]
    >>> spec = Always(Predicate("x<=2", lambda x: 2.0 - x[..., 0]))
    >>> dec = UnconstrainedDecoder(None, spec, Line(), greedy=True)
    >>> int(dec.decode(torch.tensor([[0.0, 0.0, 5.0]]), np.array([[2.0]]))[0][0])
    2
    """

    def decode(self, logits, states, u=None):
        logits = _check_logits(logits)
        states = self._observe(states)
        rob = self.monitor.candidates(self._predict(states, logits), prefix=True)
        tokens = self._sample(logits, self._first_uniform(u))
        none = np.zeros(logits.shape[0], dtype=bool)
        return tokens, {"robustness": rob, "masked": np.zeros(logits.shape, dtype=bool),
                        "infeasible": none, "logits": logits}


class FilterDecoder(_DecoderBase):
    """Post-hoc filtering (Simplex shield): sample from π; if the predicted next state
    violates the spec, execute ``fallback_token`` instead (the paper's baseline).

    Parameters
    ----------
    policy, spec, dynamics, temperature, greedy, horizon
        As in :class:`~icml26.safedec.SafeDecoder`.
    fallback_token : int
        The fixed safe action (paper: rotate in place).

    Notes
    -----
    The executed token can have zero probability under π, so the executed-sequence law
    leaves the model's support and the autoregressive context no longer matches what the
    model would have produced (paper Sec. 3; measured in E4).

    References
    ----------
    Kapoor, Ganlath, Clifford, Liu, Scherer, Kang, "SafeDec: Constrained Decoding for Safe
    Autoregressive Generalist Robot Navigation Policies", ICML 2026, arXiv:2509.01728 (Sec. 4:
    the post-hoc filtering baseline). Sha, "Using Simplicity to Control Complexity", IEEE
    Software 18(4), 2001 (the Simplex architecture: a verified fallback replaces an unsafe
    action).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from icml26.safedec import Always, FilterDecoder, Predicate
    >>> class Line:  # 1-D robot, tokens: left, stay, right
    ...     def predict_all(self, s):
    ...         return s[:, None, :] + np.array([[-1.0], [0.0], [1.0]])[None]
    >>> spec = Always(Predicate("x<=2", lambda x: 2.0 - x[..., 0]))
    >>> dec = FilterDecoder(None, spec, Line(), fallback_token=1, greedy=True)
    >>> tok, info = dec.decode(torch.tensor([[0.0, 0.0, 5.0]]), np.array([[2.0]]))
    >>> int(tok[0]), info["filtered"].tolist()  # "right" would leave x <= 2: "stay" instead
    (1, [True])
    """

    def __init__(self, policy, spec, dynamics, *, fallback_token: int, temperature: float = 1.0,
                 greedy: bool = False, horizon: int | None = None):
        super().__init__(policy, spec, dynamics, temperature=temperature, greedy=greedy, horizon=horizon)
        if fallback_token is None:
            raise ValueError("fallback_token is required for FilterDecoder (the safe action)")
        self.fallback_token = _check_fallback(fallback_token)

    def decode(self, logits, states, u=None):
        logits = _check_logits(logits)
        states = self._observe(states)
        rob = self.monitor.candidates(self._predict(states, logits), prefix=True)
        tokens = self._sample(logits, self._first_uniform(u))
        chosen = rob[np.arange(len(rob)), tokens.cpu().numpy()]
        unsafe = torch.as_tensor(~is_satisfied(chosen), device=tokens.device)
        tokens = torch.where(unsafe, torch.full_like(tokens, self.fallback_token), tokens)
        return tokens, {"robustness": rob, "masked": np.zeros(logits.shape, dtype=bool),
                        "infeasible": np.zeros(logits.shape[0], dtype=bool), "logits": logits,
                        "filtered": unsafe.cpu().numpy()}


class RejectionDecoder(_DecoderBase):
    """Rejection sampling: resample from π up to ``max_tries`` times until the predicted
    next state satisfies the spec, then use ``fallback_token`` (ours, spec §3).

    As ``max_tries → ∞`` the executed token law equals HCD's renormalized distribution.

    Parameters
    ----------
    policy, spec, dynamics, temperature, greedy, horizon
        As in :class:`~icml26.safedec.SafeDecoder`.
    max_tries : int
        Number of samples M (default 3).
    fallback_token : int
        Executed when all M samples violate.
    seed : int
        Seeds the extra uniforms when ``u`` has fewer than ``max_tries`` columns.

    References
    ----------
    Kapoor, Ganlath, Clifford, Liu, Scherer, Kang, "SafeDec: Constrained Decoding for Safe
    Autoregressive Generalist Robot Navigation Policies", ICML 2026, arXiv:2509.01728. Rejection
    sampling is not one of the paper's baselines: this package adds it as the sampling-based
    competitor whose limit (``max_tries → ∞``) is the paper's HCD distribution.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from icml26.safedec import Always, Predicate, RejectionDecoder
    >>> class Line:  # 1-D robot, tokens: left, stay, right
    ...     def predict_all(self, s):
    ...         return s[:, None, :] + np.array([[-1.0], [0.0], [1.0]])[None]
    >>> spec = Always(Predicate("x<=2", lambda x: 2.0 - x[..., 0]))
    >>> dec = RejectionDecoder(None, spec, Line(), max_tries=3, fallback_token=1, seed=0)
    >>> logits = torch.tensor([[0.0, 0.0, 5.0]])
    >>> u = np.array([[0.999, 0.0, 0.5]])  # 1st try samples "right" (unsafe), 2nd "left"
    >>> int(dec.decode(logits, np.array([[2.0]]), u=u)[0][0])
    0
    """

    def __init__(self, policy, spec, dynamics, *, max_tries: int = 3, fallback_token: int,
                 temperature: float = 1.0, greedy: bool = False, horizon: int | None = None,
                 seed: int = 0):
        super().__init__(policy, spec, dynamics, temperature=temperature, greedy=greedy, horizon=horizon)
        if isinstance(max_tries, bool) or not isinstance(max_tries, numbers.Integral) or max_tries < 1:
            raise ValueError(f"max_tries must be a positive integer, got {max_tries!r}")
        if fallback_token is None:
            raise ValueError("fallback_token is required for RejectionDecoder")
        self.max_tries = int(max_tries)
        self.fallback_token = _check_fallback(fallback_token)
        self.seed = seed
        self._generator = torch.Generator().manual_seed(int(seed))

    def reset(self):
        self._generator = torch.Generator().manual_seed(int(self.seed))
        return super().reset()

    def _uniforms(self, u, batch: int) -> torch.Tensor:
        cols = []
        if u is not None:
            u = torch.as_tensor(u, dtype=torch.float64)
            u = u[:, None] if u.ndim == 1 else u
            if u.shape[0] != batch:
                raise ValueError(f"u must have B = {batch} rows, got shape {tuple(u.shape)}")
            cols = [u[:, k] for k in range(min(u.shape[1], self.max_tries))]
        while len(cols) < self.max_tries:
            cols.append(torch.rand(batch, generator=self._generator, dtype=torch.float64))
        return torch.stack(cols, dim=1)

    def decode(self, logits, states, u=None):
        logits = _check_logits(logits)
        states = self._observe(states)
        rob = self.monitor.candidates(self._predict(states, logits), prefix=True)
        uniforms = self._uniforms(u, logits.shape[0])
        rows = np.arange(logits.shape[0])
        tokens = torch.full((logits.shape[0],), self.fallback_token, dtype=torch.long,
                            device=logits.device)
        pending = np.ones(logits.shape[0], dtype=bool)
        for k in range(self.max_tries):
            draw = self._sample(logits, uniforms[:, k]).cpu().numpy()
            ok = pending & is_satisfied(rob[rows, draw])
            tokens[torch.as_tensor(ok)] = torch.as_tensor(draw[ok], device=tokens.device)
            pending &= ~ok
            if not pending.any():
                break
        return tokens, {"robustness": rob, "masked": np.zeros(logits.shape, dtype=bool),
                        "infeasible": np.zeros(logits.shape[0], dtype=bool), "logits": logits,
                        "filtered": pending}
