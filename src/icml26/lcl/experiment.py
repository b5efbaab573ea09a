"""Reproduction of LCL's claims on the branching-fate lineage-tracing simulator.

Parts: ``fate`` (Experiment A: fate composition of unseen clones from early cells, with the
cell-cycle invariance check and the permuted-label negative control), ``clone`` (Experiment B:
kNN clone recovery and clone separation on held-out cells of seen clones), ``scaling``
(training time against the number of cells, and the batch count per epoch), and the opt-in
``semi`` (the entropy penalty on unlabelled cells on or off).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from icml26.core.device import cpu_only, job_device, uses_device  # noqa: E402
from icml26.core.experiment import Claim, Experiment, Part, Result, register  # noqa: E402
from icml26.core.stats import loglog_slope, summary_table  # noqa: E402

from .baselines import NBVAE, pca_embedding  # noqa: E402
from .data import simulate_lineage_tracing  # noqa: E402
from .fate import FateCompositionRegressor, clone_fate_compositions, kl_composition  # noqa: E402
from .lcl import LCL  # noqa: E402
from .metrics import (clone_calinski_harabasz, cycle_r2, knn_clone_accuracy,  # noqa: E402
                      knn_clone_containment, knn_lineage_purity)

TITLE = ("Leveraging Lineage Barcodes as Natural Augmentations for Contrastive Learning of "
         "Cell Fate in scRNA-seq Data")
LCL_SEED_OFFSET = 3407        # LCL's weights: random_state = 3407 + seed (the code's 3407 at seed 0)
PERMUTATION_STREAM = 99       # rng stream of the permuted-label control
SPLIT_STREAM = 1              # rng stream of the train / test split


# -- shared pieces ----------------------------------------------------------------------

@dataclass(frozen=True)
class LCLSettings:
    """LCL at CPU scale: a smaller network, 30 epochs with a 3x learning rate to match, and the
    protocol of the prototype that calibrated the bars (one optimiser step per batch and a new
    batch list each epoch); no validation split, so every batch trains. ``CODE_PROTOCOL`` below
    keeps the official code's fixed batch list and 5-batch gradient accumulation."""

    hidden_dims: tuple = (256, 128, 64)
    embedding_dim: int = 32
    batch_size: int = 50
    size_factor: float = 0.3
    temperature: float = 0.5
    lr: float = 9e-4
    max_epochs: int = 30
    warmup_epochs: int = 3
    grad_accum_steps: int = 1
    resample_each_epoch: bool = True
    lambda_penalty: float = 0.05
    n_unlabeled_per_batch: int = 5
    val_fraction: float = 0.0


CODE_PROTOCOL = {"grad_accum_steps": 5, "resample_each_epoch": False}


def _lcl(settings: LCLSettings, seed: int, **overrides) -> LCL:
    params = {k: getattr(settings, k) for k in LCLSettings.__dataclass_fields__}
    params = {"device": job_device(), **params, **overrides}
    return LCL(random_state=LCL_SEED_OFFSET + seed, n_threads=1, **params)


def _nbvae(n_latent: int, epochs: int, seed: int) -> NBVAE:
    return NBVAE(n_latent=n_latent, max_epochs=epochs, random_state=seed, device=job_device())


def _mean(frame: pd.DataFrame, method: str, metric: str) -> float:
    values = frame.loc[frame["method"] == method, metric].astype(float)
    return float(values.mean()) if len(values) else float("nan")


def _per_seed(frame: pd.DataFrame, method: str, metric: str) -> pd.Series:
    rows = frame[frame["method"] == method]
    return rows.set_index("seed")[metric].astype(float)


def _ratio(a: float, b: float) -> float:
    return a / b if b and math.isfinite(a) and math.isfinite(b) else float("nan")


