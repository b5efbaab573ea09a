"""Reproduction of EpiTwin's claims on the synthetic sEEG patients (no clinical sEEG offline).

The claims, their bars, kinds and controls are declared in ``claims.toml``; each part's
``summarize`` returns the named measurements.

Parts
-----
``W``  within-patient protocol: one 600-s patient, train on the first 70 % (2-s windows, 1-s
       stride, 19 epochs = 1,007 optimiser steps), select checkpoints on the next 10 %,
       reconstruct every shaft of the last 20 % leave-one-shaft-out; EpiTwin vs its MSE-only
       version, the LaBraM-style transformer, IDW, ridge with lags (and MNE's interpolation on
       single contacts).
``X`` (opt-in)  cross-patient protocol: train on patients 1-4 (120 s each), reconstruct each
       shaft of the unseen patient 5 from its other shafts; EpiTwin vs LaBraM-style, IDW and the
       -HSPE and -GFBA ablations.
``B``  properties (permutation equivariance, masked inputs ignored, Laplacian PE vs eigh, RBF bias
       monotone, discriminator lengths).
``scaling``  forward time against the number of contacts N and the window length T.
``W_switch`` (opt-in)  W on the pre-registered 'switching' world (state-gated hemispheres).
``W_route`` (opt-in)  W on the 'routing' world (the state switches which source drives each
       shaft's confined local field): EpiTwin, its MSE-only version and LaBraM-style on three
       training seeds vs IDW, ridge, ridge per true state (the world's positive control) and ridge
       per state inferred from band power; EpiTwin given the true state, with and without the
       signed unmixing (the representation's positive control and the diagnosis check). Resumable.
``W_seeds`` (opt-in)  W on three training seeds (resumable). ``X_seeds``: X at 20 epochs, 3 seeds.
``dev``, ``dev_steps`` (opt-in)  the dev procedure on a dev patient (never reported): the rules
       that chose the learning rates, the steps and the stage-2 checkpoint rule.

Every RMSE-ratio claim pairs EpiTwin with its baseline over training seeds and test windows (a
95 % paired BCa interval) against the negative control (EpiTwin's step-0 weights: no learned
transformer path); a bar that the world's best map cannot meet is INCOMPLETE
(``--set claim_rule=point``: point values without the ceiling check, the first rule).
"""

from __future__ import annotations

import copy
import time
import warnings
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd
import torch
from scipy.signal import welch

from icml26.core.cache import cache_root, cached_json
from icml26.core.device import cpu_only, device_cache_key, job_device, seeded_rng, uses_device
from icml26.core.claims import Measurement
from icml26.core.figures import subplots
from icml26.core.experiment import Experiment, Part, Result, register
from icml26.core.stats import (best_seconds, loglog_slope, paired_mean_interval,
                               sign_test, summary_table)

from .baselines import (IDWReconstructor, InferredStateRidge, RidgeReconstructor,
                        StateRidgeReconstructor, mne_interpolate)
from .data import make_synthetic_seeg, windows
from .estimator import REFINE_RMSE_TOLERANCE, EpiTwin, LaBraMStyleReconstructor
from .metrics import reconstruction_metrics
from .model import EpiTwinGenerator, MultiScaleDiscriminator, montage_tensors
from .spatial import contact_graph, laplacian_pe

PAPER = "EpiTwin: a conditional spatial graph transformer for stereo-EEG reconstruction (ICML 2026)"
METRICS = ["rmse", "mae", "pearson", "lsd", "soi", "bpr_gamma", "bpr_high_gamma"]
LABELS = {"epitwin": "EpiTwin", "epitwin_mse": "EpiTwin (MSE only)", "labram": "LaBraM-style",
          "idw": "IDW", "ridge": "ridge with lags", "zero": "zero",
          "epitwin_nohspe": "EpiTwin -HSPE (index emb.)", "epitwin_nogfba": "EpiTwin -GFBA (plain attn.)",
          "ridge_oracle": "ridge per true state (oracle)",
          "ridge_inferred": "ridge per inferred state",
          "ridge_class": "signed read-out's class given the true state"}


# -- configs ------------------------------------------------------------------------------

# The settings of every neural model (EpiTwin, its MSE-only version, LaBraM-style) are
# chosen on a dev patient by the rules below, written down before any dev or test run; the dev
# parts ("dev", "dev_steps") run them and print what each rule picks.
DEV_BRAIN = 1            # brain seed of the dev patient (patient seed 0, routing world); never reported
DEV_WORLD = "routing"    # the world where the network has to learn (the spec world is linear)
# Rule 1 (learning rate): each model at W's budget (19 epochs, 1,007 steps, cosine decay) for
# every lr of the grid; lr = the grid value with the lowest best-checkpoint validation RMSE of
# the dev patient; a value within DEV_TIE of the best counts as a tie, won by the smaller lr.
# EpiTwin and its MSE-only version share the lr, chosen on the MSE-only run (stage 1 is the same).
DEV_LR_GRID = (1e-3, 3e-3, 1e-2)
DEV_TIE = 0.002
# Rule 2 (steps): at the chosen lr, a run of DEV_LONG_EPOCHS (2,014 steps); the opt-in W_route
# trains DEV_LONG_EPOCHS when that lowers the dev validation RMSE by at least DEV_STEPS_GAIN
# relative to 19 epochs for EpiTwin, else 19. The default W keeps 19 (its CPU budget) and says
# so when the rule asks for more.
DEV_LONG_EPOCHS = 38
DEV_STEPS_GAIN = 0.01
# Rule 3 (stage-2 checkpoint): EpiTwin with refinement on the dev patient keeps every stage-2
# epoch; each rule of estimator.REFINE_RULES selects one from the validation history; the rule
# whose checkpoint has the lowest LSD on the dev patient's test block, among rules whose
# checkpoint's RMSE there is within REFINE_RMSE_TOLERANCE (1.05) x the MSE-only model's, is
# used; ties (equal checkpoints) and no rule within the tolerance go to "best_rmse" (the old rule),
# other ties to the rule listed first in REFINE_RULES (best_rmse, last, best_lsd).

# Chosen by the rules on the dev parts (values and the dev numbers behind them in the README).
# Rule 1 (part "dev", best dev validation RMSE at 1,007 steps): EpiTwin (MSE-only) 0.4173 /
# 0.4080 / 0.4012 at lr 1e-3 / 3e-3 / 1e-2 -> 1e-2 (the grid's edge); LaBraM-style 0.7276 /
# 0.7280 / 0.7281 (all within DEV_TIE of its step-0 0.7283: it does not learn) -> 1e-3.
EPITWIN_LR = 1e-2
LABRAM_LR = 1e-3
# Rule 2 (part "dev_steps", at the chosen lr): EpiTwin (MSE-only) 0.4012 at 19 epochs -> 0.3892
# at 38 (-3.0 %, best epoch 36 of 38) -> W_route trains 38 epochs (2,014 steps), every model;
# LaBraM-style 0.7276 at both. The default W keeps its 19 epochs (CPU budget).
W_ROUTE_EPOCHS = 38
# Rule 3 (part "dev_steps"): on the dev test block best_rmse keeps stage-2 epoch 0 (RMSE 0.4035,
# LSD 3.609), last and best_lsd epoch 5 (RMSE 0.4043, LSD 3.501; MSE-only 0.3923, so within
# 1.05 x) -> "last" (best_lsd picks the same checkpoint; the tie goes to the rule listed first).
REFINE_CHECKPOINT = "last"
# Rule 4 (the signed unmixing's read-out, added for issue #47 after rules 1-3 and written before
# its dev run): at the chosen lr and W's budget (19 epochs), the MSE-only EpiTwin on the dev
# patient for every (start, unmixing_lr) of DEV_READOUT_GRID (None = the model's lr); the setting
# with the lowest best validation RMSE; a value within DEV_TIE of the best counts as a tie, won by
# the setting listed first (the first is the model before the rule: zero start, one lr). Rules 2
# and 3 are not re-run for the chosen read-out (their 38 epochs and "last" are kept; a deviation,
# named in the README).
# Rule 4, round 2 (issue #47 (a); written, with its three new settings, before their dev run):
# the least-squares start gives every regime the same map, a saddle at which the gate gets no
# gradient (W_route's state-given control learnt to gate on one run in two: 1.20 / 1.43 x its
# class limit). The grid gains the "mixture" start (the regimes at a hard-EM mixture of maps of
# the read-out's class; baselines.mixture_unmixing_maps) at the same three unmixing lrs, after
# the six settings of round 1 (read from the cache); the rule itself is unchanged.
DEV_READOUT_GRID = (("zero", None), ("zero", 1e-3), ("zero", 1e-4),
                    ("least_squares", None), ("least_squares", 1e-3), ("least_squares", 1e-4),
                    ("mixture", None), ("mixture", 1e-3), ("mixture", 1e-4))
