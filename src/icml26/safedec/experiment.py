"""Reproduction of SafeDec (ICML 2026) at CPU scale: experiments E1–E5 of the spec (§6).

E1 main table (avoid / geofence / free families; Uncon, Filter, Reject(3), HCD, RCD),
E2 α sweep, E3 dynamics mismatch (with HCD-δ), E4 exact conditioning on a tiny world,
E5 decode overhead and scaling. All decoders share maps, starts, goals and per-step
uniforms (common random numbers). The policy's training recipe is chosen on dev seeds by a
rule fixed in code (:data:`DEV_RECIPES`, :data:`DEV_METRIC`, :func:`choose_recipe`; opt-in
part ``dev``) and used by every part through :data:`CHOSEN_RECIPE`.
"""

from __future__ import annotations

import copy
import functools
import dataclasses
import time
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import torch
from scipy import stats

from ..core.device import cpu_only, job_device, uses_device
from ..core.claims import Measurement
from ..core.experiment import Experiment, Part, Result, register
from ..core.figures import subplots
from ..core.stats import loglog_slope, paired_t_interval, summary_table
from .data import CELL, GRID, N_TOKENS, STOP, ROT_L, ROT_R, FWD, FAST, BACK, WorldConfig, lattice_step
from .decoding import SafeDecoder
from .baselines import RejectionDecoder
from .exact import exact_sequence_laws, total_variation
from .policy import NavTransformer
from .rollout import episodes_for, policy_for, rollout, uniforms_for
from .stl import Always, And, Predicate

PAPER = ("P. Kapoor, A. Ganlath, M. Clifford, C. Liu, S. Scherer, E. Kang. SafeDec: Constrained "
         "Decoding for Safe Autoregressive Generalist Robot Navigation Policies. ICML 2026, "
         "arXiv:2509.01728.")
METRICS = ("sat", "success", "both", "rho", "cost", "length", "collisions", "interventions", "logp",
           "infeasible")


def _summ(m: dict) -> dict:
    out = {k: float(np.mean(m[k][np.isfinite(m[k])])) if np.isfinite(m[k]).any() else float("nan")
           for k in METRICS}
    for k in ("sat", "success", "both"):
        out[k] *= 100.0
    won = np.asarray(m["success"], dtype=bool)
    out["success_length"] = float(np.mean(m["length"][won])) if won.any() else float("nan")
    out["overhead_ms"] = float(m["overhead_ms"])
    out["forward_ms"] = float(m["forward_ms"])
    return out


# -- the policy's training recipe, chosen on dev seeds ---------------------------------------------

#: The spec's recipe with this package's deviations (2,000 steps, no dropout; spec §5: 800 steps,
#: dropout 0.1, which reached 1–18 % free success here). Every recipe below overrides it.
BASE_RECIPE = {"n_demos": 2000, "train_steps": 2000, "dropout": 0.0, "label_smoothing": 0.1,
               "goal_features": False}

#: Seeds of the recipe search: (stage 1, stage 2). Never the test seeds of the claims (0–4); a
#: dev seed trains its own policies and is judged on its own dev-split episodes.
DEV_SEEDS = (100, 101)

#: The candidate recipes, fixed before any test seed ran with them. They answer the diagnosis of
#: the recorded policy on dev seed 100 (free family, 200 dev episodes, τ = 1): 57 % of episodes
#: STOP before the goal — half of them far from it, at the label-smoothing floor
#: P(STOP) = 0.1/7 ≈ 1.4 % per step; half 2–3 cells from it, where the (g − p)/8 encoding tells
#: neighbouring cells apart by 0.03 input units — and 5 % (greedy 20 %) never stop.
DEV_RECIPES = {
    "spec": {},                                                      # the recorded policy
    "ls0": {"label_smoothing": 0.0},                                 # no label smoothing
    "ls0_goal": {"label_smoothing": 0.0, "goal_features": True},     # + goal offset in cells
    "ls0_goal_4k": {"label_smoothing": 0.0, "goal_features": True, "n_demos": 4000},  # + 2× demos
}

#: The dev rule (written before the search ran): stage 1 trains every recipe on DEV_SEEDS[0] and
#: scores it by the sampled (τ = 1, the spec's acceptance) success rate on the *free* family over
#: ``DevConfig.episodes`` dev-split episodes; the recipe with the highest score is chosen (ties:
#: the earlier recipe in DEV_RECIPES, the simpler one). Stage 2 trains the chosen recipe on
#: DEV_SEEDS[1] and reports its dev score there (a confirmation, not a second choice). The
#: choice then applies to every test seed; the competence control on the test seeds still gates
#: the success-rate claims.
DEV_METRIC = "success"

#: The recipe the claims use: the dev part's choice (``icml26 run safedec --exp dev``). Dev free
#: SR (sampled, %) on seed 100: spec 40.5, ls0 56.5, ls0_goal 77.0, ls0_goal_4k 79.5 (chosen);
#: confirmed on seed 101: 88.5. ``--set label_smoothing=0.1 goal_features=false n_demos=2000``
#: restores the earlier policy ("spec").
CHOSEN_RECIPE = "ls0_goal_4k"


def recipe(name: str) -> dict:
    """The full training recipe ``name`` of :data:`DEV_RECIPES` (over :data:`BASE_RECIPE`)."""
    if name not in DEV_RECIPES:
        raise ValueError(f"recipe must be one of {sorted(DEV_RECIPES)}, got {name!r}")
    return {**BASE_RECIPE, **DEV_RECIPES[name]}


def choose_recipe(scores: dict) -> str:
    """The dev rule: the recipe with the highest dev score; ties go to the earlier recipe.

    Parameters
    ----------
    scores : dict
        ``{recipe name: dev score}`` (sampled free success, %), in the order the recipes are
        listed; every value finite.
    """
    if not isinstance(scores, dict) or not scores:
        raise ValueError("scores must be a non-empty dict {recipe: score}")
    for name, value in scores.items():
        if not isinstance(value, (int, float, np.floating, np.integer)) or isinstance(value, bool) \
                or not np.isfinite(value):
            raise ValueError(f"scores[{name!r}] must be a finite number, got {value!r}")
    best = max(scores.values())
    return next(name for name, value in scores.items() if value == best)


def recipe_name(config) -> str:
    """The name of the :data:`DEV_RECIPES` entry ``config`` trains with (``"custom"`` if none)."""
    fields = {k: getattr(config, k, v) for k, v in BASE_RECIPE.items()}
    return next((name for name in DEV_RECIPES if recipe(name) == fields), "custom")