def _bar_figure(frame: pd.DataFrame, metrics: list[tuple[str, str]], methods: list[str], title: str,
                log: bool = False):
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.4 * len(metrics), 3.6))
    axes = np.atleast_1d(axes)
    for ax, (metric, label) in zip(axes, metrics):
        shown = [m for m in methods if frame.loc[frame["method"] == m, metric].notna().any()]
        means = [_mean(frame, m, metric) for m in shown]
        stds = [frame.loc[frame["method"] == m, metric].astype(float).std(ddof=0) for m in shown]
        ax.bar(range(len(shown)), means, yerr=stds, color="tab:blue", alpha=0.8, capsize=3)
        ax.set_xticks(range(len(shown)))
        ax.set_xticklabels(shown, rotation=35, ha="right", fontsize=8)
        ax.set_ylabel(label)
        if log:
            ax.set_yscale("log")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def _rows(jobs) -> pd.DataFrame:
    return pd.DataFrame.from_records([dict(r, seed=j.seed) for j in jobs for r in j.metrics["rows"]])


# -- Part fate (Experiment A) -------------------------------------------------------------

@dataclass(frozen=True)
class FateConfig:
    n_clones: int = 200
    holdout_fraction: float = 0.2
    min_late_cells: int = 3
    lcl: LCLSettings = LCLSettings()
    nbvae_epochs: int = 200
    head_max_epochs: int = 5000
    head_patience: int = 150
    purity_k: int = 5


FATE_TASKS = ("lcl", "lcl_permuted", "lcl_code", "nbvae", "linear")
LCL_ROWS = {"lcl": "LCL (h)", "lcl_permuted": "LCL, permuted clones (h)",
            "lcl_code": "LCL, code protocol (h)"}


def fate_tasks(config: FateConfig) -> list:
    return [{"method": m} for m in FATE_TASKS]


def _fate_split(config: FateConfig, seed: int):
    data = simulate_lineage_tracing(n_clones=config.n_clones, seed=seed)
    rng = np.random.default_rng([seed, SPLIT_STREAM])
    n_test = max(2, int(round(config.holdout_fraction * config.n_clones)))
    test_clones = rng.choice(config.n_clones, size=n_test, replace=False)
    test = np.isin(data.clone, test_clones)
    train_idx, test_idx = np.flatnonzero(~test), np.flatnonzero(test)
    targets = {}
    for name, idx in (("train", train_idx), ("test", test_idx)):
        early, Y = clone_fate_compositions(data.clone[idx], data.cell_type[idx], data.time[idx], 0, 1,
                                           data.classes, min_late_cells=config.min_late_cells)
        targets[name] = (early, Y)
    truth = data.fate_bias[data.clone[test_idx][targets["test"][0]]]
    return data, train_idx, test_idx, targets, truth


def _fate_row(method, E_train, E_test, split, config, seed, extra=None) -> dict:
    data, _, test_idx, targets, truth = split
    (early_tr, Y_tr), (early_te, Y_te) = targets["train"], targets["test"]
    head = FateCompositionRegressor(max_epochs=config.head_max_epochs, patience=config.head_patience,
                                    random_state=seed, device=job_device()).fit(E_train[early_tr], Y_tr)
    pred = head.predict(E_test[early_te])
    row = {"method": method, "kl_gt": kl_composition(truth, pred), "kl_emp": kl_composition(Y_te, pred),
           "cycle_r2": cycle_r2(E_test, data.cc_phase[test_idx], seed=seed),
           "purity_5nn": knn_lineage_purity(E_test, data.clone[test_idx], k=config.purity_k),
           "dim": int(E_train.shape[1]), "head_epochs": head.n_epochs_}
    row.update(extra or {})
    return row


def _fit_lcl_embeddings(settings, X_train, clones, X_test, seed, **overrides):
    model = _lcl(settings, seed, **overrides).fit(X_train, clones, X_unlabeled=X_test)
    return model, model.transform(X_train), model.transform(X_test)


