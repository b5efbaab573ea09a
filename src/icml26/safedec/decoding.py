"""SafeDec: STL-constrained decoding of action tokens (HCD and RCD).

At every control step a frozen autoregressive policy emits logits ``z ∈ R^{B×|A|}``.
SafeDec pushes every candidate token through a one-step dynamics model ``f̂``,
evaluates the specification's robustness on the predicted next state, and

* **HCD** (hard-constrained decoding) sets ``z_i = −inf`` for tokens whose predicted
  state violates the invariant part of φ (Theorem 1: with ``f̂ = f`` the executed
  trajectory satisfies φ);
* **RCD** (robustness-constrained decoding) adds ``α · exp(β · min(r_i, r_clip))``.

then decodes with the base rule (temperature sampling by inverse CDF from a given
uniform ``u``, or greedy). Paper: Kapoor et al., "SafeDec: Constrained Decoding for Safe
Autoregressive Generalist Robot Navigation Policies", ICML 2026 (arXiv:2509.01728),
Sec. 3 and Eq. (1).

Notation → code: ``z`` logits, ``x̂^{(i)}`` ``dynamics.predict_all(states)[:, i]``,
``ρ`` :class:`~icml26.safedec.stl.SafetyMonitor` candidates, α ``alpha``, β ``beta``.
"""

from __future__ import annotations

import numbers
from typing import Callable, Protocol

import numpy as np
import torch

from ..core.validation import check_choice, check_scalar_in
from .stl import Formula, InfeasibleSpecError, SafetyMonitor, is_satisfied

__all__ = [
    "DynamicsModel",
    "constrain_logits",
    "sample_tokens",
    "SafeDecoder",
    "SafeDecLogitsProcessor",
]


class DynamicsModel(Protocol):
    """One-step dynamics model ``f̂``: the predicted next state for every token.

    A structural type (:class:`typing.Protocol`): any object with a ``predict_all`` method
    that maps states ``(B, n)`` to predicted next states ``(B, |A|, n)`` qualifies, e.g.
    :class:`~icml26.safedec.LatticeDynamics`.

    References
    ----------
    Kapoor, Ganlath, Clifford, Liu, Scherer, Kang, "SafeDec: Constrained Decoding for Safe
    Autoregressive Generalist Robot Navigation Policies", ICML 2026, arXiv:2509.01728 (§2.6: the
    dynamics model ``f̂`` that predicts each candidate token's next state). PEP 544, "Protocols:
    Structural subtyping (static duck typing)" (the typing convention).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from icml26.safedec import Always, Predicate
    >>> class Line:  # 1-D robot, tokens: left, stay, right
    ...     def predict_all(self, s):
    ...         return s[:, None, :] + np.array([[-1.0], [0.0], [1.0]])[None]
    >>> spec = Always(Predicate("x<=2", lambda x: 2.0 - x[..., 0]))
    >>> Line().predict_all(np.array([[2.0]])).tolist()
    [[[1.0], [2.0], [3.0]]]
    >>> dec = SafeDecoder(None, spec, Line(), greedy=True)  # any DynamicsModel will do
    >>> int(dec.decode(torch.tensor([[0.0, 1.0, 5.0]]), np.array([[2.0]]))[0][0])
    1
    """

    def predict_all(self, states) -> np.ndarray:  # (B, n) -> (B, |A|, n)
        ...


# -- validation helpers ------------------------------------------------------------------

def _check_logits(logits) -> torch.Tensor:
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor shaped (B, |A|), got {type(logits).__name__}")
    if logits.ndim != 2 or logits.shape[1] == 0 or logits.shape[0] == 0:
        raise ValueError(f"logits must be shaped (B, |A|) with B, |A| >= 1, got {tuple(logits.shape)}")
    if not logits.is_floating_point():
        raise TypeError(f"logits must be floating point, got {logits.dtype}")
    if bool(torch.isnan(logits).any()) or bool(torch.isposinf(logits).any()):
        raise ValueError("logits contain NaN or +inf; expected finite values or -inf (disallowed)")
    if bool(torch.isneginf(logits).all(dim=1).any()):
        raise ValueError("logits: some rows are already all -inf before masking; "
                         "the policy allows no token at all")
    return logits


