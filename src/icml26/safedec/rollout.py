"""Batched closed-loop evaluation of decoders on LatticeNav with common random numbers.

Every decoder sees the same maps, starts, goals and per-step uniforms ``u_t`` (seeded by
(seed, episode)), so differences between decoders are paired (spec §6).
"""

from __future__ import annotations

import time

import numpy as np
import torch
from filelock import FileLock

from .baselines import FilterDecoder, RejectionDecoder, UnconstrainedDecoder
from .data import (INACTIVE, ROT_L, T_MAX, WorldConfig, LatticeNavEnv, cache_dir, load_or_make_demos,
                   make_spec, sample_episode)
from .decoding import SafeDecoder, sample_tokens
from .policy import NavTransformer, load_or_train
from .stl import Always, Predicate, invariant_parts, is_satisfied

__all__ = ["make_decoder", "rollout", "episodes_for", "uniforms_for", "policy_for", "trivial_spec",
           "N_UNIFORMS"]

N_UNIFORMS = 4  # column 0: shared sampling uniform; 1..3: extra draws for Rejection(3)


def trivial_spec():
    """``G(true)`` with a constant margin (used for the ``free`` family)."""
    return Always(Predicate("true", lambda x: np.full(x.shape[:-1], INACTIVE)))


# Random-stream tags of the two episode splits: "test" (judged) and "dev" (for choosing
# decoder settings, e.g. RCD's β); the streams never overlap.
SPLITS = {"test": (101, 202), "dev": (303, 404)}


def _split_tags(split: str) -> tuple:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
    return SPLITS[split]


def episodes_for(seed: int, n: int, config: WorldConfig = WorldConfig(), split: str = "test") -> list:
    """The ``n`` episodes of ``seed`` in ``split`` (episode k from ``default_rng([seed, k, tag])``)."""
    tag = _split_tags(split)[0]
    return [sample_episode(np.random.default_rng([seed, k, tag]), config) for k in range(n)]


def uniforms_for(seed: int, n: int, split: str = "test") -> np.ndarray:
    """Per-episode, per-step uniforms (n, T_MAX, N_UNIFORMS) shared by all decoders."""
    tag = _split_tags(split)[1]
    return np.stack([np.random.default_rng([seed, k, tag]).random((T_MAX, N_UNIFORMS)) for k in range(n)])


def _file_lock(name: str) -> FileLock:
    """A cross-process lock on ``name`` in the cache folder (:class:`filelock.FileLock`)."""
    return FileLock(cache_dir() / f"{name}.lock")


def policy_for(seed: int, *, n_demos: int = 2000, demo_seed: int = 12345, steps: int = 800,
               unsafe_frac: float = 0.15, device="cpu", **train_kw) -> NavTransformer:
    """The BC policy of ``seed`` (cached; demonstrations shared across policy seeds), on
    ``device``."""
    key = {"n": n_demos, "seed": demo_seed, "unsafe": unsafe_frac}
    with _file_lock(f"train_{n_demos}_{demo_seed}_{seed}_{steps}"):
        def demos():
            with _file_lock(f"demos_{n_demos}_{demo_seed}"):
                return load_or_make_demos(n_demos, demo_seed, unsafe_frac)
        return load_or_train(demos, key, seed, steps, device=device, **train_kw)


class UniformSafeDecoder:
    """HCD's safe set with a uniform draw inside it: the policy's probabilities are ignored.

    A random-restriction stand-in (the experiment's negative control, not a method of the
    paper): it masks exactly the tokens HCD masks, so it satisfies the specification whenever
    HCD does, but it keeps none of the policy's preferences among the safe tokens.
    """

    def __init__(self, spec, dynamics, fallback_token: int = ROT_L):
        self.inner = SafeDecoder(None, spec, dynamics, mode="hcd", fallback_token=fallback_token)

    def reset(self) -> "UniformSafeDecoder":
        self.inner.reset()
        return self

    def decode(self, logits, states, u=None):
        return self.inner.decode(torch.zeros_like(logits), states, u)


def make_decoder(name: str, spec, dynamics, *, alpha: float = 5.0, beta: float = 2.0,
                 r_clip: float = 1.0, delta: float = 0.0, greedy: bool = False, seed: int = 0):
    """Decoder by short name: ``uncon``, ``filter``, ``reject``, ``hcd``, ``hcd_delta``, ``rcd``,
    ``safe_uniform`` (:class:`UniformSafeDecoder`, a negative control)."""
    common = dict(greedy=greedy)
    if name == "safe_uniform":
        if greedy:
            raise ValueError("safe_uniform draws uniformly and has no greedy mode")
        return UniformSafeDecoder(spec, dynamics)
    if name == "uncon":
        return UnconstrainedDecoder(None, spec, dynamics, **common)
    if name == "filter":
        return FilterDecoder(None, spec, dynamics, fallback_token=ROT_L, **common)
    if name == "reject":
        return RejectionDecoder(None, spec, dynamics, max_tries=3, fallback_token=ROT_L, seed=seed, **common)
    if name in ("hcd", "hcd_delta"):
        return SafeDecoder(None, spec, dynamics, mode="hcd", delta=delta if name == "hcd_delta" else 0.0,
                           fallback_token=ROT_L, **common)
    if name == "rcd":
        return SafeDecoder(None, spec, dynamics, mode="rcd", alpha=alpha, beta=beta, r_clip=r_clip, **common)
    raise ValueError(f"unknown decoder {name!r}")