# Rule 4 (part "dev_readout", MSE-only EpiTwin at lr 1e-2, 1,007 steps; best dev validation
# RMSE, step 0 in brackets): zero start 0.4012 (0.660) at unmixing_lr = lr, 0.4243 at 1e-3,
# 0.4912 at 1e-4; least-squares start 0.3752 (0.375) at lr, 0.3746 at 1e-3, 0.3736 at 1e-4 ->
# least_squares, 1e-4 (1e-3 is 0.25 % behind: not a tie).
# Round 2 (same part, the three mixture settings; step 0 0.4283): mixture 0.3870 at lr, 0.3252 at
# 1e-3, 0.3178 at 1e-4 (epoch 12) -> mixture, 1e-4 (13 % below the least-squares start's 0.3736).
# The state-given control on the dev patient (a diagnostic, not part of the rule; 19 epochs):
# mixture 0.2653 vs the class limit 0.2651 (the least-squares start: 0.3253, 1.23 x).
UNMIXING_START = "mixture"
UNMIXING_LR = 1e-4

# Claims (the bars live in claims.toml). RMSE-ratio claims are decided on a 95 % paired BCa
# interval over (training seed, test window) cells; a bar that the world's ceiling (its best
# linear map, or the state oracle where the world has one) cannot meet against the same baseline
# is INCOMPLETE with that reason. Negative control of every EpiTwin ratio: the same model at its
# step-0 weights (no learned transformer path: the geometry start's interpolation).
# claim_rule="point" gives the rule of the first reproduction (point values, no ceiling check).
INTERVAL_LEVEL = 0.95
# Refinement ("effectively mitigates" over-smoothing): the relative reduction of |SOI| and LSD
# vs the MSE-only model of the same seed, on a paired interval over >= MIN_SEEDS_REFINE seeds
# (the spec's 20 % is shown as the alt bar).
MIN_SEEDS_REFINE = 3


@dataclass(frozen=True)
class ProtocolConfig:
    """Data, model and training settings of the W / X protocols (CPU default of the spec)."""

    protocol: str = "W"
    brain_seed: int = 0
    duration_s: float = 600.0         # W: the patient; X: each patient
    train_patients: tuple = (1, 2, 3, 4)
    test_patient: int = 5
    n_shafts: int = 10
    window: int = 512
    train_stride: int = 512
    d_model: int = 32
    n_layers: int = 3
    n_heads: int = 4
    patch: int = 64
    labram_patch: int = 128
    epochs: int = 8
    batch_size: int = 8
    methods: tuple = ("epitwin", "epitwin_mse", "labram", "linear")
    figure_shaft: int = 0
    world: str = "spec"               # "switching" = the pre-registered non-linear world
    label: str = ""                   # claim/table prefix (default: the protocol letter)
    lr: float = EPITWIN_LR            # EpiTwin and MSE-only (dev rule 1)
    labram_lr: float = LABRAM_LR      # LaBraM-style (dev rule 1)
    refine_checkpoint: str = REFINE_CHECKPOINT  # dev rule 3
    signed_unmixing: bool = True      # Resolution (W protocol; X never: one montage only)
    unmixing_start: str = UNMIXING_START  # dev rule 4
    unmixing_lr: float | None = UNMIXING_LR  # dev rule 4 (None = lr)
    mask_hidden_keys: bool = True     # False = hidden contacts attended as keys (the first generator)
    claim_rule: str = "interval"      # "point" = point values, no ceiling check (the first rule)
    control_seeds: tuple = (0,)       # seeds on which the positive-control models train
    cache_dir: str = ""               # non-empty: keep each job's metrics there (resumable)


# Spend the budget on optimiser steps. 1-s stride (419 training windows, 53 steps per epoch
# at batch 8) and 19 epochs = 1,007 optimiser steps for every neural model (EpiTwin: 13 MSE
# epochs + 6 adversarial ones). Fixed from the ">= 1,000 steps", not tuned on any split.
W_STEPS_STRIDE = 256
W_STEPS_EPOCHS = 19
OLD_W = ProtocolConfig()  # the first reproduction's W: 2-s stride, 8 epochs (210 steps)
W_FULL = replace(OLD_W, train_stride=W_STEPS_STRIDE, epochs=W_STEPS_EPOCHS)
W_QUICK = replace(W_FULL, duration_s=60.0, n_shafts=4, d_model=16, n_layers=1, epochs=2)
X_FULL = replace(OLD_W, protocol="X", duration_s=120.0, signed_unmixing=False,
                 methods=("epitwin", "epitwin_nohspe", "epitwin_nogfba", "labram", "linear"))
X_QUICK = replace(X_FULL, duration_s=30.0, train_patients=(1, 2), n_shafts=4, d_model=16,
                  n_layers=1, epochs=2)
# W_route: every neural model, the positive controls (EpiTwin given the true state, with
# and without the signed unmixing) on seed 0, three training seeds, resumable.
ROUTE_METHODS = ("epitwin", "epitwin_mse", "labram", "linear", "epitwin_state",
                 "epitwin_convex_state")
JOB_CACHE = str(cache_root("epitwin", "jobs"))
JOB_CACHE_VERSION = 47  # bump when a job's code changes its numbers
LINEAR_JOB_VERSION = 48  # the linear baselines' job (48: the routing world's class limit)
W_ROUTE_FULL = replace(W_FULL, world="routing", label="W_route", methods=ROUTE_METHODS,
                       epochs=W_ROUTE_EPOCHS, cache_dir=JOB_CACHE)
W_ROUTE_QUICK = replace(W_QUICK, world="routing", label="W_route", methods=ROUTE_METHODS)
# The dev parts keep the read-out rules 1-3 ran with (zero start, one lr); rule 4's grid sets
# its own per task, so its first entry is rule 1's job at the chosen lr (read from the cache).
DEV_FULL = replace(W_FULL, world=DEV_WORLD, brain_seed=DEV_BRAIN, label="dev",
                   methods=("epitwin_mse", "labram", "linear"), cache_dir=JOB_CACHE,
                   unmixing_start="zero", unmixing_lr=None)
DEV_QUICK = replace(W_QUICK, world=DEV_WORLD, brain_seed=DEV_BRAIN, label="dev",
                    methods=("epitwin_mse", "labram", "linear"), unmixing_start="zero",
                    unmixing_lr=None)
COST = {"epitwin": 5, "epitwin_nohspe": 5, "epitwin_nogfba": 4, "epitwin_mse": 4, "labram": 2,
        "linear": 1, "epitwin_state": 4, "epitwin_convex_state": 4}
CONTROL_METHODS = ("epitwin_state", "epitwin_convex_state")


def protocol_tasks(config: ProtocolConfig) -> list:
    """One job per method, the costliest first (so two workers balance)."""
    return [{"method": m} for m in sorted(config.methods, key=lambda m: -COST.get(m, 0))]


def dev_tasks(config: ProtocolConfig) -> list:
    """Dev rule 1: every neural model at every lr of the grid, and the linear baselines."""
    return ([{"method": m, "lr": lr} for m in ("epitwin_mse", "labram") if m in config.methods
             for lr in DEV_LR_GRID] + [{"method": "linear"}])


def dev_readout_tasks(config: ProtocolConfig) -> list:
    """Dev rule 4: the MSE-only EpiTwin at the chosen lr for every read-out setting of the grid
    (the first repeats rule 1's job at the chosen lr: read from the cache)."""
    return [{"method": "epitwin_mse", "lr": config.lr, "unmixing_start": start,
             "unmixing_lr": unmixing_lr} if (start, unmixing_lr) != ("zero", None)
            else {"method": "epitwin_mse", "lr": config.lr}
            for start, unmixing_lr in DEV_READOUT_GRID]


def dev_steps_tasks(config: ProtocolConfig) -> list:
    """Dev rules 2 and 3 at the chosen lr: the default and the long budget, and EpiTwin with
    refinement keeping every stage-2 checkpoint."""
    long = DEV_LONG_EPOCHS if config.epochs == W_STEPS_EPOCHS else 2 * config.epochs
    lr = {"epitwin_mse": config.lr, "labram": config.labram_lr}
    # the default budget repeats rule 1's task at the chosen lr (the same job, read from the cache)
    return ([{"method": m, "lr": lr[m], "epochs": long} for m in lr]
            + [{"method": m, "lr": lr[m]} for m in lr]
            + [{"method": "epitwin", "lr": config.lr, "keep_stage2": True}])


# -- data ---------------------------------------------------------------------------------

def _zscore(X, ref):
    mean, std = ref.mean(1, keepdims=True), ref.std(1, keepdims=True)
    return ((X - mean) / np.where(std > 1e-8, std, 1.0)).astype(np.float32)


