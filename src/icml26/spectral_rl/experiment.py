"""Reproduction of *Impact of Connectivity on Laplacian Representations in RL* on gridworlds.

Parts (all exact linear algebra, CPU seconds):

- ``bounds`` (E1): B1–B4 (and B7) hold in every case; ``L1 = 0`` and ``UᵀDU = I``.
- ``trend`` (E2): on two rooms 11×21 with door widths 1…11 the mean normalized error ``e_1``
  falls as the Fiedler value λ₂ rises (Spearman ≤ −0.8), and the bounds fall strictly in λ₂.
- ``estimation`` (E3): the count estimator from trajectories: Davis–Kahan (B5) and the
  end-to-end decomposition (B6) hold; ``‖N̂ − N‖₂`` falls like T^{-1/2}; learned features'
  error approaches the exact one. A learned graph-drawing baseline is reported.
- ``misread`` (E4): ``I − ½(P + Pᵀ)`` does not annihilate constants and its eigenvectors are
  not D-orthogonal under a biased policy; the first eigenvectors drawn on the grid.
- ``scaling``: dense pipeline slope in n (O(n³) eigh), count estimator slope in T.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from icml26.core.device import cpu_only, job_device, uses_device
from icml26.core.experiment import Claim, Experiment, Part, Result, register
from icml26.core.stats import best_seconds, format_mean_std, loglog_slope
from icml26.core.validation import check_choice

from .baselines import GraphDrawingFeatures, proto_value_functions, random_features, rho_orthonormalize
from .bounds import (bound_violations, connectivity_bounds, end_to_end_bounds, estimation_bounds,
                     projection_error, rho_norm)
from .estimation import count_weights, estimate_normalized_laplacian, sample_trajectories
from .laplacian import laplacian_eigenpairs, misread_laplacian, symmetrized_laplacian
from .mdp import GridWorld, value_function

POLICY_CYCLE = ("uniform", "biased", "dirichlet")
BOUND_NAMES = ("B1", "B2", "B3", "B4", "B7")
#: Timed calls are batched to last at least this long (see core.stats.best_seconds); all
#: timings are CPU seconds of the job's process (clock="cpu"), best of ``repeats``, so the load
#: of other processes cannot flip a scaling claim (#33: the count-estimator slope read 0.100 in
#: one quick run and 0.722 in the next in wall time).
TIMING_MIN_SECONDS = 0.05
#: ``L1 = 0`` and ``UᵀDU = I`` must hold to this absolute tolerance.
IDENTITY_TOL = 1e-10


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _reward(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "goal":
        r = np.zeros(n)
        r[rng.integers(0, n)] = 1.0
        return r
    return rng.standard_normal(n)


def _identity_errors(P, spectrum) -> tuple[float, float]:
    evals, U, rho = spectrum
    L = symmetrized_laplacian(P, rho)
    l1 = float(np.abs(L @ np.ones(P.shape[0])).max())
    gram = U.T @ (rho[:, None] * U)
    return l1, float(np.abs(gram - np.eye(gram.shape[0])).max())


# -- E1: bounds hold everywhere --------------------------------------------------------------

@dataclass(frozen=True)
class BoundsConfig:
    n_pairs: int = 60                   # (environment, policy) pairs on two rooms 9×15
    grid: tuple = (9, 15)
    door_range: tuple = (1, 7)
    gammas: tuple = (0.5, 0.9, 0.99)
    ks: tuple = (1, 2, 4, 8, 16)
    n_large: int = 5                    # two rooms 11×21 with many goal rewards
    large_grid: tuple = (11, 21)
    large_rewards: int = 30
    large_ks: tuple = (1, 4, 8)
    large_gamma: float = 0.99           # Resolution: the spec does not name γ for this block


def run_bounds(config: BoundsConfig, seed: int) -> dict:
    rng = np.random.default_rng([seed, 1])
    violations = dict.fromkeys(BOUND_NAMES, 0)
    ratios, l1_max, gram_max, cases = [], 0.0, 0.0, 0
    records = []

    def check(P, spectrum, r, gamma, k):
        nonlocal cases
        b = connectivity_bounds(P, r, gamma, k, spectrum=spectrum)
        for name, bad in bound_violations(b).items():
            violations[name] += int(bad)
        ratios.append(b["e_k"] / b["B4"] if np.isfinite(b["B4"]) and b["B4"] > 0 else 0.0)
        records.append({"e_k": b["e_k"], "B4": b["B4"], "B1": b["B1"]})
        cases += 1

    for i in range(config.n_pairs):
        door = int(rng.integers(config.door_range[0], config.door_range[1] + 1))
        world = GridWorld.two_rooms(*config.grid, door=door)
        P = world.transition(POLICY_CYCLE[i % 3], seed=rng)
        spectrum = laplacian_eigenpairs(P)
        l1, gram = _identity_errors(P, spectrum)
        l1_max, gram_max = max(l1_max, l1), max(gram_max, gram)
        r = _reward("goal" if i % 2 == 0 else "gaussian", world.n_states, rng)
        for gamma in config.gammas:
            for k in config.ks:
                check(P, spectrum, r, gamma, k)
    for i in range(config.n_large):
        door = int(rng.integers(1, config.large_grid[0] + 1))
        world = GridWorld.two_rooms(*config.large_grid, door=door)
        P = world.transition(POLICY_CYCLE[i % 3], seed=rng)
        spectrum = laplacian_eigenpairs(P)
        l1, gram = _identity_errors(P, spectrum)
        l1_max, gram_max = max(l1_max, l1), max(gram_max, gram)
        for _ in range(config.large_rewards):
            r = _reward("goal", world.n_states, rng)
            for k in config.large_ks:
                check(P, spectrum, r, config.large_gamma, k)
    # a thinned sample of (e_k, B4) pairs for the figure
    step = max(1, len(records) // 300)
    return {"cases": cases, "violations": violations, "L1_max": l1_max, "gram_max": gram_max,
            "ratio_median": float(np.median(ratios)), "ratio_max": float(np.max(ratios)),
            "sample": records[::step]}


def summarize_bounds(jobs, config) -> Result:
    total = {name: sum(j.metrics["violations"][name] for j in jobs) for name in BOUND_NAMES}
    cases = sum(j.metrics["cases"] for j in jobs)
    l1 = max(j.metrics["L1_max"] for j in jobs)
    gram = max(j.metrics["gram_max"] for j in jobs)
    table = pd.DataFrame([{"seed": j.seed, "cases": j.metrics["cases"],
                           **{f"{n} violations": j.metrics["violations"][n] for n in BOUND_NAMES},
                           "median e_k/B4": j.metrics["ratio_median"],
                           "max e_k/B4": j.metrics["ratio_max"],
                           "max |L1|": j.metrics["L1_max"], "max |UᵀDU−I|": j.metrics["gram_max"]}
                          for j in jobs])
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.5, 4))
    e = np.array([s["e_k"] for j in jobs for s in j.metrics["sample"]])
    b4 = np.array([s["B4"] for j in jobs for s in j.metrics["sample"]])
    keep = np.isfinite(b4) & (e > 0)
    ax.loglog(b4[keep], e[keep], ".", ms=3, alpha=0.5, label="cases")
    lim = [min(b4[keep].min(), e[keep].min()), max(b4[keep].max(), e[keep].max())]
    ax.loglog(lim, lim, "k--", lw=1, label="error = bound")
    ax.set_xlabel("combined bound B4")
    ax.set_ylabel("measured projection error e_k")
    ax.set_title("Every case lies below the bound")
    ax.legend()
    fig.tight_layout()
    n_checks = cases * 4
    claims = [
        Claim.at_most("E1 violations of B1, B3, B4 (rel. tol 1e-9)",
                      total["B1"] + total["B3"] + total["B4"], 0,
                      paper="bounds hold", note=f"{cases} cases × 3 bounds"),
        Claim.at_most("E1 violations of the energy identity B2", total["B2"], 0,
                      paper="exact identity", note=f"{cases} cases; |E(V) − B2| ≤ 1e-9·(1 + E(V))"),
        Claim.at_most("E1 max |L1|", l1, IDENTITY_TOL, paper="L1 = 0"),
        Claim.at_most("E1 max |UᵀDU − I|", gram, IDENTITY_TOL, paper="UᵀDU = I"),
        Claim.at_most("E1 violations of the TD fixed-point bound B7 (extra)", total["B7"], 0,
                      paper="Tsitsiklis–Van Roy", note="not in the paper's claims; a standard theorem"),
    ]
    notes = [f"{cases} cases, {n_checks} bound checks (B1–B4) over {len(jobs)} seed(s); "
             f"median e_k/B4 = {np.median([j.metrics['ratio_median'] for j in jobs]):.3f}, "
             f"max {max(j.metrics['ratio_max'] for j in jobs):.3f}"]
    return Result(tables={"E1 bound checks per seed": table}, figures={"E1 error vs bound": fig},
                  claims=claims, notes=notes)


# -- E2: error trend vs the Fiedler value --------------------------------------------------

@dataclass(frozen=True)
class TrendConfig:
    """E2 across door widths.

    ``goal_rule`` (issue #39): ``"all"`` (default) gates the Spearman claim on e_1 averaged over
    **every** goal cell of each grid (deterministic: no goal-placement noise); ``"random"`` is
    the old rule (``n_rewards`` random goals per grid, worst seed), reported beside either way.
    """

    grid: tuple = (11, 21)
    doors: tuple = (1, 2, 3, 4, 5, 7, 9, 11)
    policies: tuple = ("uniform", "biased")
    gamma: float = 0.99
    n_rewards: int = 30
    ks: tuple = (1, 4, 8)
    goal_rule: str = "all"


def run_trend(config: TrendConfig, seed: int) -> dict:
    rng = np.random.default_rng([seed, 2])
    # Reported variant: the same goal cells on every grid (free for every door width), so the
    # door is the only thing that changes between grids (common random numbers).
    narrowest = GridWorld.two_rooms(*config.grid, door=min(config.doors))
    common_cells = narrowest.cells[np.random.default_rng([seed, 22]).choice(
        narrowest.n_states, size=config.n_rewards, replace=False)]
    rows = []
    for policy in config.policies:
        for door in config.doors:
            world = GridWorld.two_rooms(*config.grid, door=door)
            P = world.transition(policy)
            spectrum = laplacian_eigenpairs(P)
            evals, U, rho = spectrum
            kmax = max(config.ks)
            pvf = proto_value_functions(P, kmax)
            rand = random_features(world.n_states, kmax, rho, rng)
            acc = {f"e{k}": [] for k in config.ks}
            acc.update({f"pvf_e{k}": [] for k in config.ks if k > 1})
            acc.update({f"rand_e{k}": [] for k in config.ks if k > 1})
            acc.update(B3=[], B4_k1=[], e1_common=[])
            for row, col in common_cells:
                r = np.zeros(world.n_states)
                r[world.state_of(int(row), int(col))] = 1.0
                b = connectivity_bounds(P, r, config.gamma, 1, spectrum=spectrum)
                acc["e1_common"].append(b["e_k"] / b["r_tilde_norm"])
            for _ in range(config.n_rewards):
                r = _reward("goal", world.n_states, rng)
                V = value_function(P, r, config.gamma)
                for k in config.ks:
                    b = connectivity_bounds(P, r, config.gamma, k, spectrum=spectrum)
                    scale = b["r_tilde_norm"]
                    acc[f"e{k}"].append(b["e_k"] / scale)
                    if k == 1:
                        acc["B3"].append(b["B3"] / scale)
                        acc["B4_k1"].append(b["B4"] / scale)
                    else:
                        acc[f"pvf_e{k}"].append(
                            projection_error(V, rho_orthonormalize(pvf[:, :k], rho), rho) / scale)
                        acc[f"rand_e{k}"].append(
                            projection_error(V, rand[:, :k], rho) / scale)
            all_goals = []
            for state in range(world.n_states):   # every goal cell: the deterministic average
                r = np.zeros(world.n_states)
                r[state] = 1.0
                b = connectivity_bounds(P, r, config.gamma, 1, spectrum=spectrum)
                all_goals.append(b["e_k"] / b["r_tilde_norm"])
            acc["e1_all_goals"] = all_goals
            rows.append({"policy": policy, "door": door, "lambda2": float(evals[1]),
                         **{name: float(np.mean(v)) for name, v in acc.items()}})
    return {"rows": rows}


def summarize_trend(jobs, config) -> Result:
    frame = pd.DataFrame([dict(r, seed=j.seed) for j in jobs for r in j.metrics["rows"]])
    claims, notes = [], []
    corr = {}
    check_choice(config.goal_rule, "goal_rule", ("all", "random"))
    for policy in config.policies:
        for k in config.ks:
            vals = []
            for _, g in frame[frame.policy == policy].groupby("seed"):
                vals.append(float(spearmanr(g["lambda2"], g[f"e{k}"]).statistic))
            corr[(policy, k)] = vals
        random_claim = Claim.at_most(f"E2 Spearman(λ₂, mean e_1 over {config.n_rewards} random goals), "
                                     f"{policy} (worst seed)", max(corr[(policy, 1)]), -0.8,
                                     paper="−0.93 (prototype)")
        if config.goal_rule == "random":   # the old rule (#39): random goals gate the claim
            claims.append(random_claim)
        else:
            g0 = frame[(frame.policy == policy) & (frame.seed == frame.seed.min())]
            rho_all = float(spearmanr(g0["lambda2"], g0["e1_all_goals"]).statistic)
            claims.append(Claim.at_most(f"E2 Spearman(λ₂, e_1 averaged over every goal cell), {policy}",
                                        rho_all, -0.8, paper="−0.93 (prototype)",
                                        note=f"deterministic (every goal cell of each grid); the "
                                             f"{config.n_rewards}-random-goal variant, reported: per seed "
                                             + ", ".join(f"{v:.2f}" for v in corr[(policy, 1)])))
        monotone = True
        for _, g in frame[frame.policy == policy].groupby("seed"):
            g = g.sort_values("lambda2")
            for col in ("B3", "B4_k1"):
                monotone &= bool(np.all(np.diff(g[col].to_numpy()) < 0))
            monotone &= bool(np.all(np.diff(g["lambda2"].to_numpy()) > 0))
        claims.append(Claim(f"E2 B3 and B4 strictly decreasing in λ₂, {policy}", "bounds fall with λ₂",
                            "yes" if monotone else "no", "strictly decreasing", monotone))
        common = [float(spearmanr(g["lambda2"], g["e1_common"]).statistic)
                  for _, g in frame[frame.policy == policy].groupby("seed")]
        notes.append(f"{policy}: per-seed Spearman(λ₂, mean e_1) = "
                     + ", ".join(f"{v:.2f}" for v in corr[(policy, 1)])
                     + "; with the same goal cells on every grid (reported variant): "
                     + ", ".join(f"{v:.2f}" for v in common))
        for k in config.ks[1:]:
            notes.append(f"{policy}: Spearman(λ₂, mean e_{k}) = "
                         f"{np.mean(corr[(policy, k)]):.2f} (reported; governed by λ_(k+1))")
    mean = frame.groupby(["policy", "door"], sort=False).mean(numeric_only=True).reset_index()
    table = mean.drop(columns=["seed"]).rename(columns={"lambda2": "λ₂"})
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, policy in zip(axes, config.policies):
        g = mean[mean.policy == policy].sort_values("lambda2")
        ax.loglog(g["lambda2"], g["e1"], "o-", label="e_1 / ‖r̃‖ (measured)")
        ax.loglog(g["lambda2"], g["B3"], "s--", label="B3 / ‖r̃‖ (bound)")
        for k in config.ks[1:]:
            ax.loglog(g["lambda2"], g[f"e{k}"], ".-", alpha=0.7, label=f"e_{k} / ‖r̃‖")
        ax.set_xlabel("Fiedler value λ₂ (wider door →)")
        ax.set_ylabel("normalized error")
        ax.set_title(f"{policy} policy")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return Result(tables={"E2 mean normalized error by door width": table},
                  figures={"E2 error and bound vs Fiedler value": fig}, claims=claims, notes=notes)


# -- E3: estimation from trajectories --------------------------------------------------------

@dataclass(frozen=True)
class EstimationConfig:
    grid: tuple = (9, 15)
    door: int = 3
    policies: tuple = ("uniform", "biased")
    sample_sizes: tuple = (10_000, 100_000, 1_000_000)
    ks: tuple = (2, 4, 8)
    gamma: float = 0.99
    n_chains: int = 256
    gap_min: float = 0.01               # the |ê_k − e_k| bar applies where δ_k ≥ gap_min
    gdo_steps: int = 3000               # learned graph-drawing baseline (report only); 0 = off
    gdo_T: int = 100_000
    gdo_k: int = 4
    # Issue #39: the T^(-1/2) slope bar on ‖N̂ − N‖₂ is calibrated on the uniform policy; on a
    # policy with near-unvisited states (ρ_min ~ 1e-6) each unvisited state adds an O(1) block to
    # ‖N̂ − N‖₂ until T ≳ 1/ρ_min, so there the bar gates the ‖sin Θ‖_F slope (k = ks[0]) and
    # ‖N̂ − N‖₂ is reported with the count of unvisited states. "norm_diff" is the old rule.
    slope_rule: str = "sin_theta"
    norm_diff_policies: tuple = ("uniform",)


def tasks_estimation(config: EstimationConfig) -> list:
    return [{"policy": p} for p in config.policies]


@uses_device
def run_estimation(config: EstimationConfig, seed: int, task: dict) -> dict:
    policy = task["policy"]
    rng = np.random.default_rng([seed, 3, config.policies.index(policy)])
    world = GridWorld.two_rooms(*config.grid, door=config.door)
    P = world.transition(policy)
    evals, U, rho = laplacian_eigenpairs(P)
    N = symmetrized_laplacian(P, rho, "normalized").toarray()
    r = _reward("goal", world.n_states, rng)
    V = value_function(P, r, config.gamma)
    rows = []
    for T in config.sample_sizes:
        s, s2 = sample_trajectories(P, T, n_chains=config.n_chains, rng=rng, rho=rho)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _, degree = count_weights(s, s2, world.n_states, unvisited="isolate")
            N_hat = estimate_normalized_laplacian(s, s2, world.n_states, unvisited="isolate")
        for k in config.ks:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                est = estimation_bounds(N, N_hat, k)
            b4 = connectivity_bounds(P, r, config.gamma, k, spectrum=(evals, U, rho))["B4"]
            e2e = end_to_end_bounds(V, rho, est["Phi"], est["Phi_hat"], est["sin_theta_2"], b4,
                                    est["DK_bound"])
            rows.append({"T": T, "k": k, "unvisited": int(np.sum(degree <= 0)),
                         "norm_diff_2": est["norm_diff_2"], "sin_theta_F": est["sin_theta_F"],
                         "DK_bound": est["DK_bound"], "gap": est["gap"],
                         "B5_holds": bool(est["sin_theta_F"] <= est["DK_bound"] * (1 + 1e-9)),
                         "e_k": e2e["e_k"], "e_hat": e2e["e_hat"], "V_norm": e2e["V_norm"],
                         "B6_holds": bool(e2e["e_hat"] <= e2e["measured_bound"] * (1 + 1e-9)
                                          and e2e["measured_bound"] <= e2e["full_bound"] * (1 + 1e-9))})
    gdo = {}
    if config.gdo_steps > 0:
        s, s2 = sample_trajectories(P, config.gdo_T, n_chains=config.n_chains, rng=rng, rho=rho)
        learner = GraphDrawingFeatures(n_components=config.gdo_k, n_steps=config.gdo_steps,
                                       seed=seed, device=job_device()).fit(s, s2, world.n_states)
        Phi_hat = learner.orthonormal_basis(rho)
        Phi = np.sqrt(rho)[:, None] * U[:, :config.gdo_k]
        from .bounds import subspace_sin_theta

        sin_f, sin_2 = subspace_sin_theta(Phi, Phi_hat)
        e2e = end_to_end_bounds(V, rho, Phi, Phi_hat, sin_2, 0.0, 0.0)
        gdo = {"sin_theta_F": sin_f, "e_hat": e2e["e_hat"], "e_k": e2e["e_k"],
               "V_norm": e2e["V_norm"]}
    return {"policy": policy, "rows": rows, "gdo": gdo}


def summarize_estimation(jobs, config) -> Result:
    check_choice(config.slope_rule, "slope_rule", ("sin_theta", "norm_diff"))
    frame = pd.DataFrame([dict(r, policy=j.metrics["policy"], seed=j.seed)
                          for j in jobs for r in j.metrics["rows"]])
    claims = [
        Claim.at_least("E3 share of runs where B5 (Davis–Kahan) holds", float(frame["B5_holds"].mean()),
                       1.0, paper="holds", note=f"{len(frame)} (T, k, seed, policy) runs"),
        Claim.at_least("E3 share of runs where B6 (end to end) holds", float(frame["B6_holds"].mean()),
                       1.0, paper="holds"),
    ]
    notes = []
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.8, 3.8))
    for policy in config.policies:
        g = frame[(frame.policy == policy) & (frame.k == config.ks[0])]
        by_t = g.groupby("T")["norm_diff_2"].mean()
        slope = loglog_slope(by_t.index.values, by_t.values)
        unvisited = g.groupby("T")["unvisited"].mean()
        unvisited_note = "unvisited states by T: " + ", ".join(f"{int(T):g}: {u:.1f}" for T, u in unvisited.items())
        sin_by_t = g.groupby("T")["sin_theta_F"].mean()
        sin_slope = loglog_slope(sin_by_t.index.values, sin_by_t.values)
        norm_claim = Claim.between(f"E3 slope of log‖N̂ − N‖₂ vs log T, {policy}", slope, -0.7, -0.3,
                                   paper="≈ −0.46 (prototype, uniform)", note=unvisited_note)
        if config.slope_rule == "norm_diff" or policy in config.norm_diff_policies:
            claims.append(norm_claim)
        else:
            claims.append(Claim.between(f"E3 slope of log‖sin Θ‖_F (k={config.ks[0]}) vs log T, {policy}",
                                        sin_slope, -0.7, -0.3, paper="the estimated subspace converges "
                                        "(T^(-1/2); the ‖N̂ − N‖₂ bar was calibrated on the uniform policy)",
                                        note=f"‖N̂ − N‖₂ slope {slope:.3f} (reported: {unvisited_note}; each "
                                             f"unvisited state adds an O(1) block to ‖N̂ − N‖₂)"))
        big = frame[(frame.policy == policy) & (frame["T"] == max(config.sample_sizes))]
        eligible = big[big.gap >= config.gap_min]
        if len(eligible):
            worst = float((np.abs(eligible.e_hat - eligible.e_k) / eligible.V_norm).max())
            claims.append(Claim.at_most(
                f"E3 max |ê_k − e_k| / ‖V‖_ρ at T = {max(config.sample_sizes):g}, δ_k ≥ "
                f"{config.gap_min:g}, {policy}", worst, 0.05, paper="ê_k → e_k",
                note="k with δ_k ≥ gap_min: " + ", ".join(str(k) for k in sorted(set(eligible.k)))))
        else:
            notes.append(f"{policy}: no k in {config.ks} has δ_k ≥ {config.gap_min}: the ê_k → e_k "
                         "bar has no case")
        ax.loglog(by_t.index, by_t.values, "o-", label=f"‖N̂ − N‖₂, {policy}")
        sin = g.groupby("T")["sin_theta_F"].mean()
        ax.loglog(sin.index, sin.values, "s--", label=f"‖sin Θ‖_F (k={config.ks[0]}), {policy}")
    ts = np.array(config.sample_sizes, dtype=float)
    ax.loglog(ts, frame["norm_diff_2"].max() * np.sqrt(ts[0] / ts), "k:", lw=1, label="T^(-1/2)")
    ax.set_xlabel("transitions T")
    ax.set_ylabel("estimation error")
    ax.set_title("Count estimator converges like T^(-1/2)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    table = frame.groupby(["policy", "T", "k"], sort=False).agg(
        unvisited=("unvisited", "mean"),
        norm_diff_2=("norm_diff_2", lambda v: format_mean_std(v, 4)),
        sin_theta_F=("sin_theta_F", lambda v: format_mean_std(v, 4)),
        DK_bound=("DK_bound", "median"), gap=("gap", "mean"),
        e_k=("e_k", "mean"), e_hat=("e_hat", "mean"),
        B5=("B5_holds", "mean"), B6=("B6_holds", "mean")).reset_index()
    tables = {"E3 estimation error and bounds": table}
    gdo = [dict(j.metrics["gdo"], policy=j.metrics["policy"], seed=j.seed) for j in jobs
           if j.metrics["gdo"]]
    if gdo:
        g = pd.DataFrame(gdo)
        count_rows = frame[(frame["T"] == config.gdo_T) & (frame.k == config.gdo_k)]
        gdo_table = []
        for policy in config.policies:
            gp, cp = g[g.policy == policy], count_rows[count_rows.policy == policy]
            gdo_table.append({"policy": policy, "features": f"learned GDO ({config.gdo_steps} Adam steps)",
                              "sin_theta_F": format_mean_std(gp.sin_theta_F, 3),
                              "e_hat / ‖V‖": format_mean_std(gp.e_hat / gp.V_norm, 3)})
            gdo_table.append({"policy": policy, "features": "count estimator",
                              "sin_theta_F": format_mean_std(cp.sin_theta_F, 3),
                              "e_hat / ‖V‖": format_mean_std(cp.e_hat / cp.V_norm, 3)})
            gdo_table.append({"policy": policy, "features": "exact eigenvectors",
                              "sin_theta_F": "0", "e_hat / ‖V‖": format_mean_std(gp.e_k / gp.V_norm, 3)})
        tables[f"E3 learned vs counted features at T = {config.gdo_T:g}, k = {config.gdo_k}"] = \
            pd.DataFrame(gdo_table)
    return Result(tables=tables, figures={"E3 estimation error vs T": fig}, claims=claims, notes=notes)


# -- E4: the misreading control --------------------------------------------------------------

@dataclass(frozen=True)
class MisreadConfig:
    grid: tuple = (9, 15)
    door: int = 3
    k: int = 8
    gamma: float = 0.99


def run_misread(config: MisreadConfig, seed: int) -> dict:
    rng = np.random.default_rng([seed, 4])
    world = GridWorld.two_rooms(*config.grid, door=config.door)
    out = {}
    for policy in ("biased", "uniform"):
        P = world.transition(policy)
        evals, U, rho = laplacian_eigenpairs(P, k=config.k)
        L = symmetrized_laplacian(P, rho)
        M = misread_laplacian(P).toarray()
        ones = np.ones(world.n_states)
        mvals, mvecs = np.linalg.eigh(0.5 * (M + M.T))
        Um = mvecs[:, :config.k] / np.sqrt(np.sum(rho[:, None] * mvecs[:, :config.k] ** 2, axis=0))
        gram_m = Um.T @ (rho[:, None] * Um)
        gram = U.T @ (rho[:, None] * U)
        r = _reward("goal", world.n_states, rng)
        V = value_function(P, r, config.gamma)
        out[policy] = {
            "misread_const_residual": float(np.linalg.norm(M @ ones)),
            "correct_const_residual": float(np.linalg.norm(L @ ones)),
            "misread_gram_error": float(np.abs(gram_m - np.eye(config.k)).max()),
            "correct_gram_error": float(np.abs(gram - np.eye(config.k)).max()),
            "e_k_correct": projection_error(V, U, rho) / rho_norm(V, rho),
            "e_k_misread": projection_error(V, rho_orthonormalize(Um, rho), rho) / rho_norm(V, rho),
            "u2_correct": world.draw(U[:, 1]).tolist(),
            "u2_misread": world.draw(Um[:, 1]).tolist(),
            "u3_correct": world.draw(U[:, 2]).tolist(),
        }
    return out


def summarize_misread(jobs, config) -> Result:
    m = jobs[0].metrics
    b, u = m["biased"], m["uniform"]
    claims = [
        Claim.at_least("E4 ‖(I − ½(P + Pᵀ))1‖₂, biased policy", b["misread_const_residual"], 1e-3,
                       paper="misreading does not annihilate constants"),
        Claim.at_most("E4 ‖L1‖, biased policy (correct operator)", b["correct_const_residual"], 1e-12,
                      paper="L1 = 0"),
        Claim.at_least("E4 D-orthonormality violation of misread features, biased", b["misread_gram_error"],
                       1e-3, paper="misread features are not D-orthogonal"),
        Claim.at_most("E4 D-orthonormality error of correct features, biased", b["correct_gram_error"],
                      IDENTITY_TOL, paper="UᵀDU = I"),
    ]
    rows = []
    for policy, d in m.items():
        rows.append({"policy": policy, "‖M1‖ misread": d["misread_const_residual"],
                     "‖L1‖ correct": d["correct_const_residual"],
                     "D-orth. error misread": d["misread_gram_error"],
                     "D-orth. error correct": d["correct_gram_error"],
                     f"e_{config.k}/‖V‖ correct": d["e_k_correct"],
                     f"e_{config.k}/‖V‖ misread": d["e_k_misread"]})
    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(8, 4.4))
    panels = [("uniform", "u2_correct", "uniform policy: u₂"), ("uniform", "u3_correct", "uniform policy: u₃"),
              ("biased", "u2_correct", "biased policy: u₂ (ρ-weighted)"),
              ("biased", "u2_misread", "biased policy: u₂ of I − ½(P + Pᵀ)")]
    for ax, (policy, key, title) in zip(axes.ravel(), panels):
        im = ax.imshow(np.array(m[policy][key], dtype=float), cmap="coolwarm")
        ax.set_title(title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        fig.colorbar(im, ax=ax, fraction=0.03)
    fig.suptitle("First eigenvectors on the two-room grid (walls blank)", fontsize=10)
    fig.tight_layout()
    notes = ["With the uniform policy P is symmetric and ρ uniform, so the misreading coincides with "
             "the correct operator (control); under the biased policy it does not."]
    return Result(tables={"E4 correct vs misread operator": pd.DataFrame(rows)},
                  figures={"E4 eigenvectors drawn on the grid": fig}, claims=claims, notes=notes)


# -- scaling -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingConfig:
    rooms: tuple = ((10, 10), (10, 20), (20, 20), (20, 40))   # n = 100, 200, 400, 800
    sample_sizes: tuple = (100_000, 300_000, 1_000_000)
    repeats: int = 5


@cpu_only("a CPU-seconds measurement")
def run_scaling(config: ScalingConfig, seed: int) -> dict:
    rng = np.random.default_rng([seed, 5])
    dense = []
    for h, w in config.rooms:
        world = GridWorld.open_room(h, w)
        r = rng.standard_normal(world.n_states)

        def pipeline():
            P = world.transition("biased")
            evals, U, rho = laplacian_eigenpairs(P, method="dense")
            symmetrized_laplacian(P, rho)
            value_function(P, r, 0.99)

        dense.append({"n": world.n_states, "seconds": best_seconds(pipeline, config.repeats, TIMING_MIN_SECONDS,
                                                                     clock="cpu")})
    world = GridWorld.two_rooms(9, 15, door=3)
    P = world.transition("uniform")
    counts = []
    for T in config.sample_sizes:
        s, s2 = sample_trajectories(P, T, rng=rng)
        counts.append({"T": T, "seconds": best_seconds(lambda: count_weights(s, s2, world.n_states),
                                                       config.repeats, TIMING_MIN_SECONDS, clock="cpu"),
                       "sample_seconds": best_seconds(lambda: sample_trajectories(P, T, rng=0), 1,
                                                      min_seconds=0.0, clock="cpu")})
    return {"dense": dense, "counts": counts}


def summarize_scaling(jobs, config) -> Result:
    m = jobs[0].metrics
    dense, counts = pd.DataFrame(m["dense"]), pd.DataFrame(m["counts"])
    slope_dense = loglog_slope(dense.n, dense.seconds)
    slope_count = loglog_slope(counts["T"], counts.seconds)
    slope_sample = loglog_slope(counts["T"], counts.sample_seconds)
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.3))
    axes[0].loglog(dense.n, dense.seconds, "o-")
    axes[0].set_xlabel("states n")
    axes[0].set_ylabel("seconds (P, ρ, L, eigh, V)")
    axes[0].set_title(f"dense pipeline, slope {slope_dense:.2f}")
    axes[1].loglog(counts["T"], counts.seconds, "o-", label="count estimator")
    axes[1].loglog(counts["T"], counts.sample_seconds, "s--", label="sampler")
    axes[1].set_xlabel("transitions T")
    axes[1].set_ylabel("seconds")
    axes[1].set_title(f"count estimator, slope {slope_count:.2f}")
    axes[1].legend()
    fig.tight_layout()
    claims = [Claim.at_most("scaling: dense pipeline log-log slope in n", slope_dense, 3.3,
                            paper="O(n³) eigh"),
              Claim.at_most("scaling: count estimator log-log slope in T", slope_count, 1.15,
                            paper="O(T)")]
    notes = [f"sampler slope in T: {slope_sample:.2f} (reported)"]
    return Result(tables={"scaling: dense pipeline": dense, "scaling: count estimator": counts},
                  figures={"scaling: time vs size": fig}, claims=claims, notes=notes)


EXPERIMENT = register(Experiment(
    slug="spectral_rl",
    title="Impact of Connectivity on Laplacian Representations in Reinforcement Learning",
    parts=[
        Part(name="bounds", run=run_bounds, summarize=summarize_bounds,
             quick=BoundsConfig(n_pairs=6, n_large=1, large_rewards=3), full=BoundsConfig(),
             seeds=(0, 1, 2), quick_seeds=(0,),
             description="E1: the certified bounds B1–B4 (and B7) hold in every case"),
        Part(name="trend", run=run_trend, summarize=summarize_trend,
             quick=TrendConfig(doors=(1, 3, 7, 11), n_rewards=4), full=TrendConfig(),
             seeds=(0, 1, 2), quick_seeds=(0,),
             description="E2: VFA error falls with the Fiedler value λ₂ across door widths"),
        Part(name="estimation", run=run_estimation, summarize=summarize_estimation,
             tasks=tasks_estimation,
             quick=EstimationConfig(sample_sizes=(10_000, 100_000), ks=(2, 4), gdo_steps=200,
                                    gdo_T=10_000),
             full=EstimationConfig(), seeds=(0, 1, 2, 3, 4), quick_seeds=(0,),
             description="E3: count estimator from trajectories, Davis–Kahan and end-to-end bounds"),
        Part(name="misread", run=run_misread, summarize=summarize_misread,
             quick=MisreadConfig(), full=MisreadConfig(), seeds=(0,), quick_seeds=(0,),
             description="E4: the misread Laplacian I − ½(P + Pᵀ) as a negative control"),
        Part(name="scaling", run=run_scaling, summarize=summarize_scaling,
             quick=ScalingConfig(rooms=((10, 10), (10, 20)), sample_sizes=(30_000, 100_000), repeats=2),
             full=ScalingConfig(), seeds=(0,), quick_seeds=(0,),
             description="dense pipeline slope in n, count estimator slope in T"),
    ],
    claims=["the linear VFA error with Laplacian features is bounded by a quantity that falls "
            "with the algebraic connectivity λ₂",
            "the extra error of estimated eigenvectors is bounded (Davis–Kahan) and vanishes with data",
            "the symmetrized MDP Laplacian must be weighted by ρ (the plain-transpose reading is wrong)"],
    reference="Giorgi, Olivieri, Jiang, Toni & Papini. Impact of Connectivity on Laplacian "
              "Representations in Reinforcement Learning. ICML 2026 (arXiv 2603.08558).",
))