def rollout(policy: NavTransformer, episodes: list, family: str, decoder_name: str, *,
            uniforms: np.ndarray, mismatch: float = 0.0, env_seed: int = 0, shadow: str | None = None,
            **decoder_kw) -> dict:
    """Run one decoder on a batch of episodes and return per-episode metrics.

    Parameters
    ----------
    shadow : str, optional
        A second decoder (short name) that sees the same logits, realized states and
        uniforms at every step without acting. At each *intervention step* (a live step
        where either decoder's token differs from the unconstrained token) the paired
        difference ``log π(a_decoder) − log π(a_shadow)`` is accumulated.

    Returns
    -------
    dict of arrays (one entry per episode): ``sat``, ``rho``, ``success``, ``both``,
    ``cost``, ``length``, ``collisions``, ``interventions``, ``logp``, ``infeasible``,
    and scalars ``overhead_ms`` (decode time per step, excluding the policy forward),
    ``forward_ms``, ``tokens`` (the executed token matrix, for bit-for-bit checks); with
    ``shadow``: ``paired_diff`` (sum of paired log π differences per episode) and
    ``paired_n`` (intervention steps per episode).
    """
    env = LatticeNavEnv(episodes, mismatch=mismatch, seed=env_seed)
    spec = trivial_spec() if family == "free" else make_spec(episodes, family)
    decoder = make_decoder(decoder_name, spec, env.dynamics, **decoder_kw).reset()
    twin = None if shadow is None else make_decoder(shadow, spec, env.dynamics,
                                                    greedy=decoder_kw.get("greedy", False)).reset()
    obs, states = env.reset()
    b = len(episodes)
    cache = policy.start()
    device = next(policy.parameters()).device      # the policy runs there; decoding on the CPU
    prev = torch.full((b,), policy.bos, dtype=torch.long, device=device)
    traj = [states]
    executed = np.full((b, T_MAX), -1, dtype=np.int64)
    live_hist = np.zeros((b, T_MAX), dtype=bool)
    logp = np.zeros(b)
    interventions = np.zeros(b)
    collisions = np.zeros(b)
    infeasible = np.zeros(b)
    paired_diff, paired_n = np.zeros(b), np.zeros(b)
    decode_s = forward_s = 0.0
    n_steps = 0
    for t in range(T_MAX):
        live = ~env.done
        if not live.any():
            break
        t0 = time.perf_counter()
        with torch.no_grad():
            logits = policy.step(cache, torch.as_tensor(obs, dtype=torch.float32, device=device),
                                 prev).cpu()
        t1 = time.perf_counter()
        u = uniforms[:, t]
        tokens, info = decoder.decode(logits, states, u)
        t2 = time.perf_counter()
        forward_s += t1 - t0
        decode_s += t2 - t1
        n_steps += 1
        tokens_np = tokens.cpu().numpy()
        base = sample_tokens(logits, u[:, 0]).cpu().numpy()
        log_pi = torch.log_softmax(logits.double(), 1)
        logp += live * log_pi[torch.arange(b), tokens].numpy()
        interventions += live & (tokens_np != base)
        if twin is not None:
            other, _ = twin.decode(logits, states, u)
            at = live & ((tokens_np != base) | (other.cpu().numpy() != base))
            diff = (log_pi[torch.arange(b), tokens] - log_pi[torch.arange(b), other]).numpy()
            paired_diff += np.where(at, diff, 0.0)
            paired_n += at
        infeasible += live & info["infeasible"]
        executed[:, t] = np.where(live, tokens_np, -1)
        live_hist[:, t] = live
        obs, states, _, step_info = env.step(tokens_np)
        collisions += step_info["blocked"]
        traj.append(states)
        prev = tokens.to(device)
    trace = np.stack(traj, axis=1)  # (B, steps+1, 4); frozen after an episode ends
    length = live_hist.sum(1)
    if family == "free":
        rho = np.full(b, np.inf)
        cost = np.zeros(b)
    else:
        rho = spec.robustness(trace)
        invariants, _ = invariant_parts(spec)
        inst = np.min([psi.robustness_trace(trace) for psi, _, _ in invariants], axis=0)  # (B, steps+1)
        steps_live = np.concatenate([np.zeros((b, 1), bool), live_hist[:, :trace.shape[1] - 1]], 1)
        cost = ((~is_satisfied(inst)) & steps_live).sum(1)
    sat = is_satisfied(rho)
    return {
        "sat": sat, "rho": np.where(np.isfinite(rho), rho, np.nan), "success": env.success.copy(),
        "both": sat & env.success, "cost": cost, "length": length, "collisions": collisions,
        "interventions": interventions, "logp": logp / np.maximum(length, 1), "infeasible": infeasible,
        "overhead_ms": 1e3 * decode_s / max(n_steps, 1), "forward_ms": 1e3 * forward_s / max(n_steps, 1),
        "tokens": executed, **({"paired_diff": paired_diff, "paired_n": paired_n} if twin else {}),
    }
