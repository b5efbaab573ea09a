"""Reproduction of VEENA (emotion circuits in LVLMs) at CPU scale.

Parts:

* ``planted`` (Exp 1) — the ToyLVLM with a planted Adapt → Aggregate → Execute circuit: layer
  scan, head scores vs the planted heads (with the attention-weight baseline), specificity,
  explicit-state neurons, and VEENA vs VEE-only / ENA-only / random components / PAI-style /
  plain steering;
* ``slotted`` (Exp 1b) — the same planted toy and pipeline with the "slotted"
  description: object content (content slots) and emotional tone (tone slots) are read out
  separately (Resolution, not from the paper; see :mod:`.toy`);
* ``trained`` (Exp 2) — a tiny HF Llama trained on descriptions: head scores vs exhaustive
  mean-ablation effects, VEENA with (β, γ) picked on a dev split;
* ``scaling`` — head-scoring time (projection proxy) vs number of heads L·H.

Zhang, Sun, Xie, Tian, "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from icml26.core.device import cpu_only, job_device, uses_device
from icml26.core.claims import Measurement
from icml26.core.experiment import Experiment, Part, Result, register
from icml26.core.figures import subplots
from icml26.core.stats import loglog_slope, paired_mean_interval, summary_table

from .baselines import attention_head_scores, pai_edits, random_circuit, steering_edit
from .circuits import CircuitLocalizer, SteeringVectors, behaviour, select_circuit
from .hooks import HeadMeanAblate, NeuronScale
from .interventions import VEENA
from .toy import N_GENERATED, WHEEL, ToyLVLM, make_pairs

CONDITIONS = ["vanilla", "VEENA", "VEE only", "ENA only", "random components", "PAI-style (all heads)",
              "PAI-style at VEENA's β", "steering addition"]


#: Pre-registered (β, γ) grid, written before the test split ran: the old grid stopped at β = 3,
#: the value every seed chose, so it is extended to 5, 8 and 12.
BETAS = (1.25, 1.5, 2.0, 3.0, 5.0, 8.0, 12.0)
GAMMAS = (1.5, 2.0, 3.0)
#: Utility constraint of the dev rule: a setting is admissible when its dev object-word accuracy
#: is at most this far (a fraction, 2 points) below the vanilla dev accuracy, the same margin as
#: the "narrative preserved" claim. Among admissible settings the highest dev HIT wins (ties:
#: first in grid order); when none is admissible, the one with the highest dev accuracy.
UTILITY_TOLERANCE = 0.02


@dataclass(frozen=True)
class PlantedConfig:
    n_pairs: int = 400          # first half analysis (dev), second half test
    tau: float = 0.1
    alpha_rel: float = 1.0
    n_gen_positions: int = 8
    beta: float = 2.0
    gamma: float = 2.0
    n_mid: int = 4
    n_deep: int = 2
    n_neurons: int = 4
    betas: tuple = BETAS        # (β, γ) picked on the analysis split (dev); empty: use beta, gamma
    gammas: tuple = GAMMAS
    utility_tolerance: float = UTILITY_TOLERANCE   # inf: the old rule (highest dev HIT, no constraint)
    toy: str = "shared"         # toy description: "shared" (original) or "slotted" (see toy.DESCRIPTIONS)


def pick_setting(model, dev, candidates, seed: int, tolerance: float | None = UTILITY_TOLERANCE):
    """The dev rule: ``candidates`` is a list of ``(setting, edits)``; returns the setting with the
    highest dev sample HIT among those whose dev object-word accuracy is within ``tolerance`` of
    vanilla's (ties: first in order; none admissible: the highest accuracy), and the grid rows.
    ``tolerance=None`` or ``inf`` drops the constraint (highest dev HIT), as does a world without objects."""
    base = behaviour(model, dev, WHEEL, N_GENERATED, seed)
    grid = []
    for setting, edits in candidates:
        r = behaviour(model, dev, WHEEL, N_GENERATED, seed, edits=edits)
        grid.append({**setting, "HIT": r["HIT"], "object_accuracy": r.get("object_accuracy", float("nan"))})
    if tolerance is None or "object_accuracy" not in base:
        admissible = grid
    else:
        admissible = [g for g in grid if g["object_accuracy"] >= base["object_accuracy"] - tolerance - 1e-12]
    if admissible:
        best = max(admissible, key=lambda g: g["HIT"])
    else:
        best = max(grid, key=lambda g: g["object_accuracy"])
    return best, grid


def pick_beta_gamma(model, circuit, dev, betas, gammas, seed: int, default=(2.0, 2.0),
                    tolerance: float | None = UTILITY_TOLERANCE) -> tuple:
    """VEENA's (β, γ) by :func:`pick_setting` over the grid ``betas × gammas`` on ``dev``."""
    if not betas or not gammas:
        return default, []
    vm, n = dev.visual_mask, dev.query_pos
    cands = [({"beta": b, "gamma": g}, VEENA(circuit["mid_heads"], circuit["deep_heads"], circuit["neurons"],
                                             b, g).edits(model, vm, n)) for b in betas for g in gammas]
    best, grid = pick_setting(model, dev, cands, seed, tolerance)
    return (best["beta"], best["gamma"]), grid


