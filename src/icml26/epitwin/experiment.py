"""Reproduction of EpiTwin's claims on the synthetic sEEG patients (no clinical sEEG offline).

Parts
-----
``W``  within-patient protocol: one 600-s patient, train on the first 70 % (2-s windows, 1-s
       stride, 19 epochs = 1,007 optimiser steps since #36), select checkpoints on the next 10 %,
       reconstruct every shaft of the last 20 % leave-one-shaft-out; EpiTwin vs its MSE-only
       version, the LaBraM-style transformer, IDW, ridge with lags (and MNE's interpolation on
       single contacts).
``X`` (opt-in since #36)  cross-patient protocol: train on patients 1-4 (120 s each), reconstruct each shaft of the
       unseen patient 5 from its other shafts; EpiTwin vs LaBraM-style, IDW and the -HSPE and
       -GFBA ablations.
``B``  properties (permutation equivariance, masked inputs ignored, Laplacian PE vs eigh, RBF bias
       monotone, discriminator lengths).
``scaling``  forward time against the number of contacts N and the window length T.
``W_switch`` (opt-in, #36)  W on the pre-registered 'switching' world (state-gated hemispheres).
``W_route`` (opt-in, #36/#47)  W on the 'routing' world (the state switches which source drives
       each shaft's confined local field): EpiTwin, its MSE-only version and LaBraM-style on three
       training seeds vs IDW, ridge, ridge per true state (the world's positive control) and ridge
       per state inferred from band power; EpiTwin given the true state, with and without the
       signed unmixing (the representation's positive control and the diagnosis check). Resumable.
``W_seeds`` (opt-in)  W on three training seeds (resumable). ``X_seeds``: X at 20 epochs, 3 seeds.
``dev``, ``dev_steps`` (opt-in, #47)  the dev procedure on a dev patient (never reported): the
       rules that chose the learning rates, the steps and the stage-2 checkpoint rule.

Every W-protocol claim pairs EpiTwin with its baseline over training seeds and test windows (a
95 % bootstrap interval of the RMSE ratio) and, before a PASS, requires the negative control
(EpiTwin's step-0 weights: no learned transformer path) to fail the same bar; a bar that the
world's best linear map cannot meet is INCOMPLETE (``--set claim_rule=point``: the rules before).
"""

from __future__ import annotations

import copy
import time
import warnings
from dataclasses import asdict, dataclass, replace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from scipy.signal import welch  # noqa: E402

from icml26.core.cache import cache_root, cached_json  # noqa: E402
from icml26.core.device import cpu_only, device_cache_key, job_device, uses_device  # noqa: E402
from icml26.core.experiment import Claim, Experiment, Part, Result, register  # noqa: E402
from icml26.core.stats import (best_seconds, loglog_slope, sign_test,  # noqa: E402
                               summary_table)

from .baselines import (IDWReconstructor, InferredStateRidge, RidgeReconstructor,  # noqa: E402
                        StateRidgeReconstructor, mne_interpolate)
from .data import make_synthetic_seeg, windows  # noqa: E402
from .estimator import REFINE_RMSE_TOLERANCE, EpiTwin, LaBraMStyleReconstructor  # noqa: E402
from .metrics import reconstruction_metrics  # noqa: E402
from .model import EpiTwinGenerator, MultiScaleDiscriminator, montage_tensors  # noqa: E402
from .spatial import contact_graph, laplacian_pe  # noqa: E402

PAPER = "EpiTwin: a conditional spatial graph transformer for stereo-EEG reconstruction (ICML 2026)"
METRICS = ["rmse", "mae", "pearson", "lsd", "soi", "bpr_gamma", "bpr_high_gamma"]
LABELS = {"epitwin": "EpiTwin", "epitwin_mse": "EpiTwin (MSE only)", "labram": "LaBraM-style",
          "idw": "IDW", "ridge": "ridge with lags", "zero": "zero",
          "epitwin_nohspe": "EpiTwin -HSPE (index emb.)", "epitwin_nogfba": "EpiTwin -GFBA (plain attn.)",
          "ridge_oracle": "ridge per true state (oracle)",
          "ridge_inferred": "ridge per inferred state"}