_POLICY = recipe(CHOSEN_RECIPE)


# -- E1: main table --------------------------------------------------------------------------------

@dataclass(frozen=True)
class MainConfig:
    """E1 settings.

    ``rcd_bonus``: ``"bounded"`` (default) uses RCD with ``r_clip = 0`` — the bonus
    ``α·exp(β·min(r, 0))`` is the constant α on every safe token and decays on unsafe ones, so
    it shifts the logits by at most α, on the scale of the policy's own preferences — with
    (α, β) in ``alphas × rcd_betas`` chosen per policy seed on ``dev_episodes`` held-out
    episodes (a separate random stream), never on the judged episodes; ``"spec"`` is the
    earlier resolution (β = 2, r_clip = 1, both α judged on the test episodes).
    ``intervals``: paired t-intervals over the policy seeds (``False``: the spec's point rules,
    the mean gap for E1(d)/(e) and the minimum over seeds for E1(f)). ``controls``: also roll
    out the random-restriction stand-in ``safe_uniform`` (HCD's safe set, a uniform draw
    inside it), the negative control of the HCD-vs-Filter and RCD claims.
    ``logp_compare``: ``"paired"`` compares log π of HCD and Filter at the intervention steps,
    both decoders evaluated on the same logits, prefix and uniform; ``"trajectory"`` compares
    the mean executed log π of the two trajectories (the earlier, unpaired measure).
    """

    episodes: int = 200
    alphas: tuple = (5.0, 10.0)
    rcd_bonus: str = "bounded"
    rcd_betas: tuple = (8.0, 12.0, 16.0)
    dev_episodes: int = 100
    logp_compare: str = "paired"
    intervals: bool = True    # False: the old point rules (mean gap; E1(f) min over seeds)
    controls: bool = True     # roll out the random-restriction stand-in (safe_uniform)
    greedy: bool = True
    n_demos: int = _POLICY["n_demos"]            # the training recipe: CHOSEN_RECIPE
    train_steps: int = _POLICY["train_steps"]
    dropout: float = _POLICY["dropout"]
    label_smoothing: float = _POLICY["label_smoothing"]
    goal_features: bool = _POLICY["goal_features"]
    p_on: float = 0.3
    p_slow: float = 0.25
    fence_margin_min: float = 0.25
    fence_margin_max: float = 1.0


def _world(config) -> WorldConfig:
    return WorldConfig(p_on=config.p_on, p_slow=config.p_slow,
                       fence_margin=(config.fence_margin_min, config.fence_margin_max))


def _policy(config, seed: int):
    """The cached policy of ``seed`` under the training recipe of ``config``."""
    extra = {"goal_features": True} if getattr(config, "goal_features", False) else {}  # old cache keys kept
    return policy_for(seed, n_demos=config.n_demos, steps=config.train_steps, dropout=config.dropout,
                      label_smoothing=config.label_smoothing, device=job_device(), **extra)


def _setup(config, seed: int, world: WorldConfig = WorldConfig()):
    """The cached policy of ``seed``, its evaluation episodes and common random numbers."""
    return _policy(config, seed), episodes_for(seed, config.episodes, world), uniforms_for(seed, config.episodes)


def rcd_bar(u_sat: float, u_sr: float, h_sr: float) -> tuple:
    """E1(e)'s bar: satisfaction ≥ Uncon + ½(100 − Uncon), SR ≥ max(HCD SR − 1, Uncon SR − 8) (in %)."""
    return u_sat + 0.5 * (100.0 - u_sat), max(h_sr - 1.0, u_sr - 8.0)


RCD_SPEC = {"beta": 2.0, "r_clip": 1.0}   # the spec's resolution (the paper gives neither)


def _rcd_grid(config) -> list:
    if config.rcd_bonus == "spec":
        return [dict(alpha=a, **RCD_SPEC) for a in config.alphas]
    if config.rcd_bonus != "bounded":
        raise ValueError(f"rcd_bonus must be 'bounded' or 'spec', got {config.rcd_bonus!r}")
    return [dict(alpha=a, beta=b, r_clip=0.0) for a in config.alphas for b in config.rcd_betas]


def select_rcd(config, policy, seed: int, family: str) -> tuple:
    """Choose RCD's (α, β) on the dev split of ``seed``: the largest smaller margin to E1(e)'s bar.

    Each grid point scores ``min(sat − need_sat, SR − need_sr)`` against the bar computed from
    Uncon and HCD on the same dev episodes, so a setting that passes on dev is preferred, and
    among those the one with the most room on both sides. Returns the chosen settings and
    the dev measurements of every grid point.
    """
    episodes = episodes_for(seed, config.dev_episodes, _world(config), split="dev")
    uniforms = uniforms_for(seed, config.dev_episodes, split="dev")
    base = {k: _summ(rollout(policy, episodes, family, k, uniforms=uniforms)) for k in ("uncon", "hcd")}
    need_sat, need_sr = rcd_bar(base["uncon"]["sat"], base["uncon"]["success"], base["hcd"]["success"])
    dev, best, best_score = [], None, -np.inf
    for kw in _rcd_grid(config):
        m = _summ(rollout(policy, episodes, family, "rcd", uniforms=uniforms, **kw))
        score = min(m["sat"] - need_sat, m["success"] - need_sr)
        dev.append({**kw, "sat": m["sat"], "success": m["success"], "score": score})
        if score > best_score:
            best, best_score = kw, score
    return best, {"grid": dev, "need_sat": need_sat, "need_sr": need_sr}


def _main_tasks(config):
    return [{"family": f} for f in ("avoid", "geofence", "free")]