def protocol_data(config: ProtocolConfig) -> dict:
    """Training / validation windows per training patient and the test patient's windows, all
    z-scored per contact (W: with the training block's statistics; X: each patient with its own
    recording's statistics, so the test patient's metrics are in its z-units)."""
    T = config.window
    if config.protocol == "W":
        X, montage, info = make_synthetic_seeg(config.brain_seed, 0, config.duration_s,
                                               n_shafts=config.n_shafts, world=config.world)
        n = X.shape[1]
        a, b = int(0.7 * n), int(0.8 * n)
        Z = _zscore(X, X[:, :a])
        train = [(windows(Z[:, :a], T, config.train_stride), montage)]
        val = [windows(Z[:, a:b], T, T)]
        test = (windows(Z[:, b:], T, T), montage)
        st = info["state"].astype(np.float32)[None]  # network state per sample (for the oracle)
        return {"train": train, "val": val, "test": test, "fs": info["fs"],
                "train_continuous": Z[:, :a], "test_continuous": Z[:, b:],
                "train_state": windows(st[:, :a], T, config.train_stride)[:, 0].astype(np.int64),
                "val_state": windows(st[:, a:b], T, T)[:, 0].astype(np.int64),
                "test_state": windows(st[:, b:], T, T)[:, 0].astype(np.int64)}
    train, val = [], []
    for ps in config.train_patients:
        X, montage, info = make_synthetic_seeg(config.brain_seed, ps, config.duration_s,
                                               n_shafts=config.n_shafts)
        Z = _zscore(X, X)
        a = int(0.9 * Z.shape[1])
        train.append((windows(Z[:, :a], T, config.train_stride), montage))
        val.append(windows(Z[:, a:], T, T))
    X, montage, info = make_synthetic_seeg(config.brain_seed, config.test_patient,
                                           config.duration_s, n_shafts=config.n_shafts)
    Z = _zscore(X, X)
    return {"train": train, "val": val, "test": (windows(Z, T, T), montage), "fs": info["fs"],
            "test_continuous": Z}


def _models(config: ProtocolConfig, method: str, seed: int):
    common = dict(d_model=config.d_model, n_layers=config.n_layers, n_heads=config.n_heads,
                  epochs=config.epochs, batch_size=config.batch_size, window=config.window,
                  stride=config.train_stride, seed=seed, mask_hidden_keys=config.mask_hidden_keys,
                  device=job_device())
    functional = "static" if config.protocol == "W" else "dynamic"
    ep = dict(common, patch=config.patch, functional=functional, lr=config.lr,
              signed_unmixing=config.signed_unmixing and config.protocol == "W",
              refine_checkpoint=config.refine_checkpoint)
    if ep["signed_unmixing"]:
        ep.update(unmixing_start=config.unmixing_start, unmixing_lr=config.unmixing_lr)
    return {"epitwin": lambda: EpiTwin(**ep),
            "epitwin_mse": lambda: EpiTwin(**ep, adversarial=False),
            "epitwin_nohspe": lambda: EpiTwin(**ep, use_hspe=False),
            "epitwin_nogfba": lambda: EpiTwin(**ep, use_gfba=False),
            # positive controls: the true network state as a context label per patch
            "epitwin_state": lambda: EpiTwin(**dict(ep, adversarial=False, n_context=2)),
            "epitwin_convex_state": lambda: EpiTwin(**dict(ep, adversarial=False, n_context=2,
                                                           signed_unmixing=False)),
            "labram": lambda: LaBraMStyleReconstructor(**dict(common, patch=config.labram_patch,
                                                              lr=config.labram_lr)),
            }[method]()


def leave_one_shaft_out(model, W, montage):
    """Truth and reconstruction of every shaft hidden in turn: arrays (W, n_contacts, T) where
    each contact's values come from the pass that hid its own shaft."""
    pred = np.zeros_like(W)
    for s in montage.shafts:
        on = montage.shaft == s
        pred[:, on] = model.predict(W, montage, [s])[:, on]
    return pred


def _mean_psd(Y, fs):
    freqs, P = welch(Y.reshape(-1, Y.shape[-1]), fs=fs, nperseg=256, noverlap=128)
    return freqs, P.mean(0)


class _WithLabels:
    """``predict(W, montage, masked)`` of a model that takes per-sample labels (the state
    oracle's and the state-given EpiTwin's true states)."""

    def __init__(self, model, labels, keyword=False):
        self.model, self.labels, self.keyword = model, labels, keyword

    def predict(self, W, montage, masked):
        if self.keyword:
            return self.model.predict(W, montage, masked, context=self.labels)
        return self.model.predict(W, montage, masked, self.labels)


def _evaluate(name, model, W, montage, fs, config, out, trace=True):
    pred = leave_one_shaft_out(model, W, montage)
    metrics = reconstruction_metrics(W, pred, fs)
    # per (shaft, test window) squared errors, for paired intervals
    out.setdefault("sq_err", {})[name] = [
        np.sum((pred[:, montage.shaft == s] - W[:, montage.shaft == s]).astype(np.float64) ** 2,
               axis=(1, 2)).tolist() for s in montage.shafts]
    out["sq_err_n"] = [int((montage.shaft == s).sum() * W.shape[-1]) for s in montage.shafts]
    metrics["rmse_per_shaft"] = [float(np.sqrt(np.mean((pred[:, montage.shaft == s]
                                                        - W[:, montage.shaft == s]) ** 2)))
                                 for s in montage.shafts]
    out["methods"][name] = metrics
    if trace:
        freqs, P = _mean_psd(pred, fs)
        on = montage.shaft == config.figure_shaft
        out["psd"][name] = P.tolist()
        out["freqs"] = freqs.tolist()
        out["trace"][name] = pred[0, on][:3].tolist()
    return pred


def _job_key(config: ProtocolConfig, seed: int, task: dict) -> list:
    """Everything a job's numbers depend on (the cache key): the config without the fields
    that only steer the run or the summary, and without the other model family's settings."""
    skip = {"cache_dir", "label", "methods", "control_seeds", "claim_rule", "figure_shaft"}
    # the read-out's settings (dev rule 4) at their values before the rule existed leave the
    # key as it was, so jobs run before that keep their cache entries
    if (config.unmixing_start, config.unmixing_lr) == ("zero", None) or not config.signed_unmixing:
        skip |= {"unmixing_start", "unmixing_lr"}
    if task["method"] == "labram":
        skip |= {"lr", "patch", "refine_checkpoint", "signed_unmixing", "unmixing_start",
                 "unmixing_lr"}
    elif task["method"] != "linear":
        skip |= {"labram_lr", "labram_patch"}
    else:
        skip |= {"lr", "labram_lr", "epochs", "patch", "labram_patch", "refine_checkpoint",
                 "signed_unmixing", "unmixing_start", "unmixing_lr", "mask_hidden_keys", "d_model",
                 "n_layers", "n_heads", "batch_size"}
    settings = {k: v for k, v in asdict(config).items() if k not in skip}
    settings.update(device_cache_key())
    version = LINEAR_JOB_VERSION if task["method"] == "linear" else JOB_CACHE_VERSION
    return [settings, seed, task, version]


def _task_config(config: ProtocolConfig, task: dict) -> ProtocolConfig:
    """The config a task runs: a dev task may set the lr or the epochs of its model."""
    change = {}
    if "lr" in task:
        change["labram_lr" if task["method"] == "labram" else "lr"] = float(task["lr"])
    if "epochs" in task:
        change["epochs"] = int(task["epochs"])
    if "unmixing_start" in task:
        change["unmixing_start"] = task["unmixing_start"]
        change["unmixing_lr"] = task["unmixing_lr"]
    return replace(config, **change)


@uses_device
def run_protocol(config: ProtocolConfig, seed: int, task: dict) -> dict:
    """Train (or fit) one method and evaluate it leave-one-shaft-out on the test block (stored
    in ``config.cache_dir`` when given, so a stopped run resumes)."""
    config = _task_config(config, task)
    if task["method"] in CONTROL_METHODS and seed not in config.control_seeds:
        return {"method": task["method"], "skipped": True, "methods": {}, "psd": {}, "trace": {},
                "freqs": [], "notes": [], "seconds": 0.0}
    return cached_json(config.cache_dir, f"{config.label or config.protocol}_{task['method']}_seed{seed}",
                       _job_key(config, seed, task), lambda: _run_protocol(config, seed, task))