def _as_robustness(robustness, logits: torch.Tensor, name: str = "robustness") -> torch.Tensor:
    if isinstance(robustness, torch.Tensor):
        rob = robustness.detach().to(device=logits.device, dtype=torch.float64)
    else:
        arr = np.asarray(robustness)
        if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
            raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
        rob = torch.as_tensor(arr, dtype=torch.float64, device=logits.device)
    if tuple(rob.shape) != tuple(logits.shape):
        raise ValueError(f"{name} shape {tuple(rob.shape)} does not match logits shape "
                         f"{tuple(logits.shape)}; expected (B, |A|) for both")
    if bool(torch.isnan(rob).any()):
        raise ValueError(f"{name} contains NaN; a NaN robustness would silently allow the action")
    return rob


def _check_fallback(fallback_token, n_tokens: int | None = None):
    if fallback_token is None:
        return None
    if isinstance(fallback_token, bool) or not isinstance(fallback_token, numbers.Integral):
        raise TypeError(f"fallback_token must be an int or None, got {fallback_token!r}")
    if fallback_token < 0 or (n_tokens is not None and fallback_token >= n_tokens):
        raise ValueError(f"fallback_token must be in [0, {n_tokens}), got {fallback_token}")
    return int(fallback_token)


def _check_params(mode, alpha, beta, r_clip, delta):
    check_choice(mode, "mode", ("hcd", "rcd"))
    check_scalar_in(alpha, "alpha", low=0.0)
    check_scalar_in(beta, "beta", low=0.0, low_inclusive=False)
    check_scalar_in(r_clip, "r_clip")
    check_scalar_in(delta, "delta", low=0.0)


# -- the two logit transforms ---------------------------------------------------------------

def constrain_logits(logits, robustness, *, mode: str = "hcd", alpha: float = 5.0,
                     beta: float = 2.0, r_clip: float = 1.0, delta: float = 0.0, r_now=None,
                     fallback_token: int | None = None, strict: bool = False):
    """Apply HCD masking or the RCD robustness bonus to a batch of logits.

    Parameters
    ----------
    logits : torch.Tensor, shape (B, |A|)
        Policy logits ``z_t``; ``-inf`` marks tokens the policy already excludes.
    robustness : array or tensor, shape (B, |A|)
        HCD: robustness of the (prefix ⊕) predicted next state per token; RCD: the
        candidate state's own robustness ``r_i``. ``+inf`` means unconstrained.
    mode : {"hcd", "rcd"}
    alpha, beta, r_clip : float
        RCD weight α ≥ 0, exponent scale β > 0 and clip: ``z + α·exp(β·min(r, r_clip))``.
    delta : float
        HCD-δ margin (≥ 0): mask iff ``r_i < min(δ, r_now)``; 0 gives plain HCD (``r_i < 0``).
    r_now : array or tensor, shape (B,), optional
        Robustness of the current state; required when ``delta > 0``.
    fallback_token : int, optional
        Token used (even if masked) when every token is masked.
    strict : bool
        Raise :class:`InfeasibleSpecError` when a row has every token masked.

    Returns
    -------
    logits : torch.Tensor, shape (B, |A|)
        Constrained logits (same dtype; RCD returns float32 for half-precision input). An infeasible row becomes ``0`` at the fallback
        token and ``-inf`` elsewhere; without a fallback it keeps the original logits
        (documented fallback: decode unconstrained and report it).
    infeasible : torch.Tensor of bool, shape (B,)
        Rows where every token was masked.

    Notes
    -----
    HCD (paper Sec. 3.1): ``z̃_i = −inf`` if ``x̂^{(i)}`` violates φ else ``z_i``. RCD
    (Sec. 3.2): ``z̃_i = z_i + α·w_i``, ``w_i = exp(β·r_i)``; the clip ``r_clip`` and the
    δ-rule are resolutions of this package (not from the paper). ``exp`` is evaluated in
    float64 after clipping, so it never overflows; ``-inf + α·w`` stays ``-inf``.

    Examples
    --------
    >>> import torch
    >>> z = torch.tensor([[1.0, 2.0, 0.5]])
    >>> out, infeasible = constrain_logits(z, [[0.3, -0.1, 0.0]], mode="hcd")
    >>> out.tolist(), infeasible.tolist()
    ([[1.0, -inf, 0.5]], [False])
    """
    logits = _check_logits(logits)
    _check_params(mode, alpha, beta, r_clip, delta)
    fallback_token = _check_fallback(fallback_token, logits.shape[1])
    rob = _as_robustness(robustness, logits)
    infeasible = torch.zeros(logits.shape[0], dtype=torch.bool, device=logits.device)
    if mode == "rcd":
        bonus = float(alpha) * torch.exp(float(beta) * torch.clamp(rob, max=float(r_clip)))
        # half-precision logits are promoted to float32: the bonus may exceed fp16's range
        work = torch.float64 if logits.dtype == torch.float64 else torch.float32
        return logits.to(work) + bonus.to(work), infeasible
    if delta > 0:
        if r_now is None:
            raise ValueError("r_now (current-state robustness, shape (B,)) is required when delta > 0")
        now = _as_robustness(r_now, logits[:, 0], name="r_now")
        threshold = torch.minimum(torch.full_like(now, float(delta)), now)[:, None]
    else:
        threshold = torch.zeros((), dtype=torch.float64, device=logits.device)
    masked = ~is_satisfied(rob - threshold)
    out = logits.masked_fill(masked, float("-inf"))
    infeasible = torch.isneginf(out).all(dim=1)
    if bool(infeasible.any()):
        if strict:
            rows = torch.nonzero(infeasible).flatten().tolist()
            raise InfeasibleSpecError(f"every token violates the specification in rows {rows}")
        if fallback_token is not None:
            row = torch.full_like(logits[0], float("-inf"))
            row[fallback_token] = 0.0
            out[infeasible] = row
        else:
            out[infeasible] = logits[infeasible]
    return out, infeasible