@uses_device
def run_main(config: MainConfig, seed: int, task: dict) -> dict:
    family = task["family"]
    policy, episodes, uniforms = _setup(config, seed, _world(config))
    runs = {"uncon": dict(decoder_name="uncon")}
    if config.greedy:
        runs["uncon_greedy"] = dict(decoder_name="uncon", greedy=True)
    selected, dev = None, None
    if family != "free":
        runs.update(filter=dict(decoder_name="filter", shadow="hcd"),
                    reject=dict(decoder_name="reject", seed=seed),
                    hcd=dict(decoder_name="hcd", shadow="filter"), rcd0=dict(decoder_name="rcd", alpha=0.0))
        if config.rcd_bonus == "spec":
            for kw in _rcd_grid(config):
                runs[f"rcd{kw['alpha']:g}"] = dict(decoder_name="rcd", **kw)
        else:
            selected, dev = select_rcd(config, policy, seed, family)
            runs["rcd"] = dict(decoder_name="rcd", **selected)
        if config.greedy:
            runs["hcd_greedy"] = dict(decoder_name="hcd", greedy=True)
        if config.controls:
            runs.update(safe_uniform=dict(decoder_name="safe_uniform", shadow="filter"),
                        filter_vs_uniform=dict(decoder_name="filter", shadow="safe_uniform"))
    out, tokens, paired = {}, {}, {}
    for name, kw in runs.items():
        m = rollout(policy, episodes, family, uniforms=uniforms, **kw)
        out[name] = _summ(m)
        tokens[name] = m["tokens"]
        if "paired_diff" in m:
            paired[name] = {"diff_sum": float(m["paired_diff"].sum()), "steps": int(m["paired_n"].sum())}
    same = bool(np.array_equal(tokens["rcd0"], tokens["uncon"])) if "rcd0" in tokens else None
    return {"family": family, "decoders": out, "rcd0_equals_uncon": same, "world": asdict(_world(config)),
            "rcd_selected": selected, "rcd_dev": dev, "paired_logp": paired}


def _records(jobs, key="decoders"):
    rows = []
    for j in jobs:
        for name, m in j.metrics[key].items():
            rows.append({"seed": j.seed, "family": j.metrics.get("family", ""), "decoder": name, **m})
    return pd.DataFrame(rows)


def _mean(df, family, decoder, metric):
    sel = df[(df.family == family) & (df.decoder == decoder)][metric]
    return float(sel.mean()) if len(sel) else float("nan")


#: Two-sided level of the over-seed intervals: 5 % on each side, a one-sided test at p < 0.05
#: (non-inferiority for E1(d), superiority for E1(f)). Student t over the policy seeds: with five
#: seeds a bootstrap interval is about [min, max] and too narrow.
INTERVAL_LEVEL = 0.90
_MISSING = "not measured in this run (the decoder was not rolled out)"


def _per_seed(df, family: str, decoder: str, metric: str) -> pd.Series:
    return df[(df.family == family) & (df.decoder == decoder)].set_index("seed")[metric].sort_index()


def over_seeds(diffs, intervals: bool = True, note: str = "") -> Measurement:
    """The mean of per-seed paired differences, with its t-interval when ``intervals``."""
    d = np.asarray(diffs, dtype=float)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return Measurement(float("nan"), incomplete=_MISSING)
    per = "per seed " + ", ".join(f"{v:+.3g}" for v in d)
    text = "; ".join(x for x in (note, per) if x)
    if not intervals:
        return Measurement(float(d.mean()), note=text)
    lo, hi = paired_t_interval(d, INTERVAL_LEVEL)
    return Measurement(float(d.mean()), interval=(lo, hi),
                       note=f"{text}; {INTERVAL_LEVEL:.0%} t-interval half-width {(hi - lo) / 2:.3g}")


def _sr_diff(df, fam: str, a: str, b: str, config) -> Measurement:
    if not ((df.decoder == a) & (df.family == fam)).any():
        return Measurement(float("nan"), incomplete=_MISSING)
    d = _per_seed(df, fam, a, "success") - _per_seed(df, fam, b, "success")
    return over_seeds(d.to_numpy(), config.intervals, note="pts")


def _rcd_margin(df, fam: str, decoder: str, config) -> Measurement:
    """E1(e)'s bar as one number: ``min(sat − need_sat, SR − need_sr)`` per seed (≥ 0 passes)."""
    if not ((df.decoder == decoder) & (df.family == fam)).any():
        return Measurement(float("nan"), incomplete=_MISSING)
    u_sat, u_sr = _per_seed(df, fam, "uncon", "sat"), _per_seed(df, fam, "uncon", "success")
    need_sat = u_sat + 0.5 * (100.0 - u_sat)          # rcd_bar, per seed
    need_sr = np.maximum(_per_seed(df, fam, "hcd", "success") - 1.0, u_sr - 8.0)
    sat, sr = _per_seed(df, fam, decoder, "sat"), _per_seed(df, fam, decoder, "success")
    margin = np.minimum(sat - need_sat, sr - need_sr)
    m_sat, m_sr = rcd_bar(u_sat.mean(), u_sr.mean(), _per_seed(df, fam, "hcd", "success").mean())
    old = min(sat.mean() - m_sat, sr.mean() - m_sr)
    note = (f"means: sat {sat.mean():.1f} (need {m_sat:.1f}), SR {sr.mean():.1f} (need {m_sr:.1f}); "
            f"margin of the means {old:+.2f}")
    return over_seeds(margin.to_numpy(), config.intervals, note=note)


def _paired_logp(jobs, fam: str, actor: str, back: str) -> np.ndarray:
    """Per seed: mean over intervention steps of log π(actor's token) − log π(Filter's token).

    ``actor``'s rollout shadows Filter (scores actor − filter); ``back`` is Filter's rollout
    shadowing ``actor`` (scores filter − actor); both sets of steps count.
    """
    out = []
    for j in sorted((j for j in jobs if j.metrics["family"] == fam), key=lambda j: j.seed):
        pl = j.metrics["paired_logp"]
        if actor not in pl or back not in pl:
            return np.array([])
        n = pl[actor]["steps"] + pl[back]["steps"]
        out.append((pl[actor]["diff_sum"] - pl[back]["diff_sum"]) / n if n else float("nan"))
    return np.asarray(out)


