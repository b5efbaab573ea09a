"""Reproduction of ILR's claims at CPU scale (spec section 6); the claims are in ``claims.toml``.

Parts
-----
``E1``
    Long-tailed MNIST-1D at ρ = 100 (the headline world), 10 paired seeds: ILR (official,
    not detached) vs CE, the base method without the paper's component (CE-DRW: the same
    deferral with class-balanced weights) and the strong baselines Balanced Softmax and
    LDAM-DRW, plus the detached ablation; all with the same 1-D CNN and cosine classifier,
    schedule, epochs and seeds, each at its own learning rate chosen on the dev seeds.
    Measures top-1 (balanced), many/medium/few-shot accuracy, the loss imbalance
    coefficient and NC1/NC2/NC3; every comparison is paired over seeds with an interval.
``E1b``
    The same at ρ = 10, 5 paired seeds (Student-t intervals), without the detached ablation.
``dev`` (opt-in)
    The learning-rate grid on the dev seeds that chose :data:`TUNED_LR` and
    :data:`COMPETITOR` by :func:`choose_on_dev` (the rule, written before the test seeds ran).
``ablation`` (opt-in)
    ρ = 50 and the remaining variants: focal, class-balanced CE, ILR with α = 1 and the
    ``inv_sqrt_freq`` prior, ILR with the official MiLe learning-rate schedule (report only).
``properties``
    Experiment B: the closed form and gradient identities on random logits.
``scaling``
    Cost of the ILR loss vs cross-entropy over batch size and class count.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from icml26.core.claims import Measurement
from icml26.core.device import cpu_only, job_device, to_numpy, uses_device
from icml26.core.experiment import Experiment, Part, Result, register
from icml26.core.figures import subplots
from icml26.core.stats import (loglog_slope, mean_std, paired_mean_interval, paired_t_interval,
                               sign_test, summary_table)

from .data import load_mnist1d_lt
from .neural_collapse import loss_imbalance_coefficient, nc_metrics, per_class_mean_loss
from .reweighting import InverseReweightLoss, per_class_mean
from .trainer import LongTailTrainer

# label -> (trainer method, loss_params, extra trainer params)
VARIANTS = {
    "CE": ("ce", None, {}),
    "CE-DRW": ("ce_drw", None, {}),
    "BalancedSoftmax": ("bsm", None, {}),
    "LDAM-DRW": ("ldam_drw", None, {}),
    "ILR": ("ilr", None, {}),
    "ILR-detached": ("ilr", {"detach_weights": True}, {}),
    "Focal": ("focal", {"gamma": 1.0}, {}),
    "CB-CE": ("cb", {"beta": 0.9999}, {}),
    "ILR-a1-invsqrt": ("ilr", {"alpha": 1.0, "prior": "inv_sqrt_freq"}, {}),
    "ILR-MiLe": ("ilr", None, {"schedule": "mile"}),
    "CE-MiLe": ("ce", None, {"schedule": "mile"}),
}
STRONG_BASELINES = ("CE-DRW", "BalancedSoftmax", "LDAM-DRW")
BASE_METHOD = "CE-DRW"  # the paper's deferral without its inverse-problem weights
METRICS = ["top1", "many", "medium", "few", "lic", "loss_ratio", "nc1", "nc2_means",
           "nc2_classifier", "nc3"]

# -- choices made on dev seeds (never reported as results), before the test seeds ran --------
DEV_SEEDS = (100, 101)
DEV_RHO = 100.0
DEV_LR_GRID = (0.025, 0.05, 0.1, 0.2, 0.4)
DEV_METHODS = ("CE", "CE-DRW", "BalancedSoftmax", "LDAM-DRW", "ILR")
# The rule (:func:`choose_on_dev`): each method's learning rate is the grid value with the
# highest mean balanced top-1 over DEV_SEEDS at ρ = DEV_RHO (ties: the smaller lr); the
# competitor is the strong baseline with the highest such mean at its own lr. The same grid
# and seeds for every method (equal dev budget). Output of `icml26 run inverse_reweight
# --exp dev` (the dev part checks that these constants are what the rule picks).
TUNED_LR = {"CE": 0.2, "CE-DRW": 0.2, "BalancedSoftmax": 0.4, "LDAM-DRW": 0.05, "ILR": 0.2}
COMPETITOR = "LDAM-DRW"
# Variants without their own dev run use the lr of the method they modify.
LR_FAMILY = {"ILR-detached": "ILR", "ILR-a1-invsqrt": "ILR", "ILR-MiLe": "ILR",
             "Focal": "CE", "CB-CE": "CE", "CE-MiLe": "CE"}
# Paired intervals: the BCa bootstrap from this many seeds up, the Student-t interval below
# (a bootstrap over a handful of seeds is about [min, max] and too narrow).
BCA_MIN_PAIRS = 10
INTERVAL_LEVEL = 0.95


@dataclass(frozen=True)
class LongTailConfig:
    """One MNIST-1D-LT comparison (spec section 6, Experiment A)."""

    rhos: tuple = (100.0,)
    methods: tuple = ("CE", "CE-DRW", "BalancedSoftmax", "LDAM-DRW", "ILR", "ILR-detached")
    num_samples: int = 20000
    epochs: int = 60
    batch_size: int = 128
    # lr: the shared learning rate of the old rule (tuned_lr = False); tuned_lr = True gives
    # each method its dev-chosen TUNED_LR.
    lr: float = 0.1
    tuned_lr: bool = True
    # competitor: "dev" = COMPETITOR (chosen on the dev seeds); "test_max" = the old rule,
    # the strong baseline with the highest mean test top-1 (selected on the test seeds).
    competitor: str = "dev"
    lr_grid: tuple = ()  # the dev part: one task per (method, lr)
    weight_decay: float = 5e-4
    warmup_frac: float = 0.05
    switch_frac: float = 0.8


def method_lr(method: str, config: LongTailConfig) -> float:
    """The learning rate a test run of ``method`` uses under ``config``."""
    if not config.tuned_lr:
        return config.lr
    return TUNED_LR[LR_FAMILY.get(method, method)]


def long_tail_tasks(config: LongTailConfig) -> list:
    unknown = [m for m in config.methods if m not in VARIANTS]
    if unknown:
        raise ValueError(f"methods: unknown {unknown}; known: {sorted(VARIANTS)}")
    if config.competitor not in ("dev", "test_max"):
        raise ValueError(f"competitor must be 'dev' or 'test_max', got {config.competitor!r}")
    if config.lr_grid:
        return [{"rho": float(rho), "method": m, "lr": float(lr)} for rho in config.rhos
                for m in config.methods for lr in config.lr_grid]
    return [{"rho": float(rho), "method": m, "lr": method_lr(m, config)}
            for rho in config.rhos for m in config.methods]


@uses_device
def run_long_tail(config: LongTailConfig, seed: int, task: dict) -> dict:
    """Train one (ρ, method, lr, seed) and measure accuracy, LIC and NC geometry."""
    start = time.perf_counter()
    X, y, X_test, y_test, counts = load_mnist1d_lt(task["rho"], num_samples=config.num_samples,
                                                   seed=seed)
    method, loss_params, extra = VARIANTS[task["method"]]
    lr = float(task.get("lr", method_lr(task["method"], config)))
    clf = LongTailTrainer(method, epochs=config.epochs, batch_size=config.batch_size, lr=lr,
                          weight_decay=config.weight_decay, warmup_frac=config.warmup_frac,
                          switch_frac=config.switch_frac, loss_params=loss_params,
                          random_state=seed, device=job_device(), **extra).fit(X, y)
    n_classes = len(counts)
    pred = clf.predict(X_test)
    per_class_acc = np.array([np.mean(pred[y_test == c] == c) for c in range(n_classes)])
    groups = np.array_split(np.argsort(-counts, kind="stable"), 3)  # many / medium / few
    train_loss = clf.per_sample_loss(X, y)
    lic, ratio = loss_imbalance_coefficient(train_loss, y, n_classes, return_ratio=True)
    nc = nc_metrics(clf.transform(X), y, to_numpy(clf.model_.classifier.normalized_weight()))
    return {
        "rho": task["rho"], "method": task["method"], "lr": lr, "seed": seed,
        "top1": float(per_class_acc.mean()),
        "many": float(per_class_acc[groups[0]].mean()),
        "medium": float(per_class_acc[groups[1]].mean()),
        "few": float(per_class_acc[groups[2]].mean()),
        "lic": lic, "loss_ratio": ratio,
        "nc1": nc["nc1"], "nc2_means": nc["nc2_means"], "nc2_classifier": nc["nc2_classifier"],
        "nc3": nc["nc3"],
        "per_class_loss": per_class_mean_loss(train_loss, y, n_classes),
        "per_class_acc": per_class_acc, "counts": counts,
        "final_train_loss": clf.history_[-1], "seconds": time.perf_counter() - start,
    }


def paired_measurement(diffs, digits: int = 2) -> Measurement:
    """Mean of per-seed paired differences with its interval and a sign-test count.

    The interval is the paired BCa bootstrap (``core.stats.paired_mean_interval``) from
    :data:`BCA_MIN_PAIRS` seeds up, the Student-t interval below; its half-width and the
    per-seed values are in the note.

    Examples
    --------
    >>> m = paired_measurement([1.0, 2.0, 0.5, 1.5, 1.0])
    >>> round(m.value, 2), [round(v, 2) for v in m.interval]
    (1.2, [0.49, 1.91])
    """
    d = np.asarray(list(diffs), dtype=float)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return Measurement(None, incomplete="no paired seeds")
    if d.size >= BCA_MIN_PAIRS:
        low, high = paired_mean_interval(d, INTERVAL_LEVEL)
        kind = "BCa"
    else:
        low, high = paired_t_interval(d, INTERVAL_LEVEL)
        kind = "t"
    test = sign_test(d)
    fmt = f"{{:+.{digits}f}}"
    note = (f"{test['wins']}/{test['losses']} seeds (sign test p = {test['p']:.3g}); "
            f"{INTERVAL_LEVEL:.0%} {kind} interval [{fmt.format(low)}, {fmt.format(high)}], "
            f"half-width {(high - low) / 2:.{digits}f}; per seed: "
            + ", ".join(fmt.format(v) for v in d))
    return Measurement(float(d.mean()), interval=(low, high), note=note)


def _by_seed(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    return frame.pivot_table(index="seed", columns="method", values=metric)


def choose_competitor(frame: pd.DataFrame, rule: str = "dev") -> str | None:
    """The strong baseline the headline compares with: :data:`COMPETITOR` (chosen on the dev
    seeds) or, with ``rule="test_max"`` (the old rule), the one with the best test mean."""
    present = [m for m in STRONG_BASELINES if m in set(frame["method"])]
    if rule == "dev":
        return COMPETITOR if COMPETITOR in present else None
    if not present:
        return None
    means = frame[frame["method"].isin(present)].groupby("method")["top1"].mean()
    return str(means.idxmax())


def long_tail_measurements(frame: pd.DataFrame, competitor: str | None) -> dict:
    """The claim table's measurements of one ρ from the per-job rows (one row per seed and
    method): paired top-1 differences in points, per-seed LIC and NC1 ratios to CE, NC2
    differences to CE, each with its interval; the same statistic for the negative control
    (CE-DRW, or CE where CE-DRW is itself the compared method) and the competitor."""
    top1 = 100 * _by_seed(frame, "top1")
    have = set(top1.columns)
    out: dict = {}

    def diff(a, b, key, table=top1):
        if a in have and b in have:
            out[key] = paired_measurement((table[a] - table[b]).dropna(),
                                          digits=2 if table is top1 else 4)

    def ratio(a, metric, key):
        table = _by_seed(frame, metric)
        if a in have and "CE" in have:
            out[key] = paired_measurement((table[a] / table["CE"]).dropna(), digits=3)

    diff("ILR", "CE", "ilr_vs_ce")
    diff(BASE_METHOD, "CE", "cedrw_vs_ce")
    diff("ILR", BASE_METHOD, "ilr_vs_cedrw")
    diff("CE", BASE_METHOD, "ce_vs_cedrw")
    if competitor is not None:
        control = BASE_METHOD if competitor != BASE_METHOD else "CE"
        diff("ILR", competitor, "ilr_vs_best_baseline")
        diff(control, competitor, "base_vs_best_baseline")
        diff(competitor, "CE", "best_baseline_vs_ce")
    nc2 = _by_seed(frame, "nc2_classifier")
    for method, suffix in (("ILR", ""), (BASE_METHOD, "_cedrw"), (competitor, "_best_baseline")):
        if method is None:
            continue
        ratio(method, "lic", f"lic_ratio{suffix}")
        ratio(method, "nc1", f"nc1_ratio{suffix}")
        diff(method, "CE", f"nc2_diff{suffix}", table=nc2)
    diff("ILR-detached", "ILR", "detached_vs_ilr")
    return out


def _per_class_figure(frame: pd.DataFrame):
    rhos = sorted(frame["rho"].unique(), reverse=True)
    fig, axes = subplots(2, len(rhos), figsize=(5.5 * len(rhos), 7), squeeze=False,
                         layout="tight")
    for col, rho in enumerate(rhos):
        sub = frame[frame["rho"] == rho]
        for method, group in sub.groupby("method", sort=False):
            loss = np.mean(np.stack(group["per_class_loss"].map(np.asarray)), axis=0)
            acc = np.mean(np.stack(group["per_class_acc"].map(np.asarray)), axis=0)
            axes[0, col].plot(loss, marker="o", label=method)
            axes[1, col].plot(acc, marker="o", label=method)
        axes[0, col].set(yscale="log", title=f"MNIST-1D-LT ρ={rho:g}: per-class train CE",
                         xlabel="class (head → tail)", ylabel="mean CE (train, eval mode)")
        axes[1, col].set(title="per-class test accuracy", xlabel="class (head → tail)",
                         ylabel="accuracy")
        axes[0, col].legend(fontsize=7)
    return fig


def _long_tail_frame(jobs: list, config: LongTailConfig) -> pd.DataFrame:
    frame = pd.DataFrame([j.metrics for j in jobs])
    order = {m: i for i, m in enumerate(config.methods)}
    return frame.sort_values(["rho", "method"], key=lambda s: s.map(order) if s.name == "method"
                             else -s, kind="stable")


def summarize_long_tail(jobs: list, config: LongTailConfig) -> Result:
    frame = _long_tail_frame(jobs, config)
    table = summary_table(frame.to_dict("records"), by=["rho", "method"],
                          metrics=["lr"] + METRICS)
    if frame["rho"].nunique() != 1:
        raise ValueError(f"a claim part measures one ρ, got {sorted(frame['rho'].unique())}")
    competitor = choose_competitor(frame, config.competitor)
    measurements = long_tail_measurements(frame, competitor)
    notes = [f"competitor: {competitor} ({'chosen on dev seeds ' + str(DEV_SEEDS) if config.competitor == 'dev' else 'best test mean (old rule)'}); "
             f"learning rates: " + ", ".join(f"{m} {method_lr(m, config):g}"
                                               for m in config.methods)]
    seconds = mean_std(frame["seconds"])
    notes.append(f"per-run training + evaluation time {seconds[0]:.1f} ± {seconds[1]:.1f} s "
                 f"wall (1 thread; machine shared, so inflated)")
    return Result(tables={"mnist1d_lt": table}, figures={"per_class": _per_class_figure(frame)},
                  measurements=measurements, notes=notes)


def summarize_ablation(jobs: list, config: LongTailConfig) -> Result:
    """Report only: the ablation variants' table and figure (no claims)."""
    frame = _long_tail_frame(jobs, config)
    table = summary_table(frame.to_dict("records"), by=["rho", "method"],
                          metrics=["lr"] + METRICS)
    return Result(tables={"mnist1d_lt": table}, figures={"per_class": _per_class_figure(frame)})