# -- configs ------------------------------------------------------------------------------

# #47: the settings of every neural model (EpiTwin, its MSE-only version, LaBraM-style) are
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

# Claims (#47). Verdicts from paired intervals: a 95 % bootstrap interval of the seed-mean RMSE
# ratio, resampling training seeds and test windows (the same windows for both methods);
# PASS when the interval lies on the bar's side, FAIL when it lies beyond, else INCOMPLETE
# (inconclusive). Before a PASS the negative control, the model without its learned transformer
# path (EpiTwin's step-0 weights: the geometry start's interpolation), must fail the same bar.
# A bar that even the world's ceiling (the best linear map, or the state oracle where the world
# has one) cannot meet against the baseline is INCOMPLETE: the world cannot show it.
# claim_rule="point" restores the rules before #47 (point estimates, no controls, refinement
# bars at 20 %).
N_BOOT = 2000
INTERVAL_LEVEL = 0.95
# The spec's refinement bars (relative reduction of |SOI| and LSD >= 20 %); the abstract says
# refinement "effectively mitigates" over-smoothing: the faithful reading is a paired interval
# over training seeds (t-interval, >= MIN_SEEDS_REFINE seeds) above 0.
REFINE_SPEC_BAR = 0.20
MIN_SEEDS_REFINE = 3
# Positive control of the signed unmixing (Resolution): EpiTwin given the true network state
# (MSE only) reaches the state oracle's RMSE within this factor on W_route; fixed before the run.
PC_ORACLE_TOLERANCE = 1.10


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
    world: str = "spec"               # #36: "switching" = the pre-registered non-linear world
    label: str = ""                   # claim/table prefix (default: the protocol letter)
    lr: float = EPITWIN_LR            # EpiTwin and MSE-only (#47, dev rule 1)
    labram_lr: float = LABRAM_LR      # LaBraM-style (#47, dev rule 1)
    refine_checkpoint: str = REFINE_CHECKPOINT  # #47, dev rule 3
    signed_unmixing: bool = True      # #47 Resolution (W protocol; X never: one montage only)
    mask_hidden_keys: bool = True     # #47; False = the generator before the fix
    claim_rule: str = "interval"      # #47; "point" = the verdict rules before #47
    control_seeds: tuple = (0,)       # seeds on which the positive-control models train
    cache_dir: str = ""               # non-empty: keep each job's metrics there (resumable)


# #36: spend the budget on optimiser steps. 1-s stride (419 training windows, 53 steps per epoch
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
# W_route (#47): every neural model, the positive controls (EpiTwin given the true state, with
# and without the signed unmixing) on seed 0, three training seeds, resumable.
ROUTE_METHODS = ("epitwin", "epitwin_mse", "labram", "linear", "epitwin_state",
                 "epitwin_convex_state")
JOB_CACHE = str(cache_root("epitwin", "jobs"))
JOB_CACHE_VERSION = 47  # bump when a job's code changes its numbers
W_ROUTE_FULL = replace(W_FULL, world="routing", label="W_route", methods=ROUTE_METHODS,
                       epochs=W_ROUTE_EPOCHS, cache_dir=JOB_CACHE)
W_ROUTE_QUICK = replace(W_QUICK, world="routing", label="W_route", methods=ROUTE_METHODS)
DEV_FULL = replace(W_FULL, world=DEV_WORLD, brain_seed=DEV_BRAIN, label="dev",
                   methods=("epitwin_mse", "labram", "linear"), cache_dir=JOB_CACHE)