def summarize_main(jobs, config: MainConfig) -> Result:
    df = _records(jobs)
    shown = df[df.decoder != "filter_vs_uniform"]     # Filter's trajectory again (shadowing the stand-in)
    table = summary_table(shown.to_dict("records"), by=["family", "decoder"],
                          metrics=["sat", "success", "both", "rho", "cost", "interventions", "logp",
                                   "overhead_ms"], digits=2)
    meas, notes = {}, []
    for fam in ("avoid", "geofence"):
        meas[f"uncon_sat_{fam}"] = _mean(df, fam, "uncon", "sat")
    greedy_sr = _mean(df, "free", "uncon_greedy", "success")
    greedy_len = _mean(df, "free", "uncon_greedy", "success_length")   # steps a success needs
    floor = config.label_smoothing / N_TOKENS            # BC target mass on every other token
    cap = 100.0 * (1.0 - floor) ** max(greedy_len - 1.0, 0.0) if np.isfinite(greedy_len) else float("nan")
    meas["competence"] = Measurement(
        _mean(df, "free", "uncon", "success"),
        note=(f"policy recipe {recipe_name(config)!r}; "
              + (f"greedy {greedy_sr:.1f} %; sampling cap from label smoothing ≈ {cap:.0f} %"
                 if np.isfinite(greedy_sr) else "")))
    if np.isfinite(greedy_sr):
        notes.append(f"E1(a) free-family success of the policy recipe {recipe_name(config)!r}: sampled "
                     f"(τ = 1, the spec's acceptance) {_mean(df, 'free', 'uncon', 'success'):.1f} %, "
                     f"greedy {greedy_sr:.1f} %.")
    if np.isfinite(greedy_sr) and config.label_smoothing > 0:
        notes.append(f"Label smoothing {config.label_smoothing:g} trains every non-target token, STOP "
                     f"included, towards probability {config.label_smoothing:g}/{N_TOKENS} = {floor:.4f}, so "
                     f"a sampled episode of the ~{greedy_len:.0f} steps a greedy success takes survives without "
                     f"an early STOP with probability ≈ (1 − {floor:.4f})^{greedy_len - 1:.0f} = {cap:.0f} %: "
                     f"sampling caps success there whatever the policy learned; greedy decoding never picks a "
                     f"{100 * floor:.1f} % token.")
    constrained = df[df.family.isin(["avoid", "geofence"])]

    def sat_min(*decoders):
        sel = constrained[constrained.decoder.isin(decoders)]["sat"]
        return Measurement(float(sel.min()) if len(sel) else float("nan"),
                           incomplete="" if len(sel) else _MISSING)

    meas["hcd_sat_min"] = sat_min("hcd")
    meas["uncon_sat_min"] = sat_min("uncon")
    meas["filter_sat_min"] = sat_min("filter")
    meas["uniform_sat_min"] = sat_min("safe_uniform")
    meas["filter_reject_sat_min"] = sat_min("filter", "reject")
    for fam in ("avoid", "geofence"):
        meas[f"hcd_vs_filter_sr_{fam}"] = _sr_diff(df, fam, "hcd", "filter", config)
        meas[f"uniform_vs_filter_sr_{fam}"] = _sr_diff(df, fam, "safe_uniform", "filter", config)
        meas[f"reject_vs_filter_sr_{fam}"] = _sr_diff(df, fam, "reject", "filter", config)
    for fam in ("avoid", "geofence"):
        if config.rcd_bonus == "spec":   # the spec's rule: α = 5 or α = 10 passes, on the means
            margins = []
            for a in config.alphas:
                m = _rcd_margin(df, fam, f"rcd{a:g}", dataclasses.replace(config, intervals=False))
                margins.append(m)
            best = max(margins, key=lambda m: m.value)
            meas[f"rcd_margin_{fam}"] = Measurement(best.value, note="best α (β = 2, r_clip = 1); " + best.note)
        else:
            chosen = [j.metrics["rcd_selected"] for j in sorted(jobs, key=lambda j: j.seed)
                      if j.metrics["family"] == fam]
            picks = ", ".join(f"α={c['alpha']:g} β={c['beta']:g}" for c in chosen)
            m = _rcd_margin(df, fam, "rcd", config)
            meas[f"rcd_margin_{fam}"] = dataclasses.replace(
                m, note=f"r_clip = 0; per-seed dev choice: {picks}; {m.note}")
        meas[f"uniform_rcd_margin_{fam}"] = _rcd_margin(df, fam, "safe_uniform", config)
        meas[f"filter_rcd_margin_{fam}"] = _rcd_margin(df, fam, "filter", config)
    for fam in ("avoid", "geofence"):
        traj = (_per_seed(df, fam, "hcd", "logp") - _per_seed(df, fam, "filter", "logp")).to_numpy()
        paired = _paired_logp(jobs, fam, "hcd", "filter")
        uniform = _paired_logp(jobs, fam, "safe_uniform", "filter_vs_uniform")
        if config.logp_compare == "trajectory":
            paired, uniform = traj, np.array([])
        elif config.logp_compare != "paired":
            raise ValueError(f"logp_compare must be 'paired' or 'trajectory', got {config.logp_compare!r}")
        note = (f"min over seeds {np.nanmin(paired):+.4f}; unpaired trajectory means, min over seeds "
                f"{np.min(traj):+.4f}") if paired.size else ""
        if config.intervals:
            meas[f"hcd_vs_filter_logp_{fam}"] = over_seeds(paired, note=note)
            meas[f"uniform_vs_filter_logp_{fam}"] = over_seeds(uniform)
        else:   # the spec's rule: on every seed (the minimum over seeds)
            meas[f"hcd_vs_filter_logp_{fam}"] = Measurement(float(np.nanmin(paired)), note=note)
            meas[f"uniform_vs_filter_logp_{fam}"] = (
                Measurement(float(np.nanmin(uniform))) if uniform.size
                else Measurement(float("nan"), incomplete=_MISSING))
    eq = [bool(j.metrics["rcd0_equals_uncon"]) for j in jobs if j.metrics["family"] != "free"]
    meas["rcd0_equals_uncon"] = Measurement(all(eq), note=f"{sum(eq)}/{len(eq)} runs identical")
    world = jobs[0].metrics["world"]
    if config.rcd_bonus == "bounded":
        for j in sorted((j for j in jobs if j.metrics["rcd_dev"]), key=lambda j: (j.metrics["family"], j.seed)):
            d = j.metrics["rcd_dev"]
            grid = "; ".join(f"α={g['alpha']:g} β={g['beta']:g}: {g['sat']:.0f}/{g['success']:.0f}"
                             for g in d["grid"])
            notes.append(f"E1(e) dev split, {j.metrics['family']} seed {j.seed} (bar sat ≥ {d['need_sat']:.1f}, "
                         f"SR ≥ {d['need_sr']:.1f}; sat/SR %): {grid}")
    notes.append(f"calibration knobs fixed before judging E1: p_on={world['p_on']}, "
                 f"p_slow={world['p_slow']}, fence margin U{tuple(world['fence_margin'])} m")
    fig = _main_figure(df)
    return Result(tables={"E1 main table (mean ± std over seeds)": table}, figures={"E1": fig},
                  measurements=meas, notes=notes)