@uses_device
def run_fate(config: FateConfig, seed: int, task: dict) -> dict:
    split = _fate_split(config, seed)
    data, train_idx, test_idx, targets, truth = split
    X_tr, X_te = data.X[train_idx], data.X[test_idx]
    method, rows = task["method"], []
    start = time.perf_counter()
    if method in LCL_ROWS:
        clones = data.clone[train_idx]
        if method == "lcl_permuted":
            clones = np.random.default_rng([seed, PERMUTATION_STREAM]).permutation(clones)
        overrides = CODE_PROTOCOL if method == "lcl_code" else {}
        model, h_tr, h_te = _fit_lcl_embeddings(config.lcl, X_tr, clones, X_te, seed, **overrides)
        name = LCL_ROWS[method]
        extra = {"fit_seconds": time.perf_counter() - start, "epochs": model.n_epochs_}
        if method == "lcl":
            extra["cycle_r2_z"] = cycle_r2(model.transform(X_te, space="projection"),
                                           data.cc_phase[test_idx], seed=seed)
        rows.append(_fate_row(name, h_tr, h_te, split, config, seed, extra))
    elif method == "nbvae":
        vae = _nbvae(10, config.nbvae_epochs, seed).fit(data.counts[train_idx])
        extra = {"fit_seconds": time.perf_counter() - start}
        rows.append(_fate_row("NB-VAE (10)", vae.transform(data.counts[train_idx]),
                              vae.transform(data.counts[test_idx]), split, config, seed, extra))
    elif method == "linear":
        for k in (10, 32):
            E_tr, E_te = pca_embedding(X_tr, [X_te], n_components=k, seed=seed)
            rows.append(_fate_row(f"PCA ({k})", E_tr, E_te, split, config, seed))
        rows.append(_fate_row("raw log-expression", X_tr, X_te, split, config, seed))
        F = len(data.classes)
        uniform = np.full((len(truth), F), 1.0 / F)
        rows.append({"method": "uniform", "kl_gt": kl_composition(truth, uniform),
                     "kl_emp": kl_composition(targets["test"][1], uniform)})
    else:
        raise ValueError(f"unknown fate task {method!r}; expected one of {FATE_TASKS}")
    return {"rows": rows, "n_train_cells": int(train_idx.size), "n_test_cells": int(test_idx.size),
            "n_test_early": int(len(truth))}


FATE_METHODS = ["LCL (h)", "LCL, permuted clones (h)", "LCL, code protocol (h)", "NB-VAE (10)", "PCA (10)", "PCA (32)",
                "raw log-expression", "uniform"]


def _wins(frame, metric, rivals) -> tuple[int, int]:
    """Seeds where LCL beats every rival on ``metric``, and the number of seeds compared."""
    lcl = _per_seed(frame, "LCL (h)", metric)
    seeds = lcl.index
    for rival in rivals:
        seeds = seeds.intersection(_per_seed(frame, rival, metric).index)
    wins = sum(all(lcl[s] < _per_seed(frame, r, metric)[s] for r in rivals) for s in seeds)
    return int(wins), int(len(seeds))