def sample_tokens(logits: torch.Tensor, u=None, *, temperature: float = 1.0, greedy: bool = False,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Decode one token per row: greedy argmax or inverse-CDF sampling from ``softmax(z/τ)``.

    Parameters
    ----------
    logits : torch.Tensor, shape (B, |A|)
    u : array or tensor, shape (B,), optional
        Uniforms in [0, 1) (common random numbers across decoders); drawn from
        ``generator`` when omitted.
    temperature : float
        τ > 0 (ignored when ``greedy``).
    greedy : bool
    generator : torch.Generator, optional

    Returns
    -------
    torch.LongTensor, shape (B,)
        The token ``i`` with ``cdf_{i−1} ≤ u < cdf_i``; zero-probability tokens are never
        returned.
    """
    logits = _check_logits(logits)
    if greedy:
        return torch.argmax(logits, dim=1)
    check_scalar_in(temperature, "temperature", low=0.0, low_inclusive=False)
    if u is None:
        u = torch.rand(logits.shape[0], generator=generator, dtype=torch.float64)
    u = torch.as_tensor(u, dtype=torch.float64, device=logits.device)
    if tuple(u.shape) != (logits.shape[0],):
        raise ValueError(f"u must be shaped (B,) = ({logits.shape[0]},) for logits of shape "
                         f"{tuple(logits.shape)}, got {tuple(u.shape)}")
    if not bool(((u >= 0) & (u < 1)).all()):  # NaN or inf must not decode silently
        raise ValueError("u must hold uniforms in [0, 1) (no NaN or infinity)")
    probs = torch.softmax(logits.to(torch.float64) / float(temperature), dim=1)
    cdf = torch.cumsum(probs, dim=1)
    idx = (cdf <= u[:, None]).sum(dim=1)
    # rounding can leave cdf[-1] < u: take the last token with positive probability
    last_positive = probs.shape[1] - 1 - torch.argmax(torch.flip(probs > 0, dims=[1]).to(torch.int8), dim=1)
    return torch.minimum(idx, last_positive)


# -- decoders ------------------------------------------------------------------------------

class _DecoderBase(torch.nn.Module):
    """Shared machinery: policy call, monitor bookkeeping, dynamics prediction, sampling."""

    def __init__(self, policy: Callable | None, spec: Formula, dynamics, *, temperature: float = 1.0,
                 greedy: bool = False, horizon: int | None = None):
        super().__init__()
        if not isinstance(spec, Formula):
            raise TypeError(f"spec must be a Formula, got {type(spec).__name__}")
        if not hasattr(dynamics, "predict_all"):
            raise TypeError("dynamics must provide predict_all(states) -> (B, |A|, n)")
        if not greedy:
            check_scalar_in(temperature, "temperature", low=0.0, low_inclusive=False)
        if horizon is not None:
            spec.check_horizon(horizon)
        self.policy = policy
        self.spec = spec
        self.dynamics = dynamics
        self.temperature = temperature
        self.greedy = greedy
        self.horizon = horizon
        self.monitor: SafetyMonitor | None = None

    def reset(self) -> "_DecoderBase":
        """Forget the realized prefix (call before each batch of episodes)."""
        self.monitor = None
        return self

    def _observe(self, states) -> np.ndarray:
        states = np.asarray(states.detach().cpu().numpy() if isinstance(states, torch.Tensor) else states,
                            dtype=np.float64)
        if states.ndim != 2:
            raise ValueError(f"states must be shaped (B, n), got {states.shape}")
        if self.monitor is None or self.monitor.batch != states.shape[0]:
            self.monitor = SafetyMonitor(self.spec, batch=states.shape[0])
        first = self.monitor.t == 0
        prefix = self.monitor.update(states)
        if first and not bool(np.all(is_satisfied(prefix))):
            rows = np.flatnonzero(~is_satisfied(prefix)).tolist()
            raise InfeasibleSpecError(f"start state violates the specification in rows {rows}; "
                                      "every continuation violates it")
        return states

    def _predict(self, states: np.ndarray, logits: torch.Tensor) -> np.ndarray:
        preds = np.asarray(self.dynamics.predict_all(states), dtype=np.float64)
        want = (logits.shape[0], logits.shape[1], states.shape[1])
        if preds.shape != want:
            raise ValueError(f"dynamics.predict_all returned shape {preds.shape}; expected "
                             f"(B, |A|, n) = {want} to match logits {tuple(logits.shape)}")
        return preds

    def _sample(self, logits, u):
        return sample_tokens(logits, u, temperature=self.temperature, greedy=self.greedy)

    @staticmethod
    def _first_uniform(u):
        if u is None:
            return None
        u = torch.as_tensor(u, dtype=torch.float64)
        return u if u.ndim == 1 else u[:, 0]

    def step(self, context, states, u=None):
        """Run the policy on ``context`` and decode one token per row.

        Parameters
        ----------
        context : any
            Whatever the wrapped policy takes; ``policy(context)`` must return logits
            shaped (B, |A|) for the next token.
        states : array, shape (B, n)
            Realized current states ``x_t`` (recorded by the incremental monitor).
        u : array, shape (B,) or (B, K), optional
            Uniforms for sampling (column 0 is the shared common random number).

        Returns
        -------
        tokens : torch.LongTensor, shape (B,)
        info : dict
            ``robustness`` (B, |A|), ``masked`` (B, |A|) bool, ``infeasible`` (B,) bool,
            ``logits`` (B, |A|) after constraining.
        """
        if self.policy is None:
            raise ValueError("this decoder has no policy; call decode(logits, states, u) instead")
        with torch.no_grad():
            logits = self.policy(context)
        return self.decode(logits, states, u)

    def forward(self, context, states, u=None):
        return self.step(context, states, u)[0]

    def decode(self, logits, states, u=None):  # pragma: no cover - abstract
        raise NotImplementedError


class SafeDecoder(_DecoderBase):
    """SafeDec decoding around any policy that returns next-token logits.

    Parameters
    ----------
    policy : callable or None
        ``policy(context) -> logits (B, |A|)``; ``None`` if you call :meth:`decode`
        with logits yourself.
    spec : Formula
        The specification; its invariant (G) fragment is enforced step by step.
    dynamics : DynamicsModel
        ``predict_all(states (B, n)) -> (B, |A|, n)``.
    mode : {"hcd", "rcd"}
        Hard masking or robustness bonus.
    alpha, beta, r_clip : float
        RCD parameters (defaults 5, 2, 1 — spec §2.7).
    delta : float
        HCD-δ margin for model error (0 = plain HCD).
    fallback_token : int, optional
        Token executed when every token is masked (``info["infeasible"]`` is set).
    temperature : float
        Sampling temperature τ > 0.
    greedy : bool
        Argmax decoding instead of sampling.
    strict : bool
        Raise :class:`InfeasibleSpecError` instead of using the fallback.
    horizon : int, optional
        Episode length; time bounds beyond it are rejected.

    Notes
    -----
    Per step (spec §2.6): ``X̂ = f̂(x_t, ·)``; HCD masks ``ρ(φ_safe, x_{0:t} ⊕ x̂^{(i)}) < 0``
    (prefix-inclusive robustness from the incremental monitor; with ``delta > 0`` the
    rule is ``ρ(ψ, x̂^{(i)}) < min(δ, ρ(ψ, x_t))``); RCD adds ``α·exp(β·min(ρ(ψ, x̂^{(i)}), r_clip))``.
    Theorem 1 of the paper: with ``f̂ = f`` and a non-empty mask, every HCD trajectory
    satisfies the invariant part of φ. Eventualities (F, U) are not enforced.

    References
    ----------
    Kapoor et al., "SafeDec: Constrained Decoding for Safe Autoregressive Generalist
    Robot Navigation Policies", ICML 2026, arXiv:2509.01728.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from icml26.safedec import Always, Predicate, SafeDecoder
    >>> class Line:  # 1-D robot, tokens: left, stay, right
    ...     def predict_all(self, s):
    ...         return s[:, None, :] + np.array([[-1.0], [0.0], [1.0]])[None]
    >>> spec = Always(Predicate("x<=2", lambda x: 2.0 - x[..., 0]))
    >>> dec = SafeDecoder(lambda ctx: torch.tensor([[0.0, 1.0, 5.0]]), spec, Line(), greedy=True)
    >>> tok, info = dec.step(None, np.array([[2.0]]))
    >>> int(tok[0]), info["masked"].tolist()
    (1, [[False, False, True]])
    """

    def __init__(self, policy, spec: Formula, dynamics, *, mode: str = "hcd", alpha: float = 5.0,
                 beta: float = 2.0, r_clip: float = 1.0, delta: float = 0.0,
                 fallback_token: int | None = None, temperature: float = 1.0, greedy: bool = False,
                 strict: bool = False, horizon: int | None = None):
        super().__init__(policy, spec, dynamics, temperature=temperature, greedy=greedy, horizon=horizon)
        _check_params(mode, alpha, beta, r_clip, delta)
        self.mode = mode
        self.alpha = alpha
        self.beta = beta
        self.r_clip = r_clip
        self.delta = delta
        self.fallback_token = _check_fallback(fallback_token)
        self.strict = strict

    def decode(self, logits, states, u=None):
        """Constrain given logits for realized ``states`` and decode (see :meth:`step`)."""
        logits = _check_logits(logits)
        states = self._observe(states)
        preds = self._predict(states, logits)
        use_prefix = self.mode == "hcd" and self.delta == 0
        rob = self.monitor.candidates(preds, prefix=use_prefix)
        new, infeasible = constrain_logits(
            logits, rob, mode=self.mode, alpha=self.alpha, beta=self.beta, r_clip=self.r_clip,
            delta=self.delta, r_now=self.monitor.current if self.delta > 0 else None,
            fallback_token=self.fallback_token, strict=self.strict)
        tokens = self._sample(new, self._first_uniform(u))
        masked = torch.isneginf(new) & ~torch.isneginf(logits)
        return tokens, {"robustness": rob, "masked": masked.cpu().numpy(),
                        "infeasible": infeasible.cpu().numpy(), "logits": new}


class SafeDecLogitsProcessor:
    """SafeDec as a Hugging Face ``transformers`` logits processor.

    Use it in ``model.generate(..., logits_processor=LogitsProcessorList([proc]))``: at
    each generation step it maps ``input_ids`` to states with ``state_fn``, predicts the
    next state of every vocabulary token with ``dynamics`` and applies
    :func:`constrain_logits`.

    Parameters
    ----------
    spec : Formula
    dynamics : DynamicsModel
        ``predict_all(states (B, n)) -> (B, V, n)`` for the full vocabulary ``V``.
    state_fn : callable
        ``state_fn(input_ids) -> states``: either the current states (B, n) or the
        realized state history (B, t, n) (then the mask is prefix-inclusive).
    **kwargs
        ``mode``, ``alpha``, ``beta``, ``r_clip``, ``delta``, ``fallback_token``,
        ``strict`` as in :class:`SafeDecoder`.

    References
    ----------
    Kapoor, Ganlath, Clifford, Liu, Scherer, Kang, "SafeDec: Constrained Decoding for Safe
    Autoregressive Generalist Robot Navigation Policies", ICML 2026, arXiv:2509.01728. Wolf et
    al., "Transformers: State-of-the-Art Natural Language Processing", EMNLP 2020 (System
    Demonstrations) (the ``LogitsProcessor`` interface).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from icml26.safedec import Always, Predicate
    >>> class Line:
    ...     def predict_all(self, s):
    ...         return s[:, None, :] + np.array([[-1.0], [0.0], [1.0]])[None]
    >>> spec = Always(Predicate("x<=2", lambda x: 2.0 - x[..., 0]))
    >>> proc = SafeDecLogitsProcessor(spec, Line(), lambda ids: np.full((ids.shape[0], 1), 2.0))
    >>> proc(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 3)).tolist()
    [[0.0, 0.0, -inf]]
    """

    def __init__(self, spec: Formula, dynamics, state_fn: Callable, **kwargs):
        if not isinstance(spec, Formula):
            raise TypeError(f"spec must be a Formula, got {type(spec).__name__}")
        if not callable(state_fn):
            raise TypeError("state_fn must be callable: state_fn(input_ids) -> states")
        allowed = {"mode", "alpha", "beta", "r_clip", "delta", "fallback_token", "strict"}
        unknown = sorted(set(kwargs) - allowed)
        if unknown:
            raise TypeError(f"SafeDecLogitsProcessor got unexpected keyword(s) {unknown}; "
                            f"allowed: {sorted(allowed)}")
        self.spec = spec
        self.dynamics = dynamics
        self.state_fn = state_fn
        self.kwargs = dict(mode="hcd", alpha=5.0, beta=2.0, r_clip=1.0, delta=0.0,
                           fallback_token=None, strict=False)
        self.kwargs.update(kwargs)
        _check_params(self.kwargs["mode"], self.kwargs["alpha"], self.kwargs["beta"],
                      self.kwargs["r_clip"], self.kwargs["delta"])

    def __call__(self, input_ids, scores):
        states = self.state_fn(input_ids)
        states = np.asarray(states.detach().cpu().numpy() if isinstance(states, torch.Tensor) else states,
                            dtype=np.float64)
        history = states if states.ndim == 3 else states[:, None, :]
        if history.ndim != 3:
            raise ValueError(f"state_fn must return (B, n) or (B, t, n), got {states.shape}")
        monitor = SafetyMonitor(self.spec, batch=history.shape[0])
        for k in range(history.shape[1]):
            monitor.update(history[:, k])
        preds = np.asarray(self.dynamics.predict_all(history[:, -1]), dtype=np.float64)
        if preds.shape[:2] != tuple(scores.shape):
            raise ValueError(f"dynamics.predict_all returned shape {preds.shape}; expected "
                             f"(B, V, n) with (B, V) = {tuple(scores.shape)}")
        delta = self.kwargs["delta"]
        use_prefix = self.kwargs["mode"] == "hcd" and delta == 0
        rob = monitor.candidates(preds, prefix=use_prefix)
        out, _ = constrain_logits(scores, rob, r_now=monitor.current if delta > 0 else None,
                                  **self.kwargs)
        return out