def _main_figure(df):
    fig, axes = subplots(1, 2, figsize=(10, 4))
    for ax, fam in zip(axes, ("avoid", "geofence")):
        sub = df[(df.family == fam) & (df.decoder != "filter_vs_uniform")]
        sub = sub.groupby("decoder", sort=False)[["sat", "success"]].mean()
        x = np.arange(len(sub))
        ax.bar(x - 0.2, sub["sat"], 0.4, label="STL satisfaction %")
        ax.bar(x + 0.2, sub["success"], 0.4, label="success %")
        ax.set_xticks(x, sub.index, rotation=45, ha="right")
        ax.set_title(fam)
        ax.set_ylim(0, 105)
    axes[0].legend(loc="lower left")
    fig.tight_layout()
    return fig


# -- E2: alpha sweep -----------------------------------------------------------------------------

@dataclass(frozen=True)
class AlphaConfig:
    episodes: int = 200
    alphas: tuple = (0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 25.0)
    beta: float = 2.0         # the spec's RCD resolution (β = 2, r_clip = 1); E1 uses the bounded bonus
    r_clip: float = 1.0
    n_demos: int = _POLICY["n_demos"]            # the training recipe: CHOSEN_RECIPE
    train_steps: int = _POLICY["train_steps"]
    dropout: float = _POLICY["dropout"]
    label_smoothing: float = _POLICY["label_smoothing"]
    goal_features: bool = _POLICY["goal_features"]


@uses_device
def run_alpha(config: AlphaConfig, seed: int) -> dict:
    policy, episodes, uniforms = _setup(config, seed)
    out = {}
    for a in config.alphas:
        out[f"{a:g}"] = _summ(rollout(policy, episodes, "avoid", "rcd", uniforms=uniforms, alpha=a,
                                      beta=config.beta, r_clip=config.r_clip))
    return {"family": "avoid", "decoders": out}


def summarize_alpha(jobs, config: AlphaConfig) -> Result:
    df = _records(jobs)
    df["alpha"] = df.decoder.astype(float)
    curve = df.groupby("alpha")[["sat", "success", "rho", "interventions"]].mean().reset_index()
    rho = float(stats.spearmanr(curve.alpha, curve.sat).statistic)
    best = float(curve.loc[curve.success.idxmax(), "alpha"])
    fig, ax = subplots(figsize=(5, 3.5))
    ax.plot(curve.alpha, curve.sat, "o-", label="STL satisfaction %")
    ax.plot(curve.alpha, curve.success, "s-", label="success %")
    ax.set_xlabel("α (RCD weight)")
    ax.legend()
    fig.tight_layout()
    notes = [f"SR peaks at α = {best:g} (paper: peak at 5–10, slight decline at 20–25)"]
    return Result(tables={"E2 α sweep (avoid, mean over seeds)": curve.round(3)}, figures={"E2": fig},
                  measurements={"spearman_alpha_sat": rho}, notes=notes)


# -- E3: dynamics mismatch ---------------------------------------------------------------------------

@dataclass(frozen=True)
class MismatchConfig:
    episodes: int = 200
    mismatch: float = 0.15
    delta: float = 0.36
    alpha: float = 5.0
    beta: float = 2.0         # the spec's RCD resolution (β = 2, r_clip = 1)
    r_clip: float = 1.0
    intervals: bool = True    # False: the spec's point rule (difference of the means)
    n_demos: int = _POLICY["n_demos"]            # the training recipe: CHOSEN_RECIPE
    train_steps: int = _POLICY["train_steps"]
    dropout: float = _POLICY["dropout"]
    label_smoothing: float = _POLICY["label_smoothing"]
    goal_features: bool = _POLICY["goal_features"]


@uses_device
def run_mismatch(config: MismatchConfig, seed: int) -> dict:
    policy, episodes, uniforms = _setup(config, seed)
    runs = {"uncon": dict(decoder_name="uncon"), "hcd": dict(decoder_name="hcd"),
            "hcd_delta": dict(decoder_name="hcd_delta", delta=config.delta),
            "rcd": dict(decoder_name="rcd", alpha=config.alpha, beta=config.beta, r_clip=config.r_clip)}
    out = {name: _summ(rollout(policy, episodes, "avoid", uniforms=uniforms, mismatch=config.mismatch,
                               env_seed=seed, **kw)) for name, kw in runs.items()}
    return {"family": "avoid", "decoders": out}


def summarize_mismatch(jobs, config: MismatchConfig) -> Result:
    df = _records(jobs)
    table = summary_table(df.to_dict("records"), by="decoder",
                          metrics=["sat", "success", "cost", "infeasible"], digits=2)
    uncon = _per_seed(df, "avoid", "uncon", "sat")
    meas = {"hcd_minus_uncon_sat": over_seeds((_per_seed(df, "avoid", "hcd", "sat") - uncon).to_numpy(),
                                              config.intervals, note="pts"),
            "rcd_minus_uncon_sat": over_seeds((_per_seed(df, "avoid", "rcd", "sat") - uncon).to_numpy(),
                                              config.intervals, note="pts"),
            "hcd_delta_sat": _mean(df, "avoid", "hcd_delta", "sat")}
    notes = [f"RCD(α={config.alpha:g}) satisfaction {_mean(df, 'avoid', 'rcd', 'sat'):.1f} %, "
             f"SR {_mean(df, 'avoid', 'rcd', 'success'):.1f} % under mismatch {config.mismatch}"]
    return Result(tables={"E3 dynamics mismatch (avoid)": table}, measurements=meas, notes=notes)


# -- E4: exact conditioning on a tiny world ---------------------------------------------------------

TINY_TOKENS = (FWD, FAST, ROT_L, ROT_R, BACK)
TINY_SIZE = 6


class TinyDynamics:
    """Lattice dynamics on a 6 × 6 arena (cells outside are walls) with 5 tokens."""

    def __init__(self):
        walls = np.ones((GRID, GRID), dtype=bool)
        walls[:TINY_SIZE, :TINY_SIZE] = False
        self.walls = walls

    def predict_all(self, states):
        states = np.asarray(states, dtype=np.float64)
        b, a = states.shape[0], len(TINY_TOKENS)
        nxt, _ = lattice_step(np.broadcast_to(self.walls, (b * a, GRID, GRID)), np.repeat(states, a, 0),
                              np.tile(np.array(TINY_TOKENS), b))
        return nxt.reshape(b, a, 4)


@dataclass(frozen=True)
class ExactConfig:
    tables: int = 50
    horizon: int = 6
    logit_scale: float = 1.5
    alpha: float = 5.0
    reject_draws: int = 20000
    reject_tries: int = 200