def summarize_fate(jobs, config: FateConfig) -> Result:
    frame = _rows(jobs)
    for col in ("cycle_r2", "cycle_r2_z", "purity_5nn", "fit_seconds"):
        if col not in frame.columns:
            frame[col] = np.nan
    m = {(meth, met): _mean(frame, meth, met) for meth in FATE_METHODS
         for met in ("kl_gt", "kl_emp", "cycle_r2", "cycle_r2_z")}
    rivals = ["PCA (10)", "NB-VAE (10)"]
    claims, notes = [], []
    for metric, bar in (("kl_gt", 0.8), ("kl_emp", 0.85)):
        best_rival = min(m[(r, metric)] for r in rivals)
        ratio = _ratio(m[("LCL (h)", metric)], best_rival)
        claims.append(Claim.at_most(
            f"A {metric}: LCL / min(PCA-10, NB-VAE-10)", ratio, bar,
            paper="LCL 0.414 vs scVI 0.627 (CellTag), 0.361 vs 0.549 (LARRY top-200), test KL",
            note=f"LCL {m[('LCL (h)', metric)]:.3f}, PCA-10 {m[('PCA (10)', metric)]:.3f}, "
                 f"NB-VAE-10 {m[('NB-VAE (10)', metric)]:.3f}"))
        wins, n = _wins(frame, metric, rivals)
        claims.append(Claim.at_least(
            f"A {metric}: share of seeds where LCL beats PCA-10 and NB-VAE-10", wins / max(n, 1), 0.8,
            paper="LCL beats scVI on every data set", note=f"{wins} of {n} seeds"))
    claims.append(Claim.at_most(
        "A kl_gt: LCL / uniform", _ratio(m[("LCL (h)", "kl_gt")], m[("uniform", "kl_gt")]), 0.85,
        paper="learns fate signal", note=f"uniform {m[('uniform', 'kl_gt')]:.3f}"))
    r2_pca32 = m[("PCA (32)", "cycle_r2")]
    r2_z, r2_h = m[("LCL (h)", "cycle_r2_z")], m[("LCL (h)", "cycle_r2")]
    claims += [
        Claim.at_most("A cell-cycle R² of LCL projection z", r2_z, 0.15,
                      paper="clone-mates differ in cycle phase, so it is averaged out"),
        Claim.at_most("A cell-cycle R²: LCL z / PCA-32", _ratio(r2_z, r2_pca32), 0.25,
                      paper="cycle invariance", note=f"PCA-32 R² {r2_pca32:.3f}"),
        Claim.at_most("A cell-cycle R²: LCL h / PCA-32", _ratio(r2_h, r2_pca32), 0.5,
                      paper="cycle invariance", note=f"LCL h R² {r2_h:.3f}"),
        Claim.at_least("A negative control: kl_gt(LCL, permuted clones) / uniform",
                       _ratio(m[("LCL, permuted clones (h)", "kl_gt")], m[("uniform", "kl_gt")]), 0.9,
                       paper="(our control) the signal comes from the clone labels",
                       note=f"permuted {m[('LCL, permuted clones (h)', 'kl_gt')]:.3f}"),
    ]
    lcl_gt = m[("LCL (h)", "kl_gt")]
    code_gt = _mean(frame, "LCL, code protocol (h)", "kl_gt")
    notes.append(f"Reported, no bar: LCL with the official code's protocol (one batch list for all "
                 f"epochs, gradients accumulated over 5 batches) reaches KL_gt {code_gt:.3f} "
                 f"(ratio to min(PCA-10, NB-VAE-10) "
                 f"{_ratio(code_gt, min(m[(r, 'kl_gt')] for r in rivals)):.3f}); at 30 epochs it takes "
                 f"5x fewer optimiser steps and sees the same pairs every epoch.")
    for ref in ("PCA (32)", "raw log-expression"):
        verdict = "beats" if m[(ref, "kl_gt")] < lcl_gt else "does not beat"
        notes.append(f"Reported, no bar: a linear head on {ref} {verdict} LCL on this generator "
                     f"(KL_gt {m[(ref, 'kl_gt')]:.3f} vs LCL {lcl_gt:.3f}); the supervised head finds the "
                     f"weak priming direction itself when the embedding keeps it. LCL's claim here is "
                     f"against the scVI-sized 10-d embeddings and cycle invariance, not every probe.")
    table = summary_table(frame.to_dict("records"), "method",
                          ["kl_gt", "kl_emp", "cycle_r2", "cycle_r2_z", "purity_5nn", "fit_seconds"])
    fig = _bar_figure(frame, [("kl_gt", "KL(true fate bias ‖ pred)"), ("kl_emp", "KL(empirical ‖ pred)"),
                              ("cycle_r2", "cell-cycle R² (out of fold)")], FATE_METHODS,
                      "A: fate composition of unseen clones from early cells")
    return Result(tables={"A fate prediction (mean ± std over seeds)": table},
                  figures={"A fate prediction": fig}, claims=claims, notes=notes)


# -- Part clone (Experiment B) ------------------------------------------------------------

@dataclass(frozen=True)
class CloneConfig:
    n_clones: int = 200
    memory: float = 1.0
    min_clone_size: int = 10
    test_fraction: float = 0.1
    k: int = 30
    lcl: LCLSettings = LCLSettings()
    nbvae_epochs: int = 200


CLONE_TASKS = ("lcl", "nbvae", "linear")


def clone_tasks(config: CloneConfig) -> list:
    return [{"method": m} for m in CLONE_TASKS]


def _clone_split(config: CloneConfig, seed: int):
    data = simulate_lineage_tracing(n_clones=config.n_clones, memory=config.memory, seed=seed)
    rng = np.random.default_rng([seed, SPLIT_STREAM])
    test = np.zeros(data.n_cells, dtype=bool)
    for c in range(config.n_clones):
        members = np.flatnonzero(data.clone == c)
        if members.size >= config.min_clone_size:
            test[rng.choice(members, size=math.ceil(config.test_fraction * members.size), replace=False)] = True
    return data, np.flatnonzero(~test), np.flatnonzero(test)