def pick_pai_beta(model, dev, betas, seed: int, default: float = 2.0,
                  tolerance: float | None = UTILITY_TOLERANCE) -> tuple:
    """The PAI-style competitor's β by the same rule and the same β grid on the same dev split."""
    if not betas:
        return default, []
    cands = [({"beta": b}, pai_edits(model, b, dev.query_pos, dev.visual_mask)) for b in betas]
    best, grid = pick_setting(model, dev, cands, seed, tolerance)
    return best["beta"], grid


def _auroc(scores: np.ndarray, positive: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(positive.astype(int), scores))


def _interventions(model, circuit, localizer, scan, test, cfg, seed, beta, gamma, pai_beta) -> dict:
    vm, n = test.visual_mask, test.query_pos
    rand = random_circuit(model, circuit, seed)
    best_layer = int(scan.sort_values("C", ascending=False).iloc[0]["layer"])
    veena = lambda ids, b, g: VEENA(ids["mid_heads"], ids["deep_heads"], ids["neurons"], b, g)  # noqa: E731
    plans = {
        "vanilla": [],
        "VEENA": veena(circuit, beta, gamma),
        "VEE only": veena(circuit, beta, 1.0),
        "ENA only": veena(circuit, 1.0, gamma),
        "random components": veena(rand, beta, gamma),
        "PAI-style (all heads)": pai_edits(model, pai_beta, n, vm),
        "PAI-style at VEENA's β": pai_edits(model, beta, n, vm),
        "steering addition": [steering_edit(localizer, best_layer, n)],
    }
    out = {}
    for name, plan in plans.items():
        edits = plan.edits(model, vm, n) if isinstance(plan, VEENA) else plan
        out[name] = behaviour(model, test, WHEEL, N_GENERATED, seed, edits=edits, per_sample=True)
    # Diagnostic sweep on the test split (reported, never used to choose): VEENA and PAI-style at
    # every β of the grid (VEENA at the chosen γ).
    out["_sweep"] = [{"beta": b,
                      "VEENA": behaviour(model, test, WHEEL, N_GENERATED, seed,
                                         edits=veena(circuit, b, gamma).edits(model, vm, n)),
                      "PAI": behaviour(model, test, WHEEL, N_GENERATED, seed, edits=pai_edits(model, b, n, vm))}
                     for b in (cfg.betas or (beta,))]
    out["_random_circuit"] = {k: [list(x) for x in v] for k, v in rand.items() if k != "l_emo"}
    return out