def _tiny_problem(rng):
    while True:
        lo = rng.uniform(0, TINY_SIZE - 2, size=2) * CELL
        side = rng.uniform(1.0, 2.5, size=2) * CELL
        box = np.array([lo[0], lo[0] + side[0], lo[1], lo[1] + side[1]])
        start = np.array([rng.integers(TINY_SIZE), rng.integers(TINY_SIZE), rng.integers(8), 0.0])
        px, py = start[0] * CELL, start[1] * CELL
        if max(box[0] - px, px - box[1], box[2] - py, py - box[3]) >= 0:
            break

    def out_zone(x):
        px, py = x[..., 0] * CELL, x[..., 1] * CELL
        return np.maximum(np.maximum(box[0] - px, px - box[1]), np.maximum(box[2] - py, py - box[3]))

    return Always(Predicate("out_zone", out_zone)), start


@cpu_only("exact enumeration with numpy dynamics and a table policy")
def run_exact(config: ExactConfig, seed: int) -> dict:
    rng = np.random.default_rng([seed, 404])
    dyn = TinyDynamics()
    fallback = TINY_TOKENS.index(ROT_L)
    rows = []
    chi2_p = None
    for k in range(config.tables):
        spec, start = _tiny_problem(rng)
        table = rng.normal(0.0, config.logit_scale, size=(config.horizon, TINY_SIZE, TINY_SIZE, 8,
                                                          len(TINY_TOKENS)))
        zero_fallback = k == 0
        if zero_fallback:
            table[..., fallback] = -np.inf

        def logit_fn(states, t, table=table):
            s = states.astype(np.int64)
            return table[t, s[:, 0], s[:, 1], s[:, 2]]

        laws = exact_sequence_laws(logit_fn, spec, dyn, start, config.horizon, fallback_token=fallback,
                                   alpha=config.alpha)
        viol = ~laws["sat"]
        off_support = laws["pi"] == 0
        rows.append({
            "table": k, "zero_fallback": zero_fallback,
            "hcd_violating_mass": float(laws["hcd"][viol].sum()),
            "filter_violating_mass": float(laws["filter"][viol].sum()),
            "support_equal": bool(np.array_equal(laws["hcd"] > 0, laws["Q"] > 0)),
            "filter_off_support_mass": float(laws["filter"][off_support].sum()),
            "hcd_off_support_mass": float(laws["hcd"][off_support].sum()),
            "tv_hcd": total_variation(laws["hcd"], laws["Q"]),
            "tv_filter": total_variation(laws["filter"], laws["Q"]),
            "tv_rcd": total_variation(laws["rcd"], laws["Q"]),
            "tv_pi": total_variation(laws["pi"], laws["Q"]),
        })
        if chi2_p is None and not zero_fallback:
            chi2_p = _rejection_chi2(spec, dyn, table, start, fallback, config, rng)
    return {"tables": rows, "chi2_p": chi2_p}


def _rejection_chi2(spec, dyn, table, start, fallback, config, rng) -> float:
    """Reject(M) token frequencies vs HCD's renormalised probabilities at the start state."""
    s = start.astype(np.int64)
    logits = torch.as_tensor(table[0, s[0], s[1], s[2]])[None]
    n = config.reject_draws
    dec = RejectionDecoder(None, spec, dyn, max_tries=config.reject_tries, fallback_token=fallback,
                           seed=int(rng.integers(2**31)))
    states = np.repeat(start[None], n, 0)
    u = rng.random((n, config.reject_tries))
    tokens, _ = dec.decode(logits.repeat(n, 1), states, u)
    hcd = SafeDecoder(None, spec, dyn, mode="hcd", fallback_token=fallback)
    _, info = hcd.decode(logits, start[None])
    probs = torch.softmax(info["logits"], 1)[0].numpy()
    counts = np.bincount(tokens.numpy(), minlength=len(probs))
    keep = probs > 0
    if counts[~keep].sum() > 0:
        return 0.0
    return float(stats.chisquare(counts[keep], probs[keep] * n).pvalue)


def summarize_exact(jobs, config: ExactConfig) -> Result:
    df = pd.DataFrame([r for j in jobs for r in j.metrics["tables"]])
    zero = df[df.zero_fallback]
    max_viol = float(max(df.hcd_violating_mass.max(), df.filter_violating_mass.max()))
    frac_better = float((df.tv_hcd < df.tv_filter).mean())
    pvals = [j.metrics["chi2_p"] for j in jobs if j.metrics["chi2_p"] is not None]
    meas = {
        "max_violating_mass": max_viol,
        "support_equal": Measurement(bool(df.support_equal.all()),
                                     note=f"{int(df.support_equal.sum())}/{len(df)} tables"),
        "filter_off_support_mass": Measurement(
            float(zero.filter_off_support_mass.min()) if len(zero) else float("nan"),
            note=f"HCD off-support mass {float(zero.hcd_off_support_mass.max()):.3g}"),
        "frac_tv_hcd_below_filter": frac_better,
        "reject_chi2_p": float(min(pvals)) if pvals else float("nan"),
    }
    summary = df[["tv_hcd", "tv_filter", "tv_rcd", "tv_pi"]].describe().loc[["mean", "std", "min", "max"]]
    return Result(tables={"E4 total variation to Q over tables": summary.round(4)}, measurements=meas,
                  notes=[f"HCD has zero off-support mass: {float(df.hcd_off_support_mass.max()) == 0.0}"])


# -- E5: overhead and scaling ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingConfig:
    batch: int = 256
    n_tokens: tuple = (7, 14, 28, 56, 112)
    n_zones: tuple = (1, 2, 4, 8, 16, 32)
    repeats: int = 30
    steps: int = 100


class DisplacementDynamics:
    """Open-plane dynamics with |A| synthetic displacement tokens (token k moves by offsets[k])."""

    def __init__(self, offsets: np.ndarray):
        self.offsets = np.asarray(offsets, dtype=np.float64)

    def predict_all(self, states):
        states = np.asarray(states, dtype=np.float64)
        nxt = np.repeat(states[:, None, :], len(self.offsets), axis=1)
        nxt[:, :, :2] += self.offsets[None]
        nxt[:, :, 3] = CELL * np.hypot(self.offsets[:, 0], self.offsets[:, 1])[None]
        return nxt


def _zone_spec(rng, n_zones: int):
    preds = []
    for k in range(n_zones):
        lo = (rng.uniform(5.5, 6.5), rng.uniform(0.0, 7.0))  # away from the robots (x ≤ 4.5 m + moves)
        box = np.array([lo[0], lo[0] + 1.0, lo[1], lo[1] + 1.0])

        def out_zone(x, box=box):
            px, py = x[..., 0] * CELL, x[..., 1] * CELL
            return np.maximum(np.maximum(box[0] - px, px - box[1]), np.maximum(box[2] - py, py - box[3]))

        preds.append(Predicate(f"out_zone{k}", out_zone))
    return Always(And(*preds))