def _clone_row(method, E_tr, E_te, y_tr, y_te, config, extra=None) -> dict:
    contained, rank = knn_clone_containment(E_tr, y_tr, E_te, y_te, k=config.k)
    row = {"method": method, "knn_acc": knn_clone_accuracy(E_tr, y_tr, E_te, y_te, k=config.k),
           "knn_acc_adjusted": knn_clone_accuracy(E_tr, y_tr, E_te, y_te, k=config.k, adjusted=True),
           "containment": contained, "mean_rank": rank,
           "train_ch": clone_calinski_harabasz(E_tr, y_tr)}
    row.update(extra or {})
    return row


@uses_device
def run_clone(config: CloneConfig, seed: int, task: dict) -> dict:
    data, train_idx, test_idx = _clone_split(config, seed)
    y_tr, y_te = data.clone[train_idx], data.clone[test_idx]
    X_tr, X_te = data.X[train_idx], data.X[test_idx]
    method, rows = task["method"], []
    start = time.perf_counter()
    if method == "lcl":
        _, h_tr, h_te = _fit_lcl_embeddings(config.lcl, X_tr, y_tr, X_te, seed)
        rows.append(_clone_row("LCL (h)", h_tr, h_te, y_tr, y_te, config,
                               {"fit_seconds": time.perf_counter() - start}))
    elif method == "nbvae":
        vae = _nbvae(10, config.nbvae_epochs, seed).fit(data.counts[train_idx])
        rows.append(_clone_row("NB-VAE (10)", vae.transform(data.counts[train_idx]),
                               vae.transform(data.counts[test_idx]), y_tr, y_te, config,
                               {"fit_seconds": time.perf_counter() - start}))
    elif method == "linear":
        for k in (10, 32):
            E_tr, E_te = pca_embedding(X_tr, [X_te], n_components=k, seed=seed)
            rows.append(_clone_row(f"PCA ({k})", E_tr, E_te, y_tr, y_te, config))
    else:
        raise ValueError(f"unknown clone task {method!r}; expected one of {CLONE_TASKS}")
    return {"rows": rows, "n_train_cells": int(train_idx.size), "n_test_cells": int(test_idx.size)}


CLONE_METHODS = ["LCL (h)", "NB-VAE (10)", "PCA (10)", "PCA (32)"]


def summarize_clone(jobs, config: CloneConfig) -> Result:
    frame = _rows(jobs)
    if "fit_seconds" not in frame.columns:
        frame["fit_seconds"] = np.nan
    acc = {meth: _mean(frame, meth, "knn_acc") for meth in CLONE_METHODS}
    ch = {meth: _mean(frame, meth, "train_ch") for meth in CLONE_METHODS}
    chance = 1.0 / config.n_clones
    claims = [
        Claim.at_least("B kNN(30) clone accuracy: LCL / PCA-10", _ratio(acc["LCL (h)"], acc["PCA (10)"]), 3.0,
                       paper="LCL 13.6% vs scVI 11.1% (LARRY top-200), 54.1% vs 47.1% (CellTag)",
                       note=f"LCL {acc['LCL (h)']:.4f}, PCA-10 {acc['PCA (10)']:.4f}, chance {chance:.4f}"),
        Claim.at_least("B kNN(30) clone accuracy: LCL / NB-VAE-10",
                       _ratio(acc["LCL (h)"], acc["NB-VAE (10)"]), 3.0, paper="LCL beats scVI",
                       note=f"NB-VAE-10 {acc['NB-VAE (10)']:.4f}"),
        Claim.at_least("B kNN(30) clone accuracy: LCL / PCA-32", _ratio(acc["LCL (h)"], acc["PCA (32)"]), 1.5,
                       paper="LCL beats the unsupervised reference", note=f"PCA-32 {acc['PCA (32)']:.4f}"),
        Claim.at_least("B train Calinski-Harabasz: LCL / PCA-10", _ratio(ch["LCL (h)"], ch["PCA (10)"]), 10.0,
                       paper="430 vs 12.3 against scVI (LARRY), 1895 vs 18.1 (CellTag)",
                       note=f"LCL {ch['LCL (h)']:.2f}, PCA-10 {ch['PCA (10)']:.2f}"),
    ]
    table = summary_table(frame.to_dict("records"), "method",
                          ["knn_acc", "knn_acc_adjusted", "containment", "mean_rank", "train_ch", "fit_seconds"],
                          digits=4)
    fig = _bar_figure(frame, [("knn_acc", "kNN(30) clone accuracy"), ("train_ch", "train Calinski-Harabasz")],
                      CLONE_METHODS, f"B: clone recovery of held-out cells (chance {chance:.3f})", log=True)
    return Result(tables={"B clone recovery (mean ± std over seeds)": table},
                  figures={"B clone recovery": fig}, claims=claims)