# -- dev: the learning-rate grid ------------------------------------------------------------

def choose_on_dev(frame: pd.DataFrame) -> tuple[dict, str | None]:
    """The rule behind :data:`TUNED_LR` and :data:`COMPETITOR`, applied to dev rows
    (``method``, ``lr``, ``seed``, ``top1``): per method the lr with the highest mean top-1
    (ties: the smaller lr); the competitor is the strong baseline with the highest mean at
    its chosen lr.

    Examples
    --------
    >>> rows = [{"method": m, "lr": lr, "seed": s, "top1": t} for s in (0, 1)
    ...         for m, lr, t in (("CE", 0.1, 0.8), ("CE", 0.2, 0.7), ("LDAM-DRW", 0.1, 0.85))]
    >>> choose_on_dev(pd.DataFrame(rows))
    ({'CE': 0.1, 'LDAM-DRW': 0.1}, 'LDAM-DRW')
    """
    means = frame.groupby(["method", "lr"])["top1"].mean().reset_index()
    means = means.sort_values(["method", "top1", "lr"], ascending=[True, False, True],
                              kind="stable")
    best = means.groupby("method", sort=False).head(1)
    lrs = {str(r.method): float(r.lr) for r in best.itertuples()}
    strong = best[best["method"].isin(STRONG_BASELINES)]
    competitor = None if strong.empty else str(
        strong.sort_values("top1", ascending=False, kind="stable").iloc[0]["method"])
    return dict(sorted(lrs.items())), competitor