def _decode_time(mode, spec, dyn, batch, n_tokens, repeats, rng) -> float:
    dec = SafeDecoder(None, spec, dyn, mode=mode, fallback_token=0)
    states = np.zeros((batch, 4))
    states[:, :2] = 16 + rng.integers(-2, 3, size=(batch, 2))
    logits = torch.randn(batch, n_tokens, generator=torch.Generator().manual_seed(0))
    u = rng.random((repeats, batch))
    times = []
    for r in range(repeats):
        dec.reset()
        t0 = time.process_time()
        dec.decode(logits, states, u[r])
        times.append(time.process_time() - t0)
    return float(np.min(times))  # the minimum is the least contaminated by other processes


def _offsets(rng, n_tokens):
    base = np.array([[0, 0], [1, 0], [2, 0], [0, 1], [0, -1], [-1, 0], [1, 1]], dtype=np.float64)
    extra = rng.integers(-3, 4, size=(max(0, n_tokens - len(base)), 2))
    return np.concatenate([base, extra])[:n_tokens]


def _timed_decode(dec, logits, states, u) -> float:
    t0 = time.process_time()
    dec.decode(logits, states, u)
    return time.process_time() - t0


@cpu_only("a CPU-seconds measurement")
def run_scaling(config: ScalingConfig, seed: int) -> dict:
    rng = np.random.default_rng([seed, 505])
    out = {"tokens": {}, "zones": {}}
    spec4 = _zone_spec(rng, 4)
    for mode in ("hcd", "rcd"):
        out["tokens"][mode] = [_decode_time(mode, spec4, DisplacementDynamics(_offsets(rng, a)), config.batch,
                                            a, config.repeats, rng) for a in config.n_tokens]
        out["zones"][mode] = [_decode_time(mode, _zone_spec(rng, z), DisplacementDynamics(_offsets(rng, 7)),
                                           config.batch, 7, config.repeats, rng) for z in config.n_zones]
    # per-step overhead along an episode (incremental monitor) and the policy forward time
    dyn = DisplacementDynamics(_offsets(rng, 7))
    dec = SafeDecoder(None, spec4, dyn, mode="hcd", fallback_token=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        policy = NavTransformer().eval()
    cache = policy.start()
    obs = torch.randn(config.batch, policy.obs_dim)
    prev = torch.full((config.batch,), policy.bos, dtype=torch.long)
    states = np.zeros((config.batch, 4))
    states[:, :2] = 16
    per_step, forward, at_t = [], [], {}
    for t in range(config.steps):
        t0 = time.process_time()
        with torch.no_grad():
            logits = policy.step(cache, obs, prev)
        t1 = time.process_time()
        u = rng.random(config.batch)
        if t in (10, 90):  # repeat the same decode on copies of the decoder: min is robust to load
            at_t[t] = min(_timed_decode(copy.deepcopy(dec), logits, states, u) for _ in range(config.repeats))
        t2 = time.process_time()
        tokens, _ = dec.decode(logits, states, u)
        t3 = time.process_time()
        forward.append(t1 - t0)
        per_step.append(t3 - t2)
        states = dyn.predict_all(states)[np.arange(config.batch), tokens.numpy()]
        states[:, :2] = np.clip(states[:, :2], 0, GRID - 1)
        prev = tokens
    out["per_step_ms"] = [1e3 * x for x in per_step]
    out["t10_ms"], out["t90_ms"] = 1e3 * at_t.get(10, np.nan), 1e3 * at_t.get(90, np.nan)
    out["forward_ms"] = [1e3 * x for x in forward]
    return out


def summarize_scaling(jobs, config: ScalingConfig) -> Result:
    tok = {mode: np.median([j.metrics["tokens"][mode] for j in jobs], axis=0) for mode in ("hcd", "rcd")}
    zon = {mode: np.median([j.metrics["zones"][mode] for j in jobs], axis=0) for mode in ("hcd", "rcd")}
    slope_tok = max(loglog_slope(config.n_tokens, tok[mode]) for mode in tok)
    slope_zon = max(loglog_slope(config.n_zones, zon[mode]) for mode in zon)
    step = np.median([j.metrics["per_step_ms"] for j in jobs], axis=0)
    fwd = np.median([j.metrics["forward_ms"] for j in jobs], axis=0)
    early = float(np.median([j.metrics["t10_ms"] for j in jobs]))
    late = float(np.median([j.metrics["t90_ms"] for j in jobs]))
    ratio_t = late / early
    overhead_frac = float(np.median(step) / np.median(fwd))
    meas = {"slope_tokens": slope_tok, "slope_zones": slope_zon, "t90_over_t10": ratio_t,
            "overhead_over_forward": overhead_frac}
    rows = [{"axis": "|A|", "size": s, "hcd_ms": 1e3 * h, "rcd_ms": 1e3 * r}
            for s, h, r in zip(config.n_tokens, tok["hcd"], tok["rcd"])]
    rows += [{"axis": "zones", "size": s, "hcd_ms": 1e3 * h, "rcd_ms": 1e3 * r}
             for s, h, r in zip(config.n_zones, zon["hcd"], zon["rcd"])]
    fig, axes = subplots(1, 2, figsize=(9, 3.5))
    for ax, sizes, vals, label in ((axes[0], config.n_tokens, tok, "|A|"), (axes[1], config.n_zones, zon, "zones")):
        for mode in ("hcd", "rcd"):
            ax.loglog(sizes, 1e3 * np.asarray(vals[mode]), "o-", label=mode.upper())
        ax.set_xlabel(label)
        ax.set_ylabel("decode overhead (ms / step, batch %d)" % config.batch)
        ax.legend()
    fig.tight_layout()
    notes = [f"decode overhead at t=10: {early:.3f} ms, t=90: {late:.3f} ms (min of {config.repeats} repeats)",
             f"per-step overhead median {np.median(step):.2f} ms vs policy forward {np.median(fwd):.2f} ms "
             f"(batch {config.batch}); timings on a shared 2-core machine"]
    return Result(tables={"E5 decode overhead": pd.DataFrame(rows).round(3)}, figures={"E5": fig},
                  measurements=meas, notes=notes)


# -- dev: the training recipe, chosen on dev seeds --------------------------------------------------

@dataclass(frozen=True)
class DevConfig:
    """The recipe search (opt-in part ``dev``): :data:`DEV_RECIPES` on :data:`DEV_SEEDS` by the
    rule of :data:`DEV_METRIC` (see there); free family, dev-split episodes only."""

    episodes: int = 200
    recipes: tuple = tuple(DEV_RECIPES)
    p_on: float = 0.3
    p_slow: float = 0.25
    fence_margin_min: float = 0.25
    fence_margin_max: float = 1.0


def _dev_tasks(config: DevConfig):
    return [{"recipe": r} for r in config.recipes]


@functools.lru_cache(maxsize=64)   # stage 2 recomputes stage 1's scores: once per process
def dev_score(config: DevConfig, seed: int, name: str) -> dict:
    """Train (or load) recipe ``name`` on ``seed`` and roll it out on the free family of the dev split.

    Returns sampled (τ = 1) and greedy success, and the sampled episodes' outcomes: ``early_stop``
    (STOP away from the goal), ``no_stop`` (the horizon ran out), in %.
    """
    rec = recipe(name)
    policy = _policy(SimpleRecipe(**rec), seed)
    episodes = episodes_for(seed, config.episodes, _world(config), split="dev")
    uniforms = uniforms_for(seed, config.episodes, split="dev")
    out = {"recipe": name, **{k: rec[k] for k in BASE_RECIPE}}
    for label, greedy in (("", False), ("greedy_", True)):
        m = rollout(policy, episodes, "free", "uncon", uniforms=uniforms, greedy=greedy)
        stopped = (m["tokens"] == STOP).any(axis=1)
        out[f"{label}success"] = 100.0 * float(np.mean(m["success"]))
        out[f"{label}early_stop"] = 100.0 * float(np.mean(stopped & ~m["success"]))
        out[f"{label}no_stop"] = 100.0 * float(np.mean(~stopped))
    return out


@dataclass(frozen=True)
class SimpleRecipe:
    """A training recipe as the attributes :func:`_policy` reads."""

    n_demos: int
    train_steps: int
    dropout: float
    label_smoothing: float
    goal_features: bool


@uses_device
def run_dev(config: DevConfig, seed: int, task: dict) -> dict:
    """Stage 1 (``DEV_SEEDS[0]``): score the task's recipe. Stage 2 (``DEV_SEEDS[1]``): only
    the stage-1 choice is trained and scored (its stage-1 scores are recomputed from the cached
    policies); the other tasks return ``{"skipped": True}``."""
    name = task["recipe"]
    if seed == DEV_SEEDS[0]:
        return {"stage": 1, **dev_score(config, seed, name)}
    if seed != DEV_SEEDS[1]:
        raise ValueError(f"the dev part runs on DEV_SEEDS {DEV_SEEDS} only, got seed {seed}")
    chosen = choose_recipe({r: dev_score(config, DEV_SEEDS[0], r)[DEV_METRIC] for r in config.recipes})
    if name != chosen:
        return {"stage": 2, "recipe": name, "skipped": True}
    return {"stage": 2, **dev_score(config, seed, name)}


def summarize_dev(jobs, config: DevConfig) -> Result:
    order = {r: k for k, r in enumerate(config.recipes)}
    rows = [{"seed": j.seed, **j.metrics} for j in sorted(jobs, key=lambda j: (j.seed, order.get(j.metrics["recipe"], 99)))
            if not j.metrics.get("skipped")]
    table = pd.DataFrame(rows)
    stage1 = {r["recipe"]: r[DEV_METRIC] for r in rows if r["stage"] == 1}
    meas, notes = {}, []
    if set(stage1) != set(config.recipes):
        missing = sorted(set(config.recipes) - set(stage1))
        meas["chosen_dev_sr"] = Measurement(float("nan"), incomplete=f"stage 1 lacks {missing}")
        meas["confirm_dev_sr"] = Measurement(float("nan"), incomplete=f"stage 1 lacks {missing}")
        return Result(tables={"dev: free-family success per recipe (%)": table}, measurements=meas)
    chosen = choose_recipe({r: stage1[r] for r in config.recipes})
    confirm = [r for r in rows if r["stage"] == 2 and r["recipe"] == chosen]
    meas["chosen_dev_sr"] = Measurement(stage1[chosen], note=f"recipe {chosen!r} on dev seed {DEV_SEEDS[0]}")
    meas["confirm_dev_sr"] = (Measurement(confirm[0][DEV_METRIC], note=f"recipe {chosen!r} on dev seed {DEV_SEEDS[1]}")
                              if confirm else Measurement(float("nan"), incomplete="stage 2 did not run"))
    notes.append(f"dev rule: argmax of sampled free SR on seed {DEV_SEEDS[0]} over {list(config.recipes)} "
                 f"-> {chosen!r}; the claims use CHOSEN_RECIPE = {CHOSEN_RECIPE!r}"
                 + ("" if chosen == CHOSEN_RECIPE else " (DIFFERENT: update CHOSEN_RECIPE)"))
    return Result(tables={"dev: free-family success per recipe (%)": table.round(2)}, measurements=meas,
                  notes=notes)


# -- registration --------------------------------------------------------------------------------

EXPERIMENT = register(Experiment(
    slug="safedec",
    parts=[
        Part("main", run_main, summarize_main, quick=MainConfig(episodes=100, dev_episodes=50), full=MainConfig(),
             seeds=(0, 1, 2, 3, 4), quick_seeds=(0, 1, 2), tasks=_main_tasks),
        Part("alpha", run_alpha, summarize_alpha, quick=AlphaConfig(episodes=100), full=AlphaConfig(),
             seeds=(0, 1, 2), quick_seeds=(0, 1, 2)),
        Part("mismatch", run_mismatch, summarize_mismatch, quick=MismatchConfig(episodes=100),
             full=MismatchConfig(), seeds=(0, 1, 2), quick_seeds=(0, 1, 2)),
        Part("exact", run_exact, summarize_exact, quick=ExactConfig(tables=10, reject_draws=5000),
             full=ExactConfig(), seeds=(0,), quick_seeds=(0,)),
        Part("scaling", run_scaling, summarize_scaling, quick=ScalingConfig(repeats=5, steps=100),
             full=ScalingConfig(), seeds=(0,), quick_seeds=(0,)),
        Part("dev", run_dev, summarize_dev, quick=DevConfig(episodes=50, recipes=("spec", "ls0")),
             full=DevConfig(), seeds=DEV_SEEDS, quick_seeds=DEV_SEEDS, tasks=_dev_tasks),
    ],
))