# -- Part semi (Experiment C) -------------------------------------------------------------

@dataclass(frozen=True)
class SemiConfig:
    fate: FateConfig = FateConfig()
    lambdas: tuple = (0.0, 0.05)


def semi_tasks(config: SemiConfig) -> list:
    return [{"lambda_penalty": float(lam)} for lam in config.lambdas]


@uses_device
def run_semi(config: SemiConfig, seed: int, task: dict) -> dict:
    fate = config.fate
    split = _fate_split(fate, seed)
    data, train_idx, test_idx, _, _ = split
    lam = task["lambda_penalty"]
    _, h_tr, h_te = _fit_lcl_embeddings(fate.lcl, data.X[train_idx], data.clone[train_idx],
                                        data.X[test_idx], seed, lambda_penalty=lam)
    return {"rows": [_fate_row(f"LCL λ={lam:g}", h_tr, h_te, split, fate, seed, {"lambda": lam})]}


def summarize_semi(jobs, config: SemiConfig) -> Result:
    frame = _rows(jobs)
    off = frame.loc[frame["lambda"] == 0.0, "kl_gt"].mean()
    on = frame.loc[frame["lambda"] == 0.05, "kl_gt"].mean()
    claims = [Claim.at_most("C kl_gt(λ=0.05) / kl_gt(λ=0)", _ratio(on, off), 1.05,
                            paper="the entropy penalty on unlabelled cells helps",
                            note=f"λ=0.05 {on:.3f}, λ=0 {off:.3f}")]
    methods = list(dict.fromkeys(frame["method"]))
    table = summary_table(frame.to_dict("records"), "method", ["kl_gt", "kl_emp", "purity_5nn", "cycle_r2"])
    fig = _bar_figure(frame, [("kl_gt", "KL(true ‖ pred)"), ("purity_5nn", "5-NN purity, unseen clones")],
                      methods, "C: entropy penalty on unlabelled cells")
    return Result(tables={"C semi-supervised term": table}, figures={"C semi-supervised": fig},
                  claims=claims)


# -- Part scaling -------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingConfig:
    clone_counts: tuple = (100, 200, 400, 800)
    epochs: int = 3
    repeats: int = 2
    lcl: LCLSettings = LCLSettings()


@cpu_only("a CPU-seconds measurement")
def run_scaling(config: ScalingConfig, seed: int) -> dict:
    datasets = {C: simulate_lineage_tracing(n_clones=C, seed=seed) for C in config.clone_counts}
    seconds = {C: math.inf for C in config.clone_counts}
    rows = {}
    for _ in range(config.repeats):  # interleaved repeats: a load spike hits every size alike
        for C, data in datasets.items():
            model = _lcl(config.lcl, seed, max_epochs=config.epochs, warmup_epochs=0, lambda_penalty=0.0,
                         device="cpu")             # a CPU-seconds slope: always on the CPU
            # CPU seconds of this (single-threaded) fit: on a shared machine the wall clock
            # measures the neighbours' load as much as the fit
            start = time.process_time()
            model.fit(data.X, data.clone)
            seconds[C] = min(seconds[C], time.process_time() - start)
            low, high = model.sampler_.batch_count_bounds()
            rows[C] = {"n_clones": C, "n_cells": data.n_cells, "n_batches": model.n_batches_per_epoch_,
                       "batches_lower": low, "batches_upper": high}
    return {"rows": [dict(rows[C], seconds=seconds[C]) for C in config.clone_counts]}