def summarize_dev(jobs: list, config: LongTailConfig) -> Result:
    frame = pd.DataFrame([j.metrics for j in jobs])
    table = (100 * frame.pivot_table(index="method", columns="lr", values="top1")).round(2)
    table = table.reset_index()
    table.columns = [str(c) if c == "method" else f"lr={c:g}" for c in table.columns]
    lrs, competitor = choose_on_dev(frame)
    matches = all(TUNED_LR.get(m) == lr for m, lr in lrs.items()) and competitor == COMPETITOR
    note = (f"rule picks lr {lrs} and competitor {competitor}; the code's constants: "
            f"TUNED_LR {TUNED_LR}, COMPETITOR {COMPETITOR}")
    return Result(tables={"dev_top1_points": table},
                  measurements={"constants_match_rule": Measurement(bool(matches), note=note)},
                  notes=[note])


# -- properties (Experiment B) -----------------------------------------------------------

@dataclass(frozen=True)
class PropertiesConfig:
    n_classes: int = 20
    batch_size: int = 256
    absent_classes: int = 4


@cpu_only("float64 gradient property checks")
def run_properties(config: PropertiesConfig, seed: int) -> dict:
    """Closed-form and gradient identities of ILR on random logits (spec Experiment B)."""
    gen = torch.Generator().manual_seed(seed)
    C, B = config.n_classes, config.batch_size
    present_classes = torch.randperm(C, generator=gen)[config.absent_classes:]
    targets = present_classes[torch.randint(len(present_classes), (B,), generator=gen)]
    logits = torch.randn(B, C, generator=gen, dtype=torch.float64) * 2.0
    counts = torch.randint(5, 500, (C,), generator=gen)
    loss_fn = InverseReweightLoss(counts, max_weight=1e9)
    loss_fn.batch_presence.copy_(torch.randint(1, 50, (C,), generator=gen).float())
    loss_fn.update_macro_weights()

    z = logits.clone().requires_grad_(True)
    (grad_ilr,) = torch.autograd.grad(loss_fn(z, targets), z)
    ce = F.cross_entropy(z, targets, reduction="none")
    class_loss, present = per_class_mean(ce, targets, C)
    macro_average = class_loss[present].mean()
    (grad_macro,) = torch.autograd.grad(macro_average, z, retain_graph=True)
    s_b = float(loss_fn.macro_weights[targets].mean())
    cos = float(F.cosine_similarity(grad_ilr.flatten(), grad_macro.flatten(), dim=0))
    norm_ratio = float(grad_ilr.norm() / (s_b * grad_macro.norm()))

    plain = InverseReweightLoss(counts, max_weight=1e9)
    weights = plain.class_weights(class_loss, present)
    equalised = float((weights * class_loss - macro_average)[present].abs().max().detach())
    (grad_absent,) = torch.autograd.grad(weights[~present].sum(), z, allow_unused=True,
                                         materialize_grads=True)

    heavy = InverseReweightLoss(counts, alpha=1e10, prior="inv_freq")
    heavy_w = heavy.class_weights(class_loss.detach(), present)
    to_prior = float((heavy_w - heavy.prior_weights).abs().max())

    clipped = InverseReweightLoss(counts, max_weight=2.0)
    skewed = class_loss.detach().clone()
    skewed[present.nonzero()[0]] = 1e-4  # a near-perfectly fitted class
    clip_max = float(clipped.class_weights(skewed, present).max())

    detached = InverseReweightLoss(counts, detach_weights=True, max_weight=1e9)
    (grad_det,) = torch.autograd.grad(detached(z, targets), z)
    cos_det = float(F.cosine_similarity(grad_det.flatten(), grad_macro.flatten(), dim=0))
    return {"equalised_error": equalised, "grad_cosine": cos, "grad_norm_ratio": norm_ratio,
            "absent_grad_norm": float(grad_absent.norm()), "alpha_inf_error": to_prior,
            "clip_max": clip_max, "clip_bar": 2.0, "detached_cosine": cos_det,
                    "absent_prior_error": float((weights[~present] - plain.prior_weights[~present])
                                        .abs().max().detach())}