def _run_protocol(config: ProtocolConfig, seed: int, task: dict) -> dict:
    torch.set_num_threads(1)
    data = protocol_data(config)
    W, montage = data["test"]
    fs = data["fs"]
    method = task["method"]
    out = {"method": method, "methods": {}, "psd": {}, "trace": {}, "freqs": [], "notes": [],
           "task": task}
    start, cpu = time.perf_counter(), time.process_time()
    if method == "linear":
        on = montage.shaft == config.figure_shaft
        out["trace"]["truth"] = W[0, on][:3].tolist()
        out["freqs"], P = _mean_psd(W, fs)
        out["psd"]["truth"] = P.tolist()
        out["freqs"] = list(map(float, out["freqs"]))
        out["methods"]["zero"] = reconstruction_metrics(W, np.zeros_like(W) + 1e-6, fs)
        tr_X = [t[0] for t in data["train"]]
        tr_m = [t[1] for t in data["train"]]
        _evaluate("idw", IDWReconstructor().fit(tr_X, tr_m, fs=fs), W, montage, fs, config, out)
        if config.protocol == "W":
            ridge = RidgeReconstructor().fit(data["train"][0][0], montage, fs=fs)
            _evaluate("ridge", ridge, W, montage, fs, config, out)
            if config.world == "routing":
                # the positive control (ridge per TRUE state) and a learnable non-linear
                # baseline (ridge per state inferred from the observed contacts' band power)
                Ztr = data["train"][0][0]
                oracle = StateRidgeReconstructor().fit(Ztr, montage, data["train_state"])
                _evaluate("ridge_oracle", _WithLabels(oracle, data["test_state"]), W, montage, fs,
                          config, out)
                # the signed unmixing read-out's class given the true state: one map per state
                # pooled over EpiTwin's training masks (the representation control's limit)
                limit = StateRidgeReconstructor(mask_shafts=EpiTwin().mask_shafts).fit(
                    Ztr, montage, data["train_state"])
                _evaluate("ridge_class", _WithLabels(limit, data["test_state"]), W, montage, fs,
                          config, out)
                _evaluate("ridge_inferred", InferredStateRidge(fs=fs).fit(Ztr, montage), W,
                          montage, fs, config, out)
            elif config.label != "dev":
                out["mne"] = _mne_check(data["test_continuous"], montage, fs)
    else:
        model = _models(config, method, seed)
        if task.get("keep_stage2"):
            model._keep_stage2 = True
        state = method in CONTROL_METHODS
        ctx = dict(context=data["train_state"], context_val=data["val_state"]) if state else {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            model.fit([t[0] for t in data["train"]], [t[1] for t in data["train"]],
                      X_val=data["val"], fs=fs, **ctx)
        out["notes"] += [str(w.message) for w in caught if "refinement" in str(w.message)]
        out["history"] = model.history_
        out["step0"] = {"train_rmse": model.step0_train_rmse_, "val_rmse": model.step0_val_rmse_}
        out["n_steps"] = int(model.n_steps_)
        out["refinement"] = getattr(model, "refinement_", "off")
        out["refine_epoch"] = getattr(model, "refine_epoch_", None)
        predictor = _WithLabels(model, data["test_state"], keyword=True) if state else model
        _evaluate(method, predictor, W, montage, fs, config, out, trace=not state)
        if method == ("epitwin_mse" if config.protocol == "W" else "epitwin"):
            # the negative control: the same model before any update (no learned transformer
            # path; the geometry start's interpolation), evaluated on the same test block
            step0 = copy.deepcopy(model)
            step0.model_.load_state_dict(model.step0_state_)
            _evaluate("step0", step0, W, montage, fs, config, out, trace=False)
        if task.get("keep_stage2"):
            # dev rule 3: every stage-2 checkpoint on the dev patient's test block
            out["stage2"] = []
            for st in getattr(model, "stage2_states_", []):
                model.model_.load_state_dict(st)
                met = reconstruction_metrics(W, leave_one_shaft_out(model, W, montage), fs)
                out["stage2"].append({k: float(met[k]) for k in ("rmse", "lsd", "soi")})
    out["seconds"] = time.perf_counter() - start
    out["cpu_seconds"] = time.process_time() - cpu
    return out


def _mne_check(Z, montage, fs, max_seconds: float = 20.0) -> dict:
    """MNE's interpolate_bads on sEEG: whole-shaft masking, then one middle contact per shaft."""
    n = min(Z.shape[1], int(max_seconds * fs))
    Z = Z[:, :n]
    result = {}
    try:
        mne_interpolate(Z, montage, np.flatnonzero(montage.shaft == montage.shafts[0]), fs)
        result["whole_shaft"] = "interpolated"
    except Exception as exc:  # noqa: BLE001 - the outcome is the finding
        result["whole_shaft"] = f"{type(exc).__name__}: {str(exc)[:160]}"
    errs_mne, errs_idw, failures = [], [], []
    from .spatial import idw_weights
    for s in montage.shafts:
        on = np.flatnonzero(montage.shaft == s)
        c = int(on[len(on) // 2])
        observed = np.ones(montage.n_contacts, bool)
        observed[c] = False
        try:
            Y = mne_interpolate(Z, montage, [c], fs)
        except Exception as exc:  # noqa: BLE001
            failures.append(f"{montage.names[c]}: {type(exc).__name__}")
            continue
        errs_mne.append(np.mean((Y[c] - Z[c]) ** 2))
        errs_idw.append(np.mean((idw_weights(montage.pos, observed)[c] @ Z - Z[c]) ** 2))
    result["single_contact_rmse_mne"] = float(np.sqrt(np.mean(errs_mne))) if errs_mne else None
    result["single_contact_rmse_idw"] = float(np.sqrt(np.mean(errs_idw))) if errs_idw else None
    result["single_contact_ok"] = len(errs_mne)
    result["single_contact_failures"] = failures
    return result


# -- summaries ------------------------------------------------------------------------------

def _collect(jobs):
    rows, psd, trace, freqs, notes, extra = [], {}, {}, None, [], {}
    jobs = [j for j in jobs if not j.metrics.get("skipped")]
    first = min((j.seed for j in jobs), default=0)
    for j in jobs:
        m = j.metrics
        for name, met in m["methods"].items():
            rows.append(dict({k: met[k] for k in METRICS}, method=name, seed=j.seed))
        if "sq_err" in m:  # per (shaft, test window) squared errors, by seed
            for name, err in m["sq_err"].items():
                extra.setdefault("sq_err", {}).setdefault(name, {})[j.seed] = err
            extra["sq_err_n"] = m["sq_err_n"]
        if j.seed == first:
            psd.update(m["psd"])
            trace.update(m["trace"])
            freqs = m["freqs"] or freqs
            if "mne" in m:
                extra["mne"] = m["mne"]
        notes += [f"{m['method']} (seed {j.seed}): {n}" for n in m["notes"]]
        if "history" in m and j.seed == first:
            extra.setdefault("curves", {})[m["method"]] = {"history": m["history"],
                                                           "step0": m.get("step0"),
                                                           "n_steps": m.get("n_steps")}
        if "refinement" in m and m["method"].startswith("epitwin") and m["refinement"] != "off":
            extra.setdefault("refinement", {})[f"{m['method']}/{j.seed}"] = m["refinement"]
    frame = pd.DataFrame(rows)
    for c in METRICS:
        frame[c] = pd.to_numeric(frame[c], errors="coerce")
    return frame, psd, trace, freqs, notes, extra


def paired_ratio(sq_a: dict, sq_b: dict, level: float = INTERVAL_LEVEL):
    """RMSE ratio A / B paired over (training seed, test window) cells.

    ``sq_a[seed]``, ``sq_b[seed]``: (n_shafts, n_windows) sums of squared errors on the same
    test windows (a deterministic baseline has the same entry for every seed). Each cell's difference of log window-RMSEs is one
    pair; the ratio is ``exp`` of their mean (the geometric mean of the per-window RMSE
    ratios) with ``exp`` of a paired BCa interval of that mean
    (:func:`icml26.core.stats.paired_mean_interval`). Also the pooled RMSE ratio of each seed,
    and the seed-shafts on which A has the lower RMSE. None when the two share no seed.
    """
    seeds = sorted(set(sq_a) & set(sq_b))
    if not seeds:
        return None
    A = np.stack([np.asarray(sq_a[s], float) for s in seeds])   # (n_seeds, n_shafts, n_windows)
    B = np.stack([np.asarray(sq_b[s], float) for s in seeds])
    tiny = 1e-30
    diffs = 0.5 * (np.log(A.sum(1) + tiny) - np.log(B.sum(1) + tiny)).ravel()
    lo, hi = paired_mean_interval(diffs, level)
    per_seed = np.sqrt(A.sum((1, 2)) / B.sum((1, 2)))
    gain = (np.sqrt(B.sum(2)) - np.sqrt(A.sum(2))).ravel()  # per (seed, shaft): > 0 = A better
    st = sign_test(gain)
    return {"mean": float(np.exp(diffs.mean())), "lo": float(np.exp(lo)), "hi": float(np.exp(hi)),
            "seeds": seeds, "per_seed": [float(r) for r in per_seed], "cells": int(diffs.size),
            "better": st["wins"], "worse": st["losses"], "p": st["p"]}


def _fmt_ratio(r) -> str:
    seeds = ", ".join(f"{v:.3f}" for v in r["per_seed"])
    return (f"{r['mean']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}] (half-width "
            f"{(r['hi'] - r['lo']) / 2:.3f}) over {len(r['seeds'])} seed(s) x test windows "
            f"(pooled RMSE ratio per seed {seeds}; lower RMSE on "
            f"{r['better']}/{r['better'] + r['worse']} seed-shafts)")


def ratio_measurement(r, config, ceiling=None, ceiling_label="", bar=None) -> Measurement:
    """The measurement of an RMSE-ratio claim: the paired ratio with its interval; INCOMPLETE
    (with the reason) when the world's ceiling — its best linear map, or the state oracle —
    cannot meet ``bar`` against the same baseline. ``claim_rule="point"``: the point value
    alone (the rule of the first reproduction)."""
    if r is None:
        return Measurement(None, incomplete="not measured (a method of the pair did not run)")
    if config.claim_rule == "point":
        return Measurement(r["mean"], note="point rule: no interval, no ceiling check")
    m = Measurement(r["mean"], interval=(r["lo"], r["hi"]), note=_fmt_ratio(r))
    if ceiling is not None and bar is not None and np.isfinite(ceiling) and ceiling > bar:
        m.incomplete = (f"at the world's ceiling: {ceiling_label} = {ceiling:.3f} > {bar}, so no "
                        "method can meet this bar in this world (W_route carries the claim)")
    return m


def _plain(value, note: str = "") -> Measurement:
    v = float(value)
    return Measurement(v if np.isfinite(v) else None, note=note,
                       incomplete="" if np.isfinite(v) else "not measured")


def refine_measurements(frame, metric, config) -> dict:
    """Relative reduction of |SOI| or LSD by refinement (EpiTwin vs its MSE-only version of the
    same training seed), with a paired BCa interval over seeds; the negative control puts the
    MSE-only model of the next seed (cyclically) in place of the refined one."""
    key = f"refine_{metric}"
    val = {m: frame[frame.method == m].set_index("seed")[metric].abs()
           for m in ("epitwin", "epitwin_mse")}
    seeds = sorted(set(val["epitwin"].index) & set(val["epitwin_mse"].index))
    red = [float(1 - val["epitwin"][s] / val["epitwin_mse"][s]) for s in seeds]
    if not red:
        return {key: Measurement(None, incomplete="not measured")}
    mse = val["epitwin_mse"]
    null = [float(1 - mse[seeds[(i + 1) % len(seeds)]] / mse[s]) for i, s in enumerate(seeds)]
    per = ", ".join(f"{v:.3f}" for v in red)
    out = {f"{key}_null": Measurement(float(np.mean(null)) if len(seeds) > 1 else None,
                                      note=f"per seed {', '.join(f'{v:.3f}' for v in null)}")}
    mean = float(np.mean(red))
    if config.claim_rule == "point":
        out[key] = Measurement(mean, note=f"point rule; per seed {per}")
    elif len(red) < MIN_SEEDS_REFINE:
        out[key] = Measurement(mean, note=f"per seed {per}", incomplete=(
            f"{len(red)} training seed(s): the interval over seeds needs >= {MIN_SEEDS_REFINE} "
            "(W_seeds and W_route run 3)"))
    else:
        lo, hi = paired_mean_interval(red, INTERVAL_LEVEL)
        out[key] = Measurement(mean, interval=(lo, hi), note=(
            f"paired BCa interval over seeds {seeds} (half-width {(hi - lo) / 2:.3f}); per seed {per}"))
    return out


# The routing world's pre-registered bars (claims.toml): the state oracle beats global ridge by
# >= 15 % RMSE (the world's positive control); EpiTwin vs IDW <= 0.95; EpiTwin vs ridge <= 1.05
# on the spec world (ridge "within 5 %") and <= 0.95 on the non-linear worlds. The ceiling
# checks read the bars from the claim table.
PAIR_ROWS = [("epitwin", "idw"), ("epitwin", "labram"), ("epitwin", "ridge"),
             ("epitwin", "epitwin_mse"), ("epitwin", "ridge_oracle"), ("epitwin", "ridge_inferred"),
             ("epitwin_mse", "ridge"), ("labram", "idw"), ("labram", "ridge"), ("step0", "idw"),
             ("step0", "labram"), ("step0", "ridge"), ("idw", "epitwin_mse"),
             ("ridge", "labram"), ("ridge", "idw"), ("ridge_oracle", "ridge"),
             ("ridge_inferred", "ridge"), ("epitwin_state", "ridge_oracle"),
             ("epitwin_convex_state", "ridge_oracle"), ("epitwin_state", "ridge_class"),
             ("ridge_class", "ridge_oracle"), ("epitwin_nohspe", "epitwin"),
             ("epitwin_nogfba", "epitwin")]


def _paired_table(sq, pairs) -> tuple[dict, pd.DataFrame]:
    out, rows = {}, []
    for a, b in pairs:
        r = paired_ratio(sq[a], sq[b]) if a in sq and b in sq else None
        out[(a, b)] = r
        if r is not None:
            rows.append({"A": a, "B": b, "RMSE ratio A / B (geometric mean over cells)": r["mean"],
                         "95 % paired BCa interval": f"[{r['lo']:.3f}, {r['hi']:.3f}]",
                         "pooled ratio per seed": ", ".join(f"{v:.3f}" for v in r["per_seed"]),
                         "seed-shafts A better": r["better"], "A worse": r["worse"],
                         "sign test p (one-sided)": r["p"]})
    return out, pd.DataFrame(rows)


def _bar(part: str, key: str) -> float:
    """The upper bar of a ratio claim, read from the claim table (for the ceiling check)."""
    return float(EXPERIMENT.table.claim(f"{part}/{key}").bar.high)


def summarize_protocol(jobs, config: ProtocolConfig) -> Result:
    frame, psd, trace, freqs, notes, extra = _collect(jobs)
    fs = 256.0
    P = config.label or config.protocol
    table = summary_table(frame.to_dict("records"), "method", METRICS)
    rmse = {m: _mean(frame, m, "rmse") for m in frame.method.unique()}
    tables = {f"{P}: leave-one-shaft-out metrics (z-units)": table}
    sq = extra.get("sq_err", {})
    pair, paired = _paired_table(sq, PAIR_ROWS)
    tables[f"{P}: paired RMSE ratios (seeds x test windows)"] = paired
    if config.protocol != "W":
        return _summarize_cross(pair, rmse, psd, trace, freqs, notes, extra, tables, P, fs, config)
    routing = config.world == "routing"
    ceiling = min(rmse.get("ridge", np.nan), rmse.get("ridge_oracle", np.inf))
    ceiling_name = "ridge per true state" if routing else "ridge"
    meas = {}
    for other, label in (("labram", "LaBraM-style"), ("idw", "IDW"), ("ridge", "ridge")):
        key = f"epitwin_vs_{other}"
        meas[key] = ratio_measurement(pair[("epitwin", other)], config,
                                      ceiling / rmse.get(other, np.nan),
                                      f"{ceiling_name} / {label}", _bar(P, key))
        meas[f"step0_vs_{other}"] = ratio_measurement(pair[("step0", other)], config)
        if other != "ridge":
            meas[f"ridge_vs_{other}"] = ratio_measurement(pair[("ridge", other)], config)
    meas["epitwin_vs_mse"] = ratio_measurement(pair[("epitwin", "epitwin_mse")], config)
    meas["idw_vs_mse"] = ratio_measurement(pair[("idw", "epitwin_mse")], config)
    for metric in ("soi", "lsd"):
        meas.update(refine_measurements(frame, metric, config))
    if routing:
        meas["oracle_vs_ridge"] = ratio_measurement(pair[("ridge_oracle", "ridge")], config)
        meas["ridge_inferred_vs_ridge"] = ratio_measurement(pair[("ridge_inferred", "ridge")], config)
        meas["labram_vs_ridge"] = ratio_measurement(pair[("labram", "ridge")], config)
        pc = ratio_measurement(pair[("epitwin_state", "ridge_oracle")], config)
        conv = pair[("epitwin_convex_state", "ridge_oracle")]
        if conv:
            pc.note = "; ".join(n for n in (pc.note, "without the signed unmixing (convex "
                                            f"read-outs only): {_fmt_ratio(conv)}") if n)
        meas["state_vs_oracle"] = pc
        meas["state_vs_class"] = ratio_measurement(pair[("epitwin_state", "ridge_class")], config)
        meas["class_vs_oracle"] = ratio_measurement(pair[("ridge_class", "ridge_oracle")], config)
    for a, b in (("epitwin", "ridge_oracle"), ("epitwin", "ridge_inferred"), ("labram", "idw")):
        if pair.get((a, b)):
            notes.append(f"reported: {a} / {b}: {_fmt_ratio(pair[(a, b)])}")
    if "mne" in extra:
        mne_r = extra["mne"]
        notes.append(
            "MNE interpolate_bads on sEEG: whole shaft -> " + mne_r["whole_shaft"]
            + f"; one middle contact per shaft: {mne_r['single_contact_ok']} interpolated "
            f"(RMSE {mne_r['single_contact_rmse_mne']}, IDW on the same contacts "
            f"{mne_r['single_contact_rmse_idw']}), failures: {mne_r['single_contact_failures']}"
            + ("; ratio EpiTwin/MNE on whole shafts: undefined (MNE cannot interpolate a whole "
               "shaft)" if mne_r["whole_shaft"] != "interpolated" else ""))
    if "refinement" in extra:
        notes.append(f"refinement outcome: {extra['refinement']}")
    figs = _figures(psd, trace, freqs, fs, f"Protocol {P}")
    _add_curves(extra, figs, tables, P)
    return Result(tables=tables, figures=figs, measurements=meas, notes=notes)


def _summarize_cross(pair, rmse, psd, trace, freqs, notes, extra, tables, P, fs, config) -> Result:
    """X (cross-patient): EpiTwin vs LaBraM-style and IDW, the -HSPE and -GFBA ablations; the
    ablations' negative control is an EpiTwin of another training seed in place of the
    ablated model (X_seeds; one seed cannot tell an ablation from seed noise)."""
    meas = {}
    for other in ("labram", "idw"):
        meas[f"epitwin_vs_{other}"] = ratio_measurement(pair[("epitwin", other)], config)
        meas[f"step0_vs_{other}"] = ratio_measurement(pair[("step0", other)], config)
    for ab in ("nohspe", "nogfba"):
        r = pair[(f"epitwin_{ab}", "epitwin")]
        m = ratio_measurement(r, config)
        m.value = None if m.value is None else m.value - 1
        if m.interval is not None:
            m.interval = (m.interval[0] - 1, m.interval[1] - 1)
        meas[f"{ab}_increase"] = m
    ep = [v for v in _per_seed(extra, "epitwin")]
    seed_noise = (max(a / b - 1 for a in ep for b in ep) if len(ep) > 1 else None)
    meas["seed_increase"] = Measurement(seed_noise, note="largest relative RMSE change between two "
                                        "EpiTwin training seeds")
    figs = _figures(psd, trace, freqs, fs, f"Protocol {P}")
    _add_curves(extra, figs, tables, P)
    return Result(tables=tables, figures=figs, measurements=meas, notes=notes)


def _per_seed(extra, method) -> list:
    """Pooled RMSE of ``method`` per training seed (from the per-window squared errors)."""
    sq = extra.get("sq_err", {}).get(method, {})
    n = float(np.sum(extra.get("sq_err_n", [1])))
    return [float(np.sqrt(np.sum(v) / (n * np.asarray(v).shape[1]))) for _, v in sorted(sq.items())]


# -- dev parts: the rules of the constants above, on the dev patient --------------------

def _best_val(history) -> tuple[float, int]:
    h = [e for e in history if e.get("stage", 1) == 1]
    best = min(h, key=lambda e: e["val_rmse"])
    return float(best["val_rmse"]), int(best["epoch"])


def choose_lr(best_by_lr: dict) -> float:
    """Dev rule 1: the lr with the lowest best validation RMSE; within DEV_TIE (relative) of
    the best, the smallest lr."""
    low = min(best_by_lr.values())
    return min(lr for lr, v in best_by_lr.items() if v <= low * (1 + DEV_TIE))


def choose_refine_rule(stage2: list, history: list, stage1_best: float, mse_test_rmse: float) -> dict:
    """Dev rule 3: the checkpoint each rule selects from the validation history, its test-block
    RMSE / LSD, and the rule kept."""
    from .estimator import REFINE_RULES

    epochs = [{"val_rmse": e["val_rmse"], "val_lsd": e["val_lsd"]} for e in history
              if e.get("stage") == 2][:len(stage2)]
    picks = {}
    for rule in REFINE_RULES:
        pick = EpiTwin(refine_checkpoint=rule)._select_stage2(epochs, stage1_best) if epochs else None
        picks[rule] = {"epoch": pick, **(stage2[pick] if pick is not None else {})}
    ok = {r: p for r, p in picks.items()
          if p["epoch"] is not None and p["rmse"] <= REFINE_RMSE_TOLERANCE * mse_test_rmse}
    chosen = "best_rmse"
    if ok:
        best = min(ok, key=lambda r: (ok[r]["lsd"], r != "best_rmse"))
        chosen = best if ok[best]["epoch"] != picks["best_rmse"]["epoch"] else "best_rmse"
    return {"picks": picks, "chosen": chosen}


def summarize_dev(jobs, config: ProtocolConfig) -> Result:
    rows, curves, best = [], {}, {}
    linear = {}
    for j in jobs:
        m = j.metrics
        if m["method"] == "linear":
            linear = {k: v["rmse"] for k, v in m["methods"].items()}
            continue
        lr = m["task"]["lr"]
        v, at = _best_val(m["history"])
        best.setdefault(m["method"], {})[lr] = v
        rows.append({"method": m["method"], "lr": lr, "steps": m["n_steps"],
                     "step-0 val RMSE": m["step0"]["val_rmse"], "best val RMSE": v, "at epoch": at,
                     "last val RMSE": m["history"][-1]["val_rmse"],
                     "last train RMSE": m["history"][-1]["train_rmse"],
                     "CPU-s": m.get("cpu_seconds")})
        curves[f"{m['method']} lr={lr:g}"] = {"history": m["history"], "step0": m["step0"]}
    chosen = {m: choose_lr(b) for m, b in best.items()}
    notes = [f"dev rule 1 picks lr = {lr:g} for {m} (best validation RMSE by lr: "
             + ", ".join(f"{k:g}: {v:.4f}" for k, v in sorted(best[m].items())) + ")"
             for m, lr in chosen.items()]
    notes.append("linear baselines on the dev patient's test block (RMSE): "
                 + ", ".join(f"{k} {v:.3f}" for k, v in linear.items()))
    figs = {"dev: training curves by lr": _curves_figure(curves, "dev (brain 1, routing)")}
    return Result(tables={"dev: best validation RMSE by model and lr": pd.DataFrame(rows)},
                  figures=figs, notes=notes)


def choose_readout(best_by_setting: dict):
    """Dev rule 4: the (start, unmixing_lr) with the lowest best validation RMSE; within DEV_TIE
    (relative) of the best, the one listed first in DEV_READOUT_GRID."""
    low = min(best_by_setting.values())
    return next(s for s in DEV_READOUT_GRID
                if s in best_by_setting and best_by_setting[s] <= low * (1 + DEV_TIE))


def _lr_text(unmixing_lr) -> str:
    """The read-out's own lr as shown in rule 4's table (None: the model's lr)."""
    return "lr" if unmixing_lr is None else format(unmixing_lr, "g")


def summarize_dev_readout(jobs, config: ProtocolConfig) -> Result:
    rows, curves, best = [], {}, {}
    for j in jobs:
        m = j.metrics
        setting = (m["task"].get("unmixing_start", "zero"), m["task"].get("unmixing_lr"))
        v, at = _best_val(m["history"])
        best[setting] = v
        rows.append({"start": setting[0], "unmixing_lr": "lr" if setting[1] is None else setting[1],
                     "steps": m["n_steps"], "step-0 val RMSE": m["step0"]["val_rmse"],
                     "best val RMSE": v, "at epoch": at, "last val RMSE": m["history"][-1]["val_rmse"],
                     "last train RMSE": m["history"][-1]["train_rmse"],
                     "dev test RMSE": m["methods"]["epitwin_mse"]["rmse"], "CPU-s": m.get("cpu_seconds")})
        curves[f"start={setting[0]}, unmixing_lr={_lr_text(setting[1])}"] = {
            "history": m["history"], "step0": m["step0"]}
    start, unmixing_lr = choose_readout(best)
    notes = [f"dev rule 4 picks unmixing_start = {start!r}, unmixing_lr = "
             f"{_lr_text(unmixing_lr)} (lr {config.lr:g})"]
    figs = {"dev: training curves by read-out": _curves_figure(curves, "dev (brain 1, routing)")}
    return Result(tables={"dev: best validation RMSE by read-out setting": pd.DataFrame(rows)},
                  figures=figs, notes=notes)


def summarize_dev_steps(jobs, config: ProtocolConfig) -> Result:
    rows, curves, notes = [], {}, []
    by = {}
    refine = None
    for j in jobs:
        m = j.metrics
        if m["task"].get("keep_stage2"):
            refine = m
            continue
        v, at = _best_val(m["history"])
        epochs = m["task"].get("epochs", config.epochs)
        by[(m["method"], epochs)] = {"val": v, "test": m["methods"][m["method"]]["rmse"]}
        rows.append({"method": m["method"], "epochs": epochs, "steps": m["n_steps"],
                     "best val RMSE": v, "at epoch": at, "last val RMSE": m["history"][-1]["val_rmse"],
                     "last train RMSE": m["history"][-1]["train_rmse"], "CPU-s": m.get("cpu_seconds")})
        curves[f"{m['method']} {epochs} ep"] = {"history": m["history"], "step0": m["step0"]}
    tables = {"dev: best validation RMSE by budget": pd.DataFrame(rows)}
    for method in ("epitwin_mse", "labram"):
        runs = sorted(e for (mm, e) in by if mm == method)
        if len(runs) == 2:
            short, long = (by[(method, e)]["val"] for e in runs)
            gain = 1 - long / short
            pick = runs[1] if gain >= DEV_STEPS_GAIN else runs[0]
            notes.append(f"dev rule 2 ({method}): {runs[1]} epochs lower the best validation RMSE "
                         f"by {gain:.2%} vs {runs[0]} (threshold {DEV_STEPS_GAIN:.0%}): {pick} epochs")
    if refine is not None and ("epitwin_mse", config.epochs) in by:
        h = refine["history"]
        stage1 = min(e["val_rmse"] for e in h if e["stage"] == 1)
        res = choose_refine_rule(refine["stage2"], h, stage1, by[("epitwin_mse", config.epochs)]["test"])
        tables["dev: stage-2 checkpoint rules (dev test block)"] = pd.DataFrame(
            [{"rule": r, **p} for r, p in res["picks"].items()])
        tables["dev: stage-2 epochs (validation and dev test block)"] = pd.DataFrame(
            [{"stage-2 epoch": i, "val RMSE": e["val_rmse"], "val LSD": e["val_lsd"],
              "val SOI": e["val_soi"], **{f"test {k}": v for k, v in s.items()}}
             for i, (e, s) in enumerate(zip([e for e in h if e["stage"] == 2], refine["stage2"]))])
        notes.append(f"dev rule 3 picks refine_checkpoint = {res['chosen']!r} (MSE-only test RMSE "
                     f"{by[('epitwin_mse', config.epochs)]['test']:.4f})")
        curves["epitwin (refinement)"] = {"history": h, "step0": refine["step0"]}
    figs = {"dev: training curves by budget": _curves_figure(curves, "dev (brain 1, routing)")}
    return Result(tables=tables, figures=figs, notes=notes)


def _figures(psd, trace, freqs, fs, title):
    order = [k for k in ("truth", "epitwin", "epitwin_mse", "labram", "idw", "ridge",
                         "ridge_oracle", "ridge_inferred", "epitwin_nohspe", "epitwin_nogfba")
             if k in trace]
    figs = {}
    if "truth" in trace:
        n_c = len(trace["truth"])
        fig, axes = subplots(n_c, 1, figsize=(8, 1.8 * n_c + 0.6), sharex=True, squeeze=False)
        for r in range(n_c):
            ax = axes[r, 0]
            for k in order:
                y = np.asarray(trace[k][r])
                t = np.arange(len(y)) / fs
                ax.plot(t, y, lw=1.6 if k == "truth" else 0.9, color="k" if k == "truth" else None,
                        label=LABELS.get(k, k))
            ax.set_ylabel(f"contact {r + 1}\n(z)")
        axes[-1, 0].set_xlabel("time (s)")
        axes[0, 0].legend(fontsize=7, ncol=3, loc="upper right")
        axes[0, 0].set_title(f"{title}: a masked shaft reconstructed vs truth")
        fig.tight_layout()
        figs["masked shaft vs truth"] = fig
    if freqs:
        fig, ax = subplots(figsize=(5.5, 4))
        f = np.asarray(freqs)
        sel = (f >= 1) & (f <= 120)
        for k in [k for k in order if k in psd]:
            ax.semilogy(f[sel], np.asarray(psd[k])[sel], lw=1.8 if k == "truth" else 1.0,
                        color="k" if k == "truth" else None, label=LABELS.get(k, k))
        ax.set_xlabel("frequency (Hz)")
        ax.set_ylabel("mean power of masked contacts (z²/Hz)")
        ax.set_title(f"{title}: spectra (over-smoothing = missing high-frequency power)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        figs["power spectra of masked contacts"] = fig
    return figs


def _curves_figure(curves, title):
    """Train and validation RMSE (leave-one-shaft-in-turn masks, z-units) per epoch; epoch 0 is
    the step-0 model."""
    fig, axes = subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for name, c in sorted(curves.items()):
        h = c["history"]
        s0 = c.get("step0") or {}
        for ax, key in zip(axes, ("train_rmse", "val_rmse")):
            y = [s0.get(key, np.nan)] + [e.get(key, np.nan) for e in h]
            ax.plot(np.arange(len(y)), y, "o-", ms=2.5, label=LABELS.get(name, name))
            for e in h:
                if e["stage"] == 2:
                    ax.axvline(e["epoch"] + 0.5, color="0.85", lw=0.5, zorder=0)
                    break
    axes[0].set_title(f"{title}: train (64 windows)")
    axes[1].set_title(f"{title}: validation block")
    for ax in axes:
        ax.set_xlabel("epoch (0 = step 0; grey line: start of refinement)")
    axes[0].set_ylabel("RMSE of hidden shafts (z)")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def _mean(frame, method, metric):
    sel = frame[frame.method == method][metric]
    return float(sel.mean()) if len(sel) else float("nan")



def _add_curves(extra: dict, figs: dict, tables: dict, P: str) -> None:
    """The training-curve figure and the steps / validation-RMSE table, when the run kept curves."""
    if not extra.get("curves"):
        return
    figs["training curves (train and validation RMSE per epoch)"] = _curves_figure(extra["curves"], f"Protocol {P}")
    rows = []
    for name, c in sorted(extra["curves"].items()):
        h = [e for e in c["history"] if "val_rmse" in e]
        best = min(h, key=lambda e: e["val_rmse"]) if h else {}
        tr = [e["train_rmse"] for e in h if "train_rmse" in e]
        rows.append({"method": name, "optimiser steps": c.get("n_steps"),
                     "step-0 val RMSE": (c.get("step0") or {}).get("val_rmse"),
                     "best val RMSE": best.get("val_rmse"), "at epoch": best.get("epoch"),
                     "last val RMSE": h[-1]["val_rmse"] if h else None,
                     "step-0 train RMSE": (c.get("step0") or {}).get("train_rmse"),
                     "last stage-1 train RMSE": tr[-1] if tr else None})
    tables[f"{P}: optimiser steps and validation RMSE"] = pd.DataFrame(rows)




# -- Experiment B: properties -------------------------------------------------------------

@dataclass(frozen=True)
class PropertyConfig:
    duration_s: float = 60.0
    n_shafts: int = 4
    d_model: int = 16
    n_layers: int = 2


def laplacian_pe_error(phi, vals, vecs, n_zero, gap=1e-6) -> float:
    """Largest deviation of ``phi`` (N, k) from ``numpy.linalg.eigh``'s eigenvectors after the
    ``n_zero`` zero eigenvalues: up to sign for simple eigenvalues, as eigenspace projectors for
    repeated ones (shafts with the same number of contacts give repeated eigenvalues)."""
    err = 0.0
    for c in range(phi.shape[1]):
        lam = vals[n_zero + c]
        space = vecs[:, np.abs(vals - lam) < gap]
        if space.shape[1] == 1:
            ref = space[:, 0]
            err = max(err, min(np.abs(phi[:, c] - ref).max(), np.abs(phi[:, c] + ref).max()))
        else:  # phi[:, c] must lie in the eigenspace
            err = max(err, float(np.abs(space @ (space.T @ phi[:, c]) - phi[:, c]).max()))
    return float(err)


@cpu_only("exact property checks on small untrained modules")
def run_properties(config: PropertyConfig, seed: int) -> dict:
    with seeded_rng(seed):
        return _properties(config, seed)


def _properties(config: PropertyConfig, seed: int) -> dict:
    X, montage, _ = make_synthetic_seeg(0, seed, config.duration_s, n_shafts=config.n_shafts)
    g = EpiTwinGenerator(config.d_model, config.n_layers, 4, patch=64, k_lap=4, seed=seed).eval()
    t = montage_tensors(montage, k_lap=4)
    x = torch.as_tensor(windows(X, 512, 512)[:4])
    mask = torch.zeros(x.shape[:2], dtype=torch.bool)
    mask[:, montage.shaft == montage.shafts[0]] = True
    F = torch.rand(x.shape[1], x.shape[1], generator=torch.Generator().manual_seed(seed))
    F = (F + F.T) / 2
    with torch.no_grad():
        y = g(x, mask, t, F)
        perm = torch.as_tensor(np.random.default_rng(seed).permutation(x.shape[1]))
        tp = {k: (v[perm][:, perm] if v.ndim == 2 and v.shape[0] == v.shape[1] == len(perm)
                  and k != "lap" else v[perm]) for k, v in t.items()}
        yp = g(x[:, perm], mask[:, perm], tp, F[perm][:, perm])
        garbage = x.clone()
        garbage[mask] = 1e3 * torch.randn_like(garbage[mask])
        yg = g(garbage, mask, t, F)
    W = contact_graph(montage)
    deg = W.sum(1)
    L = np.eye(len(W)) - W / np.sqrt(np.outer(deg, deg))
    vals, vecs = np.linalg.eigh(L)
    lap_err = laplacian_pe_error(laplacian_pe(montage, k=4), vals, vecs, int((vals <= 1e-8).sum()))
    d = torch.linspace(0, 120, 121)
    beta = g.blocks[0].spatial.distance_bias(d).detach()
    lengths = [o[0].shape[-1] for o in MultiScaleDiscriminator()(torch.zeros(1, 2, 512))]
    return {"equivariance_max_abs": float((yp - y[:, perm]).abs().max()),
            "masked_input_influence": float((yg - y).abs().max()),
            "laplacian_vs_eigh": lap_err,
            "rbf_bias_monotone": bool((beta[1:] < beta[:-1]).all()),
            "rbf_bias_vs_minus_d_over_20": float((beta + d[:, None] / 20).abs().max()),
            "disc_lengths": lengths, "disc_expected": MultiScaleDiscriminator.output_lengths(512)}


def summarize_properties(jobs, config) -> Result:
    m = jobs[0].metrics
    meas = {"equivariance": m["equivariance_max_abs"],
            "masked_input_influence": m["masked_input_influence"],
            "laplacian_vs_eigh": m["laplacian_vs_eigh"],
            "rbf_bias_monotone": Measurement(bool(m["rbf_bias_monotone"])),
            "disc_lengths": Measurement(m["disc_lengths"] == m["disc_expected"],
                                        note=f"lengths {m['disc_lengths']}, expected "
                                             f"{m['disc_expected']}")}
    table = pd.DataFrame([{k: str(v) for k, v in m.items()}])
    return Result(tables={"B: properties": table}, measurements=meas,
                  notes=[f"max |beta(d) + d/20| on 0-120 mm after init: {m['rbf_bias_vs_minus_d_over_20']:.3f}"])


# -- scaling ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingConfig:
    sizes: tuple = (32, 64, 128, 256)
    lengths: tuple = (256, 512, 1024, 2048)
    d_model: int = 32
    n_layers: int = 3
    patch: int = 64
    repeats: int = 3


def forward_seconds(n_contacts: int, T: int = 512, d_model: int = 32, n_layers: int = 3,
                    patch: int = 64, repeats: int = 3, seed: int = 0) -> float:
    """Best-of seconds of one EpiTwin generator forward pass on a random montage."""
    rng = np.random.default_rng(seed)
    n_shafts = max(1, n_contacts // 8)
    shaft = np.repeat(np.arange(n_shafts), 8)[:n_contacts]
    shaft = np.concatenate([shaft, np.full(n_contacts - len(shaft), n_shafts - 1)])
    from .data import SEEGMontage
    index = np.concatenate([np.arange((shaft == s).sum()) for s in range(n_shafts)])
    montage = SEEGMontage(rng.uniform(-50, 50, (n_contacts, 3)), shaft, index)
    g = EpiTwinGenerator(d_model, n_layers, 4, patch, max_patches=max(64, T // patch)).eval()
    t = montage_tensors(montage)
    x = torch.randn(1, n_contacts, T)
    mask = torch.zeros(1, n_contacts, dtype=torch.bool)
    mask[0, shaft == 0] = True
    F = torch.rand(n_contacts, n_contacts)
    with torch.no_grad():
        # CPU seconds (one torch thread): the load of other processes cannot flip the slope
        return best_seconds(lambda: g(x, mask, t, F), repeats=repeats, clock="cpu")


def scaling_tasks(config: ScalingConfig) -> list:
    return [{"axis": "N"}, {"axis": "T"}]


@cpu_only("a CPU-seconds measurement")
def run_scaling(config: ScalingConfig, seed: int, task: dict) -> dict:
    torch.set_num_threads(1)
    kw = dict(d_model=config.d_model, n_layers=config.n_layers, patch=config.patch,
              repeats=config.repeats, seed=seed)
    if task["axis"] == "N":
        secs = [forward_seconds(n, 512, **kw) for n in config.sizes]
        return {"axis": "N", "x": list(config.sizes), "seconds": secs}
    secs = [forward_seconds(64, T, **kw) for T in config.lengths]
    return {"axis": "T", "x": list(config.lengths), "seconds": secs}


def summarize_scaling(jobs, config) -> Result:
    by = {j.metrics["axis"]: j.metrics for j in jobs}
    slope_n = loglog_slope(by["N"]["x"], by["N"]["seconds"])
    slope_t = loglog_slope(by["T"]["x"], by["T"]["seconds"])
    fig, ax = subplots(1, 2, figsize=(8, 3.2))
    for a, key, label in ((ax[0], "N", "contacts N (T = 512)"), (ax[1], "T", "window T (N = 64)")):
        a.loglog(by[key]["x"], by[key]["seconds"], "o-")
        a.set_xlabel(label)
        a.set_ylabel("forward time (s)")
    fig.tight_layout()
    rows = [{"axis": k, "size": x, "seconds": s} for k in by for x, s in zip(by[k]["x"], by[k]["seconds"])]
    return Result(tables={"scaling: forward time": pd.DataFrame(rows)},
                  figures={"forward time vs N and T": fig},
                  measurements={"slope_n": slope_n},
                  notes=[f"log-log slope in T at fixed patch (L = T / P): {slope_t:.2f} "
                         "(between linear and quadratic expected)"])


# -- registration ---------------------------------------------------------------------------

def _protocol_part(name, quick, full, seeds=(0,), tasks=protocol_tasks,
                   summarize=summarize_protocol):
    return Part(name=name, run=run_protocol, summarize=summarize, tasks=tasks,
                quick=quick, full=full, seeds=seeds, quick_seeds=(0,))


EXPERIMENT = register(Experiment(
    slug="epitwin",  # title, claims and part descriptions: claims.toml
    parts=[
        _protocol_part("W", W_QUICK, W_FULL),
        _protocol_part("X", X_QUICK, X_FULL),
        Part(name="B", run=run_properties, summarize=summarize_properties,
             quick=PropertyConfig(duration_s=12.0, n_shafts=3, n_layers=1), full=PropertyConfig(),
             seeds=(0,)),
        Part(name="scaling", run=run_scaling, summarize=summarize_scaling, tasks=scaling_tasks,
             quick=ScalingConfig(sizes=(16, 32, 64), lengths=(128, 256), n_layers=1, repeats=1),
             full=ScalingConfig(), seeds=(0,)),
        _protocol_part("W_switch", replace(W_QUICK, world="switching", label="W_switch"),
                       replace(W_FULL, world="switching", label="W_switch")),
        # every neural model and the baselines on three training seeds, the positive controls of
        # the signed unmixing on seed 0; resumable (jobs kept under the epitwin cache)
        _protocol_part("W_route", W_ROUTE_QUICK, W_ROUTE_FULL, seeds=(0, 1, 2)),
        _protocol_part("W_seeds", replace(W_QUICK, label="W_seeds"),
                       replace(W_FULL, label="W_seeds", cache_dir=JOB_CACHE), seeds=(0, 1, 2)),
        _protocol_part("X_seeds", replace(X_QUICK, label="X_seeds"),
                       replace(X_FULL, epochs=20, label="X_seeds"), seeds=(0, 1, 2)),
        # the dev procedure (dev patient, never reported): rule 1, then rules 2 and 3 at the
        # chosen lr; resumable
        _protocol_part("dev", DEV_QUICK, DEV_FULL, tasks=dev_tasks, summarize=summarize_dev),
        _protocol_part("dev_steps", DEV_QUICK, DEV_FULL, tasks=dev_steps_tasks,
                       summarize=summarize_dev_steps),
        _protocol_part("dev_readout", DEV_QUICK, DEV_FULL, tasks=dev_readout_tasks,
                       summarize=summarize_dev_readout),
    ],
))