DEV_QUICK = replace(W_QUICK, world=DEV_WORLD, brain_seed=DEV_BRAIN, label="dev",
                    methods=("epitwin_mse", "labram", "linear"))
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
    return {"epitwin": lambda: EpiTwin(**ep),
            "epitwin_mse": lambda: EpiTwin(**ep, adversarial=False),
            "epitwin_nohspe": lambda: EpiTwin(**ep, use_hspe=False),
            "epitwin_nogfba": lambda: EpiTwin(**ep, use_gfba=False),
            # #47 positive controls: the true network state as a context label per patch
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
    if config.protocol == "W":  # per (shaft, test window) squared errors, for paired intervals
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
    if task["method"] == "labram":
        skip |= {"lr", "patch", "refine_checkpoint", "signed_unmixing"}
    elif task["method"] != "linear":
        skip |= {"labram_lr", "labram_patch"}
    else:
        skip |= {"lr", "labram_lr", "epochs", "patch", "labram_patch", "refine_checkpoint",
                 "signed_unmixing", "mask_hidden_keys", "d_model", "n_layers", "n_heads",
                 "batch_size"}
    settings = {k: v for k, v in asdict(config).items() if k not in skip}
    settings.update(device_cache_key())
    return [settings, seed, task, JOB_CACHE_VERSION]


def _task_config(config: ProtocolConfig, task: dict) -> ProtocolConfig:
    """The config a task runs: a dev task may set the lr or the epochs of its model."""
    change = {}
    if "lr" in task:
        change["labram_lr" if task["method"] == "labram" else "lr"] = float(task["lr"])
    if "epochs" in task:
        change["epochs"] = int(task["epochs"])
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
                # #36: the positive control (ridge per TRUE state) and a learnable non-linear
                # baseline (ridge per state inferred from the observed contacts' band power)
                Ztr = data["train"][0][0]
                oracle = StateRidgeReconstructor().fit(Ztr, montage, data["train_state"])
                _evaluate("ridge_oracle", _WithLabels(oracle, data["test_state"]), W, montage, fs,
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
        if method == "epitwin_mse" and config.protocol == "W":
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


def paired_ratio(sq_a: dict, sq_b: dict, n_boot: int = N_BOOT, level: float = INTERVAL_LEVEL):
    """RMSE ratio A / B paired over training seeds and test windows.

    ``sq_a[seed]``, ``sq_b[seed]``: (n_shafts, n_windows) sums of squared errors (the same
    windows for A and B; a deterministic baseline has the same entry for every seed). Returns
    the seed-mean of the per-seed ratios, a percentile-bootstrap interval that resamples seeds
    and windows with replacement, the per-seed ratios, and the shafts (over seeds) on which A
    has the lower RMSE; None when the two share no seed.
    """
    seeds = sorted(set(sq_a) & set(sq_b))
    if not seeds:
        return None
    A = np.stack([np.asarray(sq_a[s], float) for s in seeds])   # (n_seeds, n_shafts, n_windows)
    B = np.stack([np.asarray(sq_b[s], float) for s in seeds])
    per_seed = np.sqrt(A.sum((1, 2)) / B.sum((1, 2)))
    rng = np.random.default_rng(0)
    n_s, n_w = A.shape[0], A.shape[2]
    widx = rng.integers(0, n_w, size=(n_boot, n_w))
    sidx = rng.integers(0, n_s, size=(n_boot, n_s))
    R = np.sqrt(A.sum(1)[:, widx].sum(-1) / B.sum(1)[:, widx].sum(-1))  # (n_seeds, n_boot)
    boots = R[sidx.T, np.arange(n_boot)[None]].mean(0)
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    gain = (np.sqrt(B.sum(2)) - np.sqrt(A.sum(2))).ravel()  # per (seed, shaft): > 0 = A better
    st = sign_test(gain)
    return {"mean": float(per_seed.mean()), "lo": float(lo), "hi": float(hi), "seeds": seeds,
            "per_seed": [float(r) for r in per_seed], "better": st["wins"], "worse": st["losses"],
            "p": st["p"]}


def _fmt_ratio(r) -> str:
    seeds = ", ".join(f"{v:.3f}" for v in r["per_seed"])
    return (f"{r['mean']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}] over {len(r['seeds'])} seed(s) x test "
            f"windows (per seed {seeds}; lower RMSE on {r['better']}/{r['better'] + r['worse']} "
            "seed-shafts)")


def _ratio_claim(name, paper, r, bar, config, neg=None, neg_label="", ceiling=None,
                 ceiling_label="", gate="") -> Claim:
    """An RMSE-ratio claim ``r <= bar`` under the config's claim rule (see the constants)."""
    if r is None:
        return Claim(name, paper, None, f"≤ {bar}", False, note="not measured (method missing)",
                     incomplete=True)
    if config.claim_rule == "point":
        return Claim.at_most(name, r["mean"], bar, paper=paper, note="point rule (before #47)")
    notes = [_fmt_ratio(r)]
    if neg is not None:
        notes.append(f"negative control {neg_label}: {_fmt_ratio(neg)}, "
                     + ("meets the bar too" if neg["hi"] <= bar else "fails the bar"))
    incomplete, passed = False, False
    if ceiling is not None and ceiling > bar:
        incomplete = True
        notes.insert(0, f"at the world's linear ceiling: {ceiling_label} = {ceiling:.3f} > {bar}, "
                        "so no method can meet this bar in this world (the routing world carries it)")
    elif gate:
        incomplete = True
        notes.insert(0, gate)
    elif r["hi"] <= bar:
        if neg is not None and neg["hi"] <= bar:
            incomplete = True
            notes.insert(0, "the negative control meets the bar too: the bar does not test the "
                            "learned model")
        else:
            passed = True
    elif r["lo"] <= bar:
        incomplete = True
        notes.insert(0, "inconclusive: the interval straddles the bar")
    return Claim(name, paper, r["mean"], f"≤ {bar} (95 % interval)", passed, note="; ".join(notes),
                 incomplete=incomplete)


def _t_interval(values, level: float = INTERVAL_LEVEL):
    from scipy.stats import t as student_t

    v = np.asarray(values, float)
    if len(v) < 2:
        return float("nan"), float("nan")
    half = student_t.ppf((1 + level) / 2, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return float(v.mean() - half), float(v.mean() + half)


def _refine_claim(name, frame, metric, config) -> Claim:
    """Relative reduction of |SOI| or LSD by refinement, paired by training seed."""
    paper = "reduces spectral over-smoothing (no number; abstract: 'effectively mitigates')"
    val = {m: frame[frame.method == m].set_index("seed")[metric].abs()
           for m in ("epitwin", "epitwin_mse")}
    seeds = sorted(set(val["epitwin"].index) & set(val["epitwin_mse"].index))
    red = [1 - val["epitwin"][s] / val["epitwin_mse"][s] for s in seeds]
    if not red:
        return Claim(name, paper, None, "> 0", False, note="not measured", incomplete=True)
    mean = float(np.mean(red))
    spec = f"spec's bar >= {REFINE_SPEC_BAR:.0%}: mean {mean:.3f} " + (
        "meets it" if mean >= REFINE_SPEC_BAR else "does not meet it")
    if config.claim_rule == "point":
        return Claim.at_least(name, mean, REFINE_SPEC_BAR, paper=paper, note="point rule (before #47)")
    per = ", ".join(f"{v:.3f}" for v in red)
    if len(red) < MIN_SEEDS_REFINE:
        return Claim(name, paper, mean, "95 % interval over seeds > 0", False, incomplete=True,
                     note=f"{len(red)} training seed(s) ({per}): the interval over seeds needs "
                          f">= {MIN_SEEDS_REFINE} (W_seeds and W_route run 3); {spec}")
    lo, hi = _t_interval(red)
    # negative control: an MSE-only model of the next seed in place of the refined one
    mse = val["epitwin_mse"]
    null = [1 - mse[seeds[(i + 1) % len(seeds)]] / mse[s] for i, s in enumerate(seeds)]
    nlo, nhi = _t_interval(null)
    notes = [f"mean {mean:.3f}, 95 % t-interval [{lo:.3f}, {hi:.3f}] over seeds {seeds} (per seed "
             f"{per})", f"negative control (MSE-only of the next seed as the 'refined' model): "
             f"[{nlo:.3f}, {nhi:.3f}], " + ("meets the bar too" if nlo > 0 else "fails the bar"), spec]
    incomplete, passed = False, False
    if lo > 0:
        passed = not nlo > 0
        incomplete = not passed
    elif hi > 0:
        incomplete = True
        notes.insert(0, "inconclusive: the interval straddles 0")
    return Claim(name, paper, mean, "95 % interval over seeds > 0", passed, note="; ".join(notes),
                 incomplete=incomplete)


# The routing world's pre-registered bars (#36): the state oracle beats global ridge by >= 15 %
# RMSE (the world's positive control); EpiTwin vs IDW as W.
ROUTE_ORACLE_BAR = 0.85
ROUTE_IDW_BAR = 0.95
# EpiTwin vs the linear map: the spec expects ridge "within 5 %" of EpiTwin on W (no better
# world for it); on the non-linear worlds EpiTwin must beat it by 5 % (W_switch's bar, #36).
RIDGE_BAR = {"spec": 1.05, "switching": 0.95, "routing": 0.95}
PAIR_ROWS = [("epitwin", "idw"), ("epitwin", "labram"), ("epitwin", "ridge"),
             ("epitwin", "epitwin_mse"), ("epitwin", "ridge_oracle"), ("epitwin", "ridge_inferred"),
             ("epitwin_mse", "ridge"), ("labram", "idw"), ("labram", "ridge"), ("step0", "idw"),
             ("step0", "labram"), ("step0", "ridge"), ("idw", "epitwin_mse"),
             ("ridge_oracle", "ridge"), ("ridge_inferred", "ridge"),
             ("epitwin_state", "ridge_oracle"), ("epitwin_convex_state", "ridge_oracle")]


def _paired_table(sq, pairs) -> tuple[dict, pd.DataFrame]:
    out, rows = {}, []
    for a, b in pairs:
        r = paired_ratio(sq[a], sq[b]) if a in sq and b in sq else None
        out[(a, b)] = r
        if r is not None:
            rows.append({"A": a, "B": b, "RMSE A / RMSE B (seed mean)": r["mean"],
                         "95 % interval (seeds x windows)": f"[{r['lo']:.3f}, {r['hi']:.3f}]",
                         "per seed": ", ".join(f"{v:.3f}" for v in r["per_seed"]),
                         "seed-shafts A better": r["better"], "A worse": r["worse"],
                         "sign test p (one-sided)": r["p"]})
    return out, pd.DataFrame(rows)


def summarize_protocol(jobs, config: ProtocolConfig) -> Result:
    frame, psd, trace, freqs, notes, extra = _collect(jobs)
    fs = 256.0
    P = config.label or config.protocol
    table = summary_table(frame.to_dict("records"), "method", METRICS)
    rmse = {m: _mean(frame, m, "rmse") for m in frame.method.unique()}
    if config.protocol != "W":
        return _summarize_cross(frame, table, rmse, psd, trace, freqs, notes, extra, P, fs, config)
    tables = {f"{P}: leave-one-shaft-out metrics (z-units)": table}
    sq = extra.get("sq_err", {})
    pair, paired = _paired_table(sq, PAIR_ROWS)
    tables[f"{P}: paired RMSE ratios (seeds x test windows)"] = paired
    routing = config.world == "routing"
    ceiling = min(rmse.get("ridge", np.nan), rmse.get("ridge_oracle", np.inf))
    ceiling_name = "ridge per true state" if routing else "ridge"
    claims = []
    gate = ""
    if routing:
        world_pc = pair[("ridge_oracle", "ridge")]
        claims.append(Claim.at_most(f"{P}: positive control: RMSE(ridge per true state) / RMSE(ridge)",
                                    world_pc["mean"] if world_pc else None, ROUTE_ORACLE_BAR,
                                    paper="world design: a model that knows the state beats the "
                                    "linear map (Resolution, #36)"))
        if not claims[-1].passed:
            gate = "the world's positive control failed: it cannot show the effect"
    paper = "EpiTwin -16.8 % RMSE vs LaBraM (real sEEG)"
    claims += [
        _ratio_claim(f"{P}: RMSE(EpiTwin) / RMSE(LaBraM-style)", paper, pair[("epitwin", "labram")],
                     0.90, config, pair[("step0", "labram")], "step-0 EpiTwin / LaBraM-style",
                     ceiling / rmse.get("labram", np.nan), f"{ceiling_name} / LaBraM-style", gate),
        _ratio_claim(f"{P}: RMSE(EpiTwin) / RMSE(IDW)", "beats interpolation (no number)",
                     pair[("epitwin", "idw")], ROUTE_IDW_BAR, config, pair[("step0", "idw")],
                     "step-0 EpiTwin / IDW", ceiling / rmse.get("idw", np.nan),
                     f"{ceiling_name} / IDW", gate),
        _ratio_claim(f"{P}: RMSE(EpiTwin) / RMSE(ridge with lags)",
                     "spec: ridge expected within 5 % of EpiTwin" if config.world == "spec" else
                     "learns structure a linear map cannot (pre-registered, #36)",
                     pair[("epitwin", "ridge")], RIDGE_BAR[config.world], config,
                     pair[("step0", "ridge")], "step-0 EpiTwin / ridge",
                     ceiling / rmse.get("ridge", np.nan), f"{ceiling_name} / ridge", gate),
        _refine_claim(f"{P}: adversarial refinement: relative reduction of |SOI| vs MSE-only",
                      frame, "soi", config),
        _refine_claim(f"{P}: adversarial refinement: relative reduction of LSD vs MSE-only",
                      frame, "lsd", config),
        _ratio_claim(f"{P}: RMSE(EpiTwin) / RMSE(MSE-only)", "refinement keeps accuracy",
                     pair[("epitwin", "epitwin_mse")], 1.05, config, pair[("idw", "epitwin_mse")],
                     "IDW / MSE-only")]
    if routing and "epitwin_state" in sq:
        pc = pair[("epitwin_state", "ridge_oracle")]
        claims.append(Claim.at_most(
            f"{P}: positive control: RMSE(EpiTwin given the true state) / RMSE(ridge per true state)",
            pc["mean"] if pc else None, PC_ORACLE_TOLERANCE,
            paper="the signed unmixing can represent the state-dependent map (Resolution, #47)",
            note=_fmt_ratio(pc) if pc else ""))
        conv = pair[("epitwin_convex_state", "ridge_oracle")]
        if conv:
            notes.append("diagnosis check: EpiTwin without the signed unmixing (convex read-outs "
                         f"only) given the true state / oracle: {_fmt_ratio(conv)}")
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
    if "ridge" in rmse and "epitwin" in rmse:
        notes.append(f"ridge with lags: RMSE {rmse['ridge']:.3f} vs EpiTwin {rmse['epitwin']:.3f}")
    if "refinement" in extra:
        notes.append(f"refinement outcome: {extra['refinement']}")
    figs = _figures(psd, trace, freqs, fs, f"Protocol {P}")
    _add_curves(extra, figs, tables, P)
    return Result(tables=tables, figures=figs, claims=claims, notes=notes)


def _summarize_cross(frame, table, rmse, psd, trace, freqs, notes, extra, P, fs, config) -> Result:
    """X (cross-patient): the claims as before #47 (point estimates; X was not re-run)."""
    paper = "EpiTwin -16.8 % RMSE vs LaBraM (real sEEG)"
    claims = [Claim.at_most(f"{P}: RMSE(EpiTwin) / RMSE(LaBraM-style)",
                            rmse.get("epitwin", np.nan) / rmse.get("labram", np.nan), 0.90, paper=paper),
              Claim.at_most(f"{P}: RMSE(EpiTwin) / RMSE(IDW)",
                            rmse.get("epitwin", np.nan) / rmse.get("idw", np.nan),
                            0.95, paper="beats interpolation (no number)"),
              Claim.at_least("X: -HSPE (per-contact index embedding): relative RMSE increase",
                             rmse["epitwin_nohspe"] / rmse["epitwin"] - 1, 0.10,
                             paper="spatial encodings make unmonitored locations reconstructible"),
              Claim.at_least("X: -GFBA (plain attention): relative RMSE increase",
                             rmse["epitwin_nogfba"] / rmse["epitwin"] - 1, 0.02,
                             paper="GFBA improves reconstruction (no number)")]
    figs = _figures(psd, trace, freqs, fs, f"Protocol {P}")
    tables = {f"{P}: leave-one-shaft-out metrics (z-units)": table}
    _add_curves(extra, figs, tables, P)
    return Result(tables=tables, figures=figs, claims=claims, notes=notes)


# -- dev parts (#47): the rules of the constants above, on the dev patient --------------------

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
        fig, axes = plt.subplots(n_c, 1, figsize=(8, 1.8 * n_c + 0.6), sharex=True, squeeze=False)
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
        fig, ax = plt.subplots(figsize=(5.5, 4))
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
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
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
    torch.manual_seed(seed)
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
    claims = [Claim.at_most("B: permutation equivariance, max |G(Px) - P G(x)|", m["equivariance_max_abs"], 1e-4,
                            paper="contacts are a set"),
              Claim.at_most("B: masked contacts' input values, max output change", m["masked_input_influence"],
                            0.0, paper="conditioned on observed contacts only"),
              Claim.at_most("B: Laplacian PE vs numpy.linalg.eigh (up to sign)", m["laplacian_vs_eigh"], 1e-6,
                            paper="Laplacian eigenvectors"),
              Claim("B: RBF distance bias monotone decreasing after init", "distance decay",
                    str(m["rbf_bias_monotone"]), "True", bool(m["rbf_bias_monotone"])),
              Claim("B: discriminator score lengths per scale (T=512)", "3 scales",
                    str(m["disc_lengths"]), f"= {m['disc_expected']}",
                    m["disc_lengths"] == m["disc_expected"])]
    table = pd.DataFrame([{k: str(v) for k, v in m.items()}])
    return Result(tables={"B: properties": table}, claims=claims,
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
        # CPU seconds (one torch thread): the load of other processes cannot flip the slope (#33)
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
    fig, ax = plt.subplots(1, 2, figsize=(8, 3.2))
    for a, key, label in ((ax[0], "N", "contacts N (T = 512)"), (ax[1], "T", "window T (N = 64)")):
        a.loglog(by[key]["x"], by[key]["seconds"], "o-")
        a.set_xlabel(label)
        a.set_ylabel("forward time (s)")
    fig.tight_layout()
    rows = [{"axis": k, "size": x, "seconds": s} for k in by for x, s in zip(by[k]["x"], by[k]["seconds"])]
    return Result(tables={"scaling: forward time": pd.DataFrame(rows)},
                  figures={"forward time vs N and T": fig},
                  claims=[Claim.at_most("scaling: log-log slope of forward time in N", slope_n, 2.15,
                                        paper="spatial attention O(L N^2 d)")],
                  notes=[f"log-log slope in T at fixed patch (L = T / P): {slope_t:.2f} "
                         "(between linear and quadratic expected)"])


# -- registration ---------------------------------------------------------------------------

def _protocol_part(name, quick, full, description, default=True, seeds=(0,), tasks=protocol_tasks,
                   summarize=summarize_protocol):
    return Part(name=name, run=run_protocol, summarize=summarize, tasks=tasks,
                quick=quick, full=full, seeds=seeds, quick_seeds=(0,), default=default,
                description=description)


EXPERIMENT = register(Experiment(
    slug="epitwin",
    title=PAPER,
    parts=[
        _protocol_part("W", W_QUICK, W_FULL, "within-patient leave-one-shaft-out: EpiTwin vs "
                       "MSE-only, LaBraM-style, IDW, ridge"),
        # #36: X is opt-in, so that W's 1,000 steps fit the default run's budget
        _protocol_part("X", X_QUICK, X_FULL, "cross-patient: unseen patient's shafts; -HSPE, -GFBA "
                       "(opt-in since #36)", default=False),
        Part(name="B", run=run_properties, summarize=summarize_properties,
             quick=PropertyConfig(duration_s=12.0, n_shafts=3, n_layers=1), full=PropertyConfig(),
             seeds=(0,), description="equivariance, masked-input invariance, Laplacian PE, "
             "RBF bias, discriminator lengths"),
        Part(name="scaling", run=run_scaling, summarize=summarize_scaling, tasks=scaling_tasks,
             quick=ScalingConfig(sizes=(16, 32, 64), lengths=(128, 256), n_layers=1, repeats=1),
             full=ScalingConfig(), seeds=(0,), description="forward time vs N and T"),
        # #36: the pre-registered second world (state-dependent hemisphere gains), opt-in
        _protocol_part("W_switch", replace(W_QUICK, world="switching", label="W_switch"),
                       replace(W_FULL, world="switching", label="W_switch"),
                       "W on the pre-registered non-linear 'switching' world (opt-in)",
                       default=False),
        # #36/#47: the routing world (state-oracle positive control, Resolution): every neural
        # model and the baselines on three training seeds, the positive controls of the signed
        # unmixing on seed 0; opt-in and resumable (jobs kept under the epitwin cache)
        _protocol_part("W_route", W_ROUTE_QUICK, W_ROUTE_FULL,
                       "W on the 'routing' world: the state switches which source drives each "
                       "shaft's local field; 3 seeds, positive controls (opt-in, resumable)",
                       default=False, seeds=(0, 1, 2)),
        _protocol_part("W_seeds", replace(W_QUICK, label="W_seeds"),
                       replace(W_FULL, label="W_seeds", cache_dir=JOB_CACHE),
                       "W on 3 training seeds (opt-in, resumable)", default=False, seeds=(0, 1, 2)),
        _protocol_part("X_seeds", X_QUICK, replace(X_FULL, epochs=20), "X at 20 epochs, 3 seeds",
                       default=False, seeds=(0, 1, 2)),
        # #47: the dev procedure (dev patient, never reported): rule 1, then rules 2 and 3 at the
        # chosen lr; opt-in and resumable
        _protocol_part("dev", DEV_QUICK, DEV_FULL, "dev rule 1: lr grid for EpiTwin and "
                       "LaBraM-style on the dev patient (opt-in)", default=False, tasks=dev_tasks,
                       summarize=summarize_dev),
        _protocol_part("dev_steps", DEV_QUICK, DEV_FULL, "dev rules 2-3: budget and stage-2 "
                       "checkpoint rule on the dev patient (opt-in)", default=False,
                       tasks=dev_steps_tasks, summarize=summarize_dev_steps),
    ],
    claims=["EpiTwin lowers RMSE vs LaBraM by 16.8 % under series-level masking",
            "adversarial refinement reduces spectral over-smoothing",
            "spatial encodings (HSPE, GFBA) make unmonitored locations reconstructible"],
    reference=PAPER,
))