def summarize_properties(jobs: list, config: PropertiesConfig) -> Result:
    frame = pd.DataFrame([j.metrics for j in jobs])
    measurements = {
        "equalised_error": float(frame["equalised_error"].max()),
        "grad_cosine": float(frame["grad_cosine"].min()),
        "grad_norm_ratio": float(frame["grad_norm_ratio"].max()),
        "alpha_inf_error": float(frame["alpha_inf_error"].max()),
        "absent_classes": float(max(frame["absent_grad_norm"].max(),
                                    frame["absent_prior_error"].max())),
        "clip_max": float(frame["clip_max"].max()),
    }
    notes = [f"detached-variant gradient cosine with the macro-average gradient: "
             f"{frame['detached_cosine'].min():.4f}–{frame['detached_cosine'].max():.4f} "
             f"(< 1: the detach switch changes the update direction)"]
    return Result(tables={"properties": frame}, measurements=measurements, notes=notes)


# -- scaling -------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingConfig:
    batch_sizes: tuple = (128, 1024, 8192)
    class_counts: tuple = (10, 100, 1000)
    repeats: int = 30


def time_backward(fn, inputs: torch.Tensor, targets: torch.Tensor, repeats: int) -> float:
    """Median CPU seconds of ``fn(inputs, targets).backward()`` (after one warm-up call).

    Process CPU time, not wall time, so that other load on a shared machine does not
    enter the measurement (run with one torch thread).
    """
    times = []
    for _ in range(repeats + 1):
        x = inputs.detach().requires_grad_(True)
        start = time.process_time()
        fn(x, targets).backward()
        times.append(time.process_time() - start)
    return float(np.median(times[1:]))