def summarize_scaling(jobs, config: ScalingConfig) -> Result:
    frame = _rows(jobs).groupby("n_clones", as_index=False).agg(
        n_cells=("n_cells", "mean"), seconds=("seconds", "min"), n_batches=("n_batches", "mean"),
        batches_lower=("batches_lower", "mean"), batches_upper=("batches_upper", "mean"))
    slope = loglog_slope(frame["n_cells"], frame["seconds"])
    in_range = bool(((frame["n_batches"] >= frame["batches_lower"])
                     & (frame["n_batches"] <= frame["batches_upper"])).all())
    excess = float((frame["n_batches"] / frame["batches_lower"]).max())
    claims = [
        Claim.at_most(f"scaling: log-log slope of LCL training CPU time ({config.epochs} epochs) in cells",
                      slope, 1.15, paper="one epoch is linear in n for fixed clone sizes",
                      note=", ".join(f"{int(n)} cells {s:.2f} CPU s" for n, s in zip(frame["n_cells"], frame["seconds"]))),
        Claim("scaling: batches per epoch within [max(Σk/B, max k), Σk/B + max k]",
              paper="≥ max(Σ_c k_c / B, max_c k_c)", measured=f"max ratio to lower bound {excess:.3f}",
              bar="inside the range for every size", passed=in_range),
    ]
    fig, ax = plt.subplots(figsize=(4.2, 3.4))
    ax.loglog(frame["n_cells"], frame["seconds"], "o-", label=f"LCL fit (slope {slope:.2f})")
    ref = frame["seconds"].iloc[0] * frame["n_cells"] / frame["n_cells"].iloc[0]
    ax.loglog(frame["n_cells"], ref, "--", color="gray", label="linear")
    ax.set_xlabel("cells")
    ax.set_ylabel("CPU seconds (best of repeats)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return Result(tables={"scaling": frame}, figures={"scaling": fig}, claims=claims)


# -- registration -------------------------------------------------------------------------

_QUICK_LCL = LCLSettings(hidden_dims=(64, 32), embedding_dim=16, batch_size=20, max_epochs=6,
                         warmup_epochs=1, lr=3e-3)

EXPERIMENT = register(Experiment(
    slug="lcl",
    title=TITLE,
    parts=[
        Part(name="fate", run=run_fate, summarize=summarize_fate, tasks=fate_tasks,
             quick=FateConfig(n_clones=40, lcl=_QUICK_LCL, nbvae_epochs=10, head_max_epochs=150,
                              head_patience=20),
             full=FateConfig(), seeds=(0, 1, 2, 3, 4), quick_seeds=(0,),
             description="A: fate composition of unseen clones from early cells; cycle invariance; "
                         "permuted-label control"),
        Part(name="clone", run=run_clone, summarize=summarize_clone, tasks=clone_tasks,
             quick=CloneConfig(n_clones=40, lcl=_QUICK_LCL, nbvae_epochs=15),
             full=CloneConfig(), seeds=(0, 1, 2, 3, 4), quick_seeds=(0,),
             description="B: kNN clone recovery and clone separation of held-out cells"),
        Part(name="scaling", run=run_scaling, summarize=summarize_scaling,
             quick=ScalingConfig(clone_counts=(20, 40, 80), epochs=1, repeats=1, lcl=_QUICK_LCL),
             full=ScalingConfig(), seeds=(0,), quick_seeds=(0,),
             description="LCL training time against the number of cells; batches per epoch"),
        Part(name="semi", run=run_semi, summarize=summarize_semi, tasks=semi_tasks,
             quick=SemiConfig(fate=FateConfig(n_clones=60, lcl=_QUICK_LCL, head_max_epochs=300,
                                              head_patience=30)),
             full=SemiConfig(), seeds=(0, 1, 2, 3, 4), quick_seeds=(0,), default=False,
             description="C (opt-in): entropy penalty on unlabelled cells, λ = 0 vs 0.05"),
    ],
    claims=["LCL embeddings predict the fate composition of unseen clones better than scVI-sized "
            "embeddings and remove the cell cycle", "LCL recovers clone identity of held-out cells "
                                                     "better than scVI / PCA", "training is linear in cells"],
    reference="Yang, Wang, Lin. Leveraging Lineage Barcodes as Natural Augmentations for Contrastive "
              "Learning of Cell Fate in scRNA-seq Data. ICML 2026 (bioRxiv 10.1101/2024.10.28.620670).",
))

__all__ = ["EXPERIMENT", "FateConfig", "CloneConfig", "SemiConfig", "ScalingConfig", "LCLSettings"]