@uses_device
def run_planted(config: PlantedConfig, seed: int) -> dict:
    torch.set_num_threads(1)
    toy = ToyLVLM.planted(seed=seed, description=config.toy).to(job_device())
    model = toy.adapter()
    pairs = make_pairs(toy, n=config.n_pairs, seed=seed)
    analysis, test = pairs.split(config.n_pairs // 2)
    gt = toy.ground_truth
    sv = SteeringVectors(tau=config.tau, n_tokens=N_GENERATED, n_gen_positions=config.n_gen_positions,
                         random_state=seed).fit(model, analysis, WHEEL)
    loc = CircuitLocalizer(sv, alpha_rel=config.alpha_rel, n_gen_positions=config.n_gen_positions, seed=seed)
    scan = loc.scan_layers(model, analysis, WHEEL)
    heads = loc.score_heads(model, analysis, WHEEL)
    neurons = loc.score_neurons(model, analysis, top_k=config.n_neurons)
    circuit = select_circuit(heads, neurons, config.n_mid, config.n_deep, config.n_neurons)
    attention = attention_head_scores(model, analysis)

    # Adapt stage: ablate the layer-0 adapt neurons at every position (test split).
    adapt = NeuronScale(0, [k for _, k in gt["adapt_neurons"]], 0.0, None)
    ablated = behaviour(model, test, WHEEL, N_GENERATED, seed, edits=[adapt])
    no_cue = behaviour(model, test, WHEEL, N_GENERATED, seed, prompts="neutral")
    # Negative control: as many random layer-0 neurons (not adapt neurons) ablated.
    adapt_ids = {k for _, k in gt["adapt_neurons"]}
    others = [k for k in range(model.n_neurons) if k not in adapt_ids]
    rng = np.random.default_rng([seed, 7])
    rand_adapt = [int(k) for k in rng.choice(others, size=len(adapt_ids), replace=False)]
    rand_ablated = behaviour(model, test, WHEEL, N_GENERATED, seed, edits=[NeuronScale(0, rand_adapt, 0.0, None)])

    # Heads vs ground truth (general heads excluded from the ranking, as in the acceptance test).
    key = list(zip(heads["layer"], heads["head"]))
    planted = np.array([k in gt["specific_heads"] for k in key])
    general = np.array([k in gt["general_heads"] for k in key])
    scores = heads["score"].to_numpy()
    ranked = scores[~general]
    positive = planted[~general]
    top4 = np.argsort(-ranked, kind="stable")[:4]
    att = attention.set_index(["layer", "head"]).loc[key, "attention_mass"].to_numpy()
    att_top4 = [key[i] for i in np.argsort(-att, kind="stable")[:4]]
    min_planted = scores[planted].min()
    spec = dict(zip(key, heads["specificity"]))
    esn = set(gt["esn"])
    (beta, gamma), dev_grid = pick_beta_gamma(model, circuit, analysis, config.betas, config.gammas, seed,
                                              (config.beta, config.gamma), config.utility_tolerance)
    pai_beta, pai_grid = pick_pai_beta(model, analysis, config.betas, seed, config.beta, config.utility_tolerance)
    interventions = _interventions(model, circuit, loc, scan, test, config, seed, beta, gamma, pai_beta)
    dev_vanilla = behaviour(model, analysis, WHEEL, N_GENERATED, seed)
    rand_neurons = random_circuit(model, circuit, seed)["neurons"]
    return {
        "layer_C": scan["C"].tolist(), "layer_alpha": scan["alpha"].tolist(), "S_norm": scan["S_norm"].tolist(),
        "head_score": heads["score"].tolist(), "head_intention": heads["intention"].tolist(),
        "head_noising": heads["noising"].tolist(), "head_specificity": heads["specificity"].tolist(),
        "head_stage": heads["stage"].tolist(), "attention_mass": att.tolist(),
        "auroc": _auroc(ranked, positive), "precision_at_4": float(positive[top4].mean()),
        "decoy_below_planted": bool(scores[key.index(gt["decoy"])] < min_planted),
        "shadow_below_planted": bool(scores[key.index(gt["shadow"])] < min_planted),
        "attention_auroc": _auroc(att[~general], positive),
        "attention_top4_has_decoy_or_shadow": bool(gt["decoy"] in att_top4 or gt["shadow"] in att_top4),
        "spec_mid": float(np.mean([spec[h] for h in gt["specific_heads"]])),
        "spec_general": float(np.mean([spec[h] for h in gt["general_heads"]])),
        "spec_general_max": float(np.max([spec[h] for h in gt["general_heads"]])),
        "esn_recall_at_4": float(np.mean([n in esn for n in circuit["neurons"][:4]])),
        "random_esn_recall_at_4": float(np.mean([tuple(n) in esn for n in rand_neurons[:4]])),
        "dev_vanilla_object_accuracy": dev_vanilla.get("object_accuracy", float("nan")),
        "adapt_ablated_HIT": ablated["HIT"], "no_cue_HIT": no_cue["HIT"], "random_ablated_HIT": rand_ablated["HIT"],
        "spec_other": float(np.mean([spec[h] for h in key if h not in gt["specific_heads"] and h not in gt["general_heads"]])),
        "circuit": {k: ([list(x) for x in v] if isinstance(v, list) else v) for k, v in circuit.items()},
        "n_valid": int(sv.valid_.sum()), "beta": beta, "gamma": gamma, "dev_grid": dev_grid,
        "pai_beta": pai_beta, "pai_dev_grid": pai_grid, "interventions": interventions,
    }


def _layer_figure(curves: np.ndarray, title: str):
    fig, ax = subplots(figsize=(5, 3.2))
    layers = np.arange(curves.shape[1])
    mean = curves.mean(0)
    ax.plot(layers, mean, "o-", label="mean over seeds")
    for c in curves:
        ax.plot(layers, c, color="grey", alpha=0.3, lw=0.8)
    ax.axhline(0.1 * mean.max(), ls=":", color="red", label="0.1·max")
    ax.axhline(0.5 * mean.max(), ls="--", color="green", label="0.5·max")
    ax.set_xlabel("layer l (steering vector injected at t ≥ N)")
    ax.set_ylabel("hit-rate change C_l")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _heads_figure(grid: np.ndarray, marked: dict, title: str, label: str):
    fig, ax = subplots(figsize=(4.8, 5.0))
    from matplotlib.colors import PowerNorm

    low = min(0.0, float(grid.min()))
    im = ax.imshow(grid - low, cmap="viridis", aspect="auto", norm=PowerNorm(0.4, vmin=0.0))
    fig.colorbar(im, ax=ax, label=f"{label} (power-0.4 colour scale)")
    for (l, h), (marker, color, name) in marked.items():
        ax.scatter([h], [l], marker=marker, s=90, facecolors="none", edgecolors=color, linewidths=1.8, label=name)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    if uniq:
        ax.legend(uniq.values(), uniq.keys(), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_xticks(range(grid.shape[1]))
    ax.set_yticks(range(grid.shape[0]))
    ax.set_title(title)
    fig.tight_layout()
    return fig


def _gain(m, cond, key="HIT_s", base="vanilla") -> Measurement:
    """Mean paired per-sample difference ``cond − base`` in points, pooled over the seeds' test
    samples, with its paired BCa 95 % interval."""
    d = 100 * np.concatenate([np.asarray(x["interventions"][cond][key], float)
                              - np.asarray(x["interventions"][base][key], float) for x in m])
    lo, hi = paired_mean_interval(d)
    return Measurement(float(d.mean()), interval=(lo, hi),
                       note=f"paired over {d.size} test samples ({len(m)} seeds); half-width {(hi - lo) / 2:.2f}")


def summarize_planted(jobs, config: PlantedConfig) -> Result:
    from .toy import DECOY, GENERAL_HEADS, N_HEADS, N_LAYERS, PLANTED_SPECIFIC, SHADOW

    m = [j.metrics for j in jobs]
    curves = np.array([x["layer_C"] for x in m])
    mean_c = curves.mean(0)
    cmax = mean_c.max()
    adapt_gap = float(np.mean([abs(x["adapt_ablated_HIT"] - x["no_cue_HIT"]) for x in m]))
    iv = lambda cond, key: float(np.mean([x["interventions"][cond][key] for x in m]))  # noqa: E731
    delta = lambda cond, key: iv(cond, key) - iv("vanilla", key)  # noqa: E731
    columns = ["H", "H_tone", "HIT", "joy_hallucination", "object_accuracy"]
    records = [{"condition": cond, **{k: x["interventions"][cond][k] for k in columns}}
               for x in m for cond in CONDITIONS]
    table = summary_table(records, "condition", columns)
    sweep = pd.DataFrame([{"beta": r["beta"], **{f"{arm} {k}": r[arm][k] for arm in ("VEENA", "PAI")
                                                 for k in ("HIT", "object_accuracy")}}
                          for x in m for r in x["interventions"]["_sweep"]]).groupby("beta").mean()
    base = {k: iv("vanilla", k) for k in ("HIT", "object_accuracy")}
    for col in list(sweep.columns):
        k = col.split(" ", 1)[1]
        sweep[col.split(" ")[0] + " Δ" + k + " (points)"] = 100 * (sweep[col] - base[k])
    sweep = sweep[[c for c in sweep.columns if "Δ" in c]].reset_index()
    layer_table = pd.DataFrame({"layer": range(len(mean_c)), "C (mean)": mean_c,
                                "C / max": mean_c / cmax if cmax > 0 else np.nan,
                                "alpha": np.mean([x["layer_alpha"] for x in m], 0),
                                "|S_l|": np.mean([x["S_norm"] for x in m], 0)})
    score_grid = np.mean([x["head_score"] for x in m], 0).reshape(N_LAYERS, N_HEADS)
    spec_grid = np.mean([x["head_specificity"] for x in m], 0).reshape(N_LAYERS, N_HEADS)
    marks = {h: ("s", "red", "planted specific") for h in PLANTED_SPECIFIC}
    marks.update({h: ("D", "orange", "planted general") for h in GENERAL_HEADS})
    marks[DECOY] = ("o", "magenta", "decoy")
    marks[SHADOW] = ("^", "cyan", "shadow")
    mean = lambda key: float(np.mean([x[key] for x in m]))  # noqa: E731
    frac = lambda key: float(np.mean([bool(x[key]) for x in m]))  # noqa: E731

    def dev_cost(x) -> float:
        """Object-word accuracy lost on dev by PAI-style amplification at the grid's largest β (points)."""
        grid = x["pai_dev_grid"]
        if not grid:
            return float("nan")
        top = max(grid, key=lambda g: g["beta"])
        van = x["dev_vanilla_object_accuracy"]
        return 100 * (van - top["object_accuracy"])

    measurements = {
        "layer_adapt_ratio": float(mean_c[:3].max() / cmax),
        "layer_mid_ratio": float(mean_c[3:6].max() / cmax),
        "layer_deep_ratio": float(mean_c[6:8].max() / cmax),
        "adapt_gap": adapt_gap,
        "random_adapt_gap": float(np.mean([abs(x["random_ablated_HIT"] - x["no_cue_HIT"]) for x in m])),
        "head_auroc": mean("auroc"),
        "attention_auroc": mean("attention_auroc"),
        "head_precision_at_4": mean("precision_at_4"),
        "decoy_shadow_below": float(np.mean([x["decoy_below_planted"] and x["shadow_below_planted"] for x in m])),
        "attention_fooled": frac("attention_top4_has_decoy_or_shadow"),
        "spec_mid": mean("spec_mid"), "spec_general": mean("spec_general"), "spec_other": mean("spec_other"),
        "esn_recall_at_4": mean("esn_recall_at_4"),
        "random_esn_recall_at_4": float(np.mean([x["random_esn_recall_at_4"] for x in m])),
        "veena_H_gain": _gain(m, "VEENA", "H_s"),
        "random_H_gain": 100 * delta("random components", "H"),
        "pai_H_gain": 100 * delta("PAI-style (all heads)", "H"),
        "veena_H_tone_gain": _gain(m, "VEENA", "H_tone_s"),
        "random_H_tone_gain": 100 * delta("random components", "H_tone"),
        "pai_H_tone_gain": 100 * delta("PAI-style (all heads)", "H_tone"),
        "veena_HIT_gain": _gain(m, "VEENA"),
        "random_HIT_gain": 100 * delta("random components", "HIT"),
        "pai_HIT_gain": 100 * delta("PAI-style (all heads)", "HIT"),
        "steering_HIT_gain": 100 * delta("steering addition", "HIT"),
        "veena_joy_change": 100 * delta("VEENA", "joy_hallucination"),
        "random_joy_change": 100 * delta("random components", "joy_hallucination"),
        "vee_only_HIT_gain": _gain(m, "VEE only"),
        "ena_only_HIT_gain": _gain(m, "ENA only"),
        "random_HIT_change_abs": abs(100 * delta("random components", "HIT")),
        "veena_object_change": 100 * delta("VEENA", "object_accuracy"),
        "pai_max_object_change": float(np.mean([100 * (x["interventions"]["_sweep"][-1]["PAI"]["object_accuracy"]
                                                       - x["interventions"]["vanilla"]["object_accuracy"])
                                                for x in m])),
        "pai_object_change": 100 * delta("PAI-style (all heads)", "object_accuracy"),
        "veena_vs_pai_HIT": _gain(m, "VEENA", base="PAI-style (all heads)"),
        "random_vs_pai_HIT": 100 * (iv("random components", "HIT") - iv("PAI-style (all heads)", "HIT")),
        "pai_dev_cost": float(np.mean([dev_cost(x) for x in m])),
    }
    notes = [f"(β, γ) picked on the analysis split per seed (utility tolerance {config.utility_tolerance}): "
             f"{[(x['beta'], x['gamma']) for x in m]}; PAI-style β by the same rule: {[x['pai_beta'] for x in m]}",
             f"adapt neurons ablated: HIT {mean('adapt_ablated_HIT'):.3f}, random layer-0 neurons ablated: HIT "
             f"{mean('random_ablated_HIT'):.3f}, no-cue HIT {mean('no_cue_HIT'):.3f}",
             f"plain steering addition HIT change {measurements['steering_HIT_gain']:+.1f} points (no bar)",
             "selected circuits: " + "; ".join(f"seed {j.seed}: mid {j.metrics['circuit']['mid_heads']}, "
                                               f"deep {j.metrics['circuit']['deep_heads']}, "
                                               f"neurons {j.metrics['circuit']['neurons']}" for j in jobs)]
    tag = "planted" if config.toy == "shared" else config.toy
    figures = {f"{tag}: layer scan": _layer_figure(curves, f"ToyLVLM layer scan ({config.toy} description)"),
               f"{tag}: head scores": _heads_figure(score_grid, marks, "head score = intention × max(E, 0)", "score"),
               f"{tag}: head specificity": _heads_figure(spec_grid, marks, "head specificity", "specificity")}
    return Result(tables={"interventions (test split)": table, "layer scan": layer_table,
                          "β sweep on the test split (diagnostic, not used to choose)": sweep},
                  figures=figures, measurements=measurements, notes=notes)


# -- Exp 2: trained tiny Llama ----------------------------------------------------------------

@dataclass(frozen=True)
class TrainedConfig:
    steps: int = 2000
    n_analysis: int = 200
    n_dev: int = 100
    n_test: int = 200
    tau: float = 0.1
    n_mid: int = 4
    n_deep: int = 2
    n_neurons: int = 16
    betas: tuple = BETAS
    gammas: tuple = GAMMAS
    cache: bool = True          # keep trained weights in the icml26 cache folder (reruns skip training)


@uses_device
def run_trained(config: TrainedConfig, seed: int) -> dict:
    from scipy.stats import spearmanr

    from .tier2 import Tier2Config, tier2_adapter, tier2_pairs, train_tier2

    torch.set_num_threads(1)
    start = time.perf_counter()
    model, world = train_tier2(seed, replace(Tier2Config(), steps=config.steps), use_cache=config.cache,
                               device=job_device())
    train_s = time.perf_counter() - start
    adapter = tier2_adapter(model)
    analysis = tier2_pairs(model, world, config.n_analysis, 1000 + seed)
    dev = tier2_pairs(model, world, config.n_dev, 2000 + seed)
    test = tier2_pairs(model, world, config.n_test, 3000 + seed)
    sv = SteeringVectors(tau=config.tau, n_tokens=N_GENERATED, random_state=seed).fit(adapter, analysis, WHEEL)
    loc = CircuitLocalizer(sv, seed=seed)
    heads = loc.score_heads(adapter, analysis, WHEEL)
    base = behaviour(adapter, analysis, WHEEL, N_GENERATED, seed)["H"]
    ablation = []
    for l, h in zip(heads["layer"], heads["head"]):
        ablated = behaviour(adapter, analysis, WHEEL, N_GENERATED, seed, edits=[HeadMeanAblate(int(l), [int(h)])])
        ablation.append(base - ablated["H"])
    rho = float(spearmanr(heads["score"], ablation).statistic)
    neurons = loc.score_neurons(adapter, analysis, top_k=config.n_neurons)
    circuit = select_circuit(heads, neurons, config.n_mid, config.n_deep, config.n_neurons)
    (beta, gamma), grid = pick_beta_gamma(adapter, circuit, dev, config.betas, config.gammas, seed)
    veena = VEENA(circuit["mid_heads"], circuit["deep_heads"], circuit["neurons"], beta, gamma)
    vm, n = test.visual_mask, test.query_pos
    vanilla = behaviour(adapter, test, WHEEL, N_GENERATED, seed)
    treated = behaviour(adapter, test, WHEEL, N_GENERATED, seed, edits=veena.edits(adapter, vm, n))
    return {"spearman": rho, "head_score": heads["score"].tolist(), "ablation_effect": [float(a) for a in ablation],
            "vanilla": vanilla, "VEENA": treated, "beta": beta, "gamma": gamma, "dev_grid": grid,
            "train_seconds": train_s, "final_loss": model.final_loss_, "n_valid": int(sv.valid_.sum()),
            "circuit": {k: ([list(x) for x in v] if isinstance(v, list) else v) for k, v in circuit.items()},
            "n_layers": adapter.n_layers, "n_heads": adapter.n_heads}


def summarize_trained(jobs, config: TrainedConfig) -> Result:
    m = [j.metrics for j in jobs]
    gains = [100 * (x["VEENA"]["HIT"] - x["vanilla"]["HIT"]) for x in m]
    rows = [{"seed": j.seed, "spearman": j.metrics["spearman"], "vanilla HIT": j.metrics["vanilla"]["HIT"],
             "VEENA HIT": j.metrics["VEENA"]["HIT"], "beta": j.metrics["beta"], "gamma": j.metrics["gamma"],
             "vanilla H": j.metrics["vanilla"]["H"], "VEENA H": j.metrics["VEENA"]["H"],
             "final loss": j.metrics["final_loss"]} for j in jobs]
    x0 = m[0]
    grid = np.mean([x["head_score"] for x in m], 0).reshape(x0["n_layers"], x0["n_heads"])
    abl = np.mean([x["ablation_effect"] for x in m], 0).reshape(x0["n_layers"], x0["n_heads"])
    fig = _heads_figure(grid, {}, "tier 2: head score", "score")
    fig2 = _heads_figure(abl, {}, "tier 2: mean-ablation effect on H", "H drop")
    lo, hi = paired_mean_interval(gains)
    measurements = {"spearman": float(np.mean([x["spearman"] for x in m])),
                    "veena_HIT_gain": Measurement(float(np.mean(gains)), interval=(lo, hi),
                                                  note=f"paired over {len(gains)} seeds")}
    return Result(tables={"tier 2 per seed": pd.DataFrame(rows)},
                  figures={"trained: head scores": fig, "trained: ablation effects": fig2},
                  measurements=measurements,
                  notes=[f"training seconds per seed: {[round(x['train_seconds'], 1) for x in m]}"])


# -- scaling ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingConfig:
    n_layers: int = 2
    hidden: int = 256
    heads: tuple = (16, 32, 64, 128)      # L·H = 32, 64, 128, 256
    n_pairs: int = 16
    repeats: int = 2


def head_scoring_seconds(n_layers: int, n_heads: int, hidden: int, n_pairs: int, repeats: int = 3) -> float:
    """Best-of-``repeats`` seconds of :meth:`CircuitLocalizer.score_heads` with the projection proxy
    on a tiny Llama (ToyLVLM-style pairs projected to ``hidden``)."""
    from icml26.zoo import tiny_llama

    from .tier2 import _World, tier2_pairs

    torch.set_num_threads(1)
    from .toy import VOCABULARY
    from .hooks import HFAdapter

    model = tiny_llama(vocab=len(VOCABULARY), hidden=hidden, layers=n_layers, heads=n_heads, seed=0,
                       intermediate=2 * hidden, max_position=64)
    adapter = HFAdapter(model, vocabulary=VOCABULARY)
    pairs = tier2_pairs(model, _World(0, hidden), n_pairs, 0)
    sv = SteeringVectors(tau=0.0, n_tokens=2, n_gen_positions=0, random_state=0)
    _fit_unfiltered(sv, adapter, pairs)
    loc = CircuitLocalizer(sv, n_gen_positions=0)
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        loc.score_heads(adapter, pairs, WHEEL, metric="projection", denoising=False)
        best = min(best, time.process_time() - t)
    return best


def _fit_unfiltered(sv, adapter, pairs) -> None:
    """Steering vectors without the hit-rate filter (timing only: an untrained model hits nothing,
    so every pair is kept and no description is generated)."""
    sv.valid_ = torch.ones(len(pairs), dtype=torch.bool)
    sv.continuation_ = torch.zeros(len(pairs), sv.n_tokens, dtype=torch.long)
    diffs, norms = sv._differences(adapter, pairs)
    sv.S_ = diffs[:, :, pairs.query_pos].mean(0)
    sv.S_generated_ = torch.zeros_like(sv.S_)
    sv.S_per_emotion_ = sv.S_[None].repeat(len(WHEEL), 1, 1)
    sv.residual_norm_ = norms


def scaling_tasks(config: ScalingConfig) -> list:
    return [{"heads": int(h)} for h in config.heads]


@cpu_only("a CPU-seconds measurement")
def run_scaling(config: ScalingConfig, seed: int, task: dict) -> dict:
    seconds = head_scoring_seconds(config.n_layers, task["heads"], config.hidden, config.n_pairs, config.repeats)
    return {"components": config.n_layers * task["heads"], "seconds": seconds}


def summarize_scaling(jobs, config: ScalingConfig) -> Result:
    frame = pd.DataFrame([j.metrics for j in jobs]).groupby("components")["seconds"].min()
    slope = loglog_slope(frame.index.values, frame.values)
    fig, ax = subplots(figsize=(4, 3))
    ax.loglog(frame.index, frame.values, "o-")
    ax.set_xlabel("heads L·H")
    ax.set_ylabel("head-scoring seconds (projection proxy)")
    fig.tight_layout()
    return Result(tables={"head-scoring time": frame.reset_index()}, figures={"scaling: head scoring": fig},
                  measurements={"slope": slope})


EXPERIMENT = register(Experiment(
    slug="emotion_circuits",  # title, headline, claims and part descriptions: claims.toml
    parts=[
        Part(name="planted", run=run_planted, summarize=summarize_planted,
             quick=PlantedConfig(n_pairs=80, betas=(2.0,), gammas=(2.0,)), full=PlantedConfig(),
             seeds=(0, 1, 2, 3, 4), quick_seeds=(0,)),
        Part(name="slotted", run=run_planted, summarize=summarize_planted,
             quick=PlantedConfig(n_pairs=80, betas=(2.0,), gammas=(2.0,), toy="slotted"),
             full=PlantedConfig(toy="slotted"), seeds=(0, 1, 2, 3, 4), quick_seeds=(0,)),
        Part(name="trained", run=run_trained, summarize=summarize_trained,
             quick=TrainedConfig(steps=40, n_analysis=30, n_dev=16, n_test=30, betas=(2.0,), gammas=(2.0,),
                                 cache=False),
             full=TrainedConfig(), seeds=(0, 1, 2), quick_seeds=(0,)),
        Part(name="scaling", run=run_scaling, summarize=summarize_scaling, tasks=scaling_tasks,
             quick=ScalingConfig(heads=(8, 16), n_pairs=8, repeats=1), full=ScalingConfig(), seeds=(0,),
             quick_seeds=(0,)),
    ],
))