def _cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits, targets)


def scaling_tasks(config: ScalingConfig) -> list:
    return [{"n_classes": int(c)} for c in config.class_counts]


@cpu_only("a CPU-seconds measurement")
def run_scaling(config: ScalingConfig, seed: int, task: dict) -> dict:
    """Time ILR's extra work (per-class means, closed form, weighting; forward + backward on
    a per-sample loss vector) and the full ILR loss vs cross-entropy on random logits."""
    gen = torch.Generator().manual_seed(seed)
    C = task["n_classes"]
    rows = []
    for B in config.batch_sizes:
        logits = torch.randn(B, C, generator=gen)
        targets = torch.randint(C, (B,), generator=gen)
        per_sample = torch.rand(B, generator=gen) + 0.1
        ilr = InverseReweightLoss(torch.arange(1, C + 1))
        rows.append({"batch": B, "n_classes": C,
                     "reweight_s": time_backward(ilr.reweight, per_sample, targets, config.repeats),
                     "ilr_s": time_backward(ilr, logits, targets, config.repeats),
                     "ce_s": time_backward(_cross_entropy, logits, targets, config.repeats)})
    return {"rows": rows}


def summarize_scaling(jobs: list, config: ScalingConfig) -> Result:
    frame = pd.DataFrame([r for j in jobs for r in j.metrics["rows"]])
    frame = frame.groupby(["batch", "n_classes"], as_index=False)[
        ["reweight_s", "ilr_s", "ce_s"]].median()
    frame["reweight_over_ce"] = frame["reweight_s"] / frame["ce_s"]
    frame["ilr_over_ce"] = frame["ilr_s"] / frame["ce_s"]
    slope = loglog_slope(frame["batch"] + frame["n_classes"], frame["reweight_s"])
    largest = frame.iloc[(frame["batch"] * frame["n_classes"]).argmax()]
    measurements = {"reweight_slope": slope}
    notes = [f"at |B|={int(largest['batch'])}, C={int(largest['n_classes'])}: reweighting "
             f"costs {largest['reweight_over_ce']:.3f}× a CE forward+backward; the whole ILR "
             f"loss {largest['ilr_over_ce']:.2f}× CE (includes the O(|B|·C) NaN check on the "
             f"logits). Times are process CPU seconds (one thread)."]
    return Result(tables={"scaling": frame}, measurements=measurements, notes=notes)


EXPERIMENT = register(Experiment(
    slug="inverse_reweight",  # title, claims and part descriptions: claims.toml
    parts=[
        Part(name="E1", run=run_long_tail, summarize=summarize_long_tail, tasks=long_tail_tasks,
             quick=LongTailConfig(methods=("CE", "CE-DRW", "LDAM-DRW", "ILR", "ILR-detached"),
                                  num_samples=10000, epochs=40),
             full=LongTailConfig(), seeds=tuple(range(10)), quick_seeds=(0, 1)),
        Part(name="E1b", run=run_long_tail, summarize=summarize_long_tail,
             tasks=long_tail_tasks,
             quick=LongTailConfig(rhos=(10.0,), methods=("CE", "CE-DRW", "LDAM-DRW", "ILR"),
                                  num_samples=10000, epochs=40),
             full=LongTailConfig(rhos=(10.0,), methods=(
                 "CE", "CE-DRW", "BalancedSoftmax", "LDAM-DRW", "ILR")),
             seeds=tuple(range(5)), quick_seeds=(0, 1)),
        Part(name="dev", run=run_long_tail, summarize=summarize_dev, tasks=long_tail_tasks,
             quick=LongTailConfig(methods=("CE", "LDAM-DRW", "ILR"), lr_grid=(0.1, 0.2),
                                  num_samples=10000, epochs=40),
             full=LongTailConfig(rhos=(DEV_RHO,), methods=DEV_METHODS, lr_grid=DEV_LR_GRID),
             seeds=DEV_SEEDS, quick_seeds=DEV_SEEDS[:1]),
        Part(name="ablation", run=run_long_tail, summarize=summarize_ablation,
             tasks=long_tail_tasks,
             quick=LongTailConfig(rhos=(50.0,), methods=("CE", "ILR", "ILR-a1-invsqrt"),
                                  num_samples=10000, epochs=40),
             full=LongTailConfig(rhos=(50.0,), methods=(
                 "CE", "Focal", "CB-CE", "ILR", "ILR-a1-invsqrt", "CE-MiLe", "ILR-MiLe")),
             seeds=(0, 1, 2), quick_seeds=(0,)),
        Part(name="properties", run=run_properties, summarize=summarize_properties,
             quick=PropertiesConfig(), full=PropertiesConfig(), seeds=(0, 1, 2),
             quick_seeds=(0,)),
        Part(name="scaling", run=run_scaling, summarize=summarize_scaling, tasks=scaling_tasks,
             quick=ScalingConfig(repeats=5), full=ScalingConfig(), seeds=(0,), quick_seeds=(0,)),
    ],
))
