"""Reproduction of EpiTwin's claims on the synthetic sEEG patients (no clinical sEEG offline).

Parts
-----
``W``  within-patient protocol: one 600-s patient, train on the first 70 % (2-s windows, 1-s
       stride, 19 epochs = 1,007 optimiser steps since #36), select checkpoints on the next 10 %, reconstruct every shaft of the last 20 %
       leave-one-shaft-out; EpiTwin vs its MSE-only version, the LaBraM-style transformer, IDW,
       ridge with lags (and MNE's interpolation on single contacts).
``X`` (opt-in since #36)  cross-patient protocol: train on patients 1-4 (120 s each), reconstruct each shaft of the
       unseen patient 5 from its other shafts; EpiTwin vs LaBraM-style, IDW and the -HSPE and
       -GFBA ablations.
``B``  properties (permutation equivariance, masked inputs ignored, Laplacian PE vs eigh, RBF bias
       monotone, discriminator lengths).
``scaling``  forward time against the number of contacts N and the window length T.
``W_switch`` (opt-in, #36)  W on the pre-registered 'switching' world (state-gated hemispheres).
``W_route`` (opt-in, #36)  W on the 'routing' world (the state switches which source drives each
       shaft's confined local field): EpiTwin vs IDW, ridge, ridge per true state (the positive
       control) and ridge per state inferred from band power, paired over windows and shafts.
``W_seeds``, ``X_seeds`` (opt-in)  the protocols at the spec's 20 epochs and 3 training seeds.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, replace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from scipy.signal import welch  # noqa: E402

from icml26.core.device import cpu_only, job_device, uses_device  # noqa: E402
from icml26.core.experiment import Claim, Experiment, Part, Result, register  # noqa: E402
from icml26.core.stats import (best_seconds, loglog_slope, sign_test,  # noqa: E402
                               summary_table)

from .baselines import (IDWReconstructor, InferredStateRidge, RidgeReconstructor,  # noqa: E402
                        StateRidgeReconstructor, mne_interpolate)
from .data import make_synthetic_seeg, windows  # noqa: E402
from .estimator import EpiTwin, LaBraMStyleReconstructor  # noqa: E402
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


# #36: spend the budget on optimiser steps. 1-s stride (419 training windows, 53 steps per epoch
# at batch 8) and 19 epochs = 1,007 optimiser steps for every neural model (EpiTwin: 13 MSE
# epochs + 6 adversarial ones). Fixed from the ">= 1,000 steps", not tuned on any split.
W_STEPS_STRIDE = 256
W_STEPS_EPOCHS = 19
OLD_W = ProtocolConfig()  # the first reproduction's W: 2-s stride, 8 epochs (210 steps)
W_FULL = replace(OLD_W, train_stride=W_STEPS_STRIDE, epochs=W_STEPS_EPOCHS)
W_QUICK = replace(W_FULL, duration_s=60.0, n_shafts=4, d_model=16, n_layers=1, epochs=2)
X_FULL = replace(OLD_W, protocol="X", duration_s=120.0,
                 methods=("epitwin", "epitwin_nohspe", "epitwin_nogfba", "labram", "linear"))
X_QUICK = replace(X_FULL, duration_s=30.0, train_patients=(1, 2), n_shafts=4, d_model=16,
                  n_layers=1, epochs=2)
COST = {"epitwin": 5, "epitwin_nohspe": 5, "epitwin_nogfba": 4, "epitwin_mse": 4, "labram": 2,
        "linear": 1}


def protocol_tasks(config: ProtocolConfig) -> list:
    """One job per method, the costliest first (so two workers balance)."""
    return [{"method": m} for m in sorted(config.methods, key=lambda m: -COST.get(m, 0))]


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
                  stride=config.train_stride, seed=seed, device=job_device())
    functional = "static" if config.protocol == "W" else "dynamic"
    ep = dict(common, patch=config.patch, functional=functional)
    return {"epitwin": lambda: EpiTwin(**ep),
            "epitwin_mse": lambda: EpiTwin(**ep, adversarial=False),
            "epitwin_nohspe": lambda: EpiTwin(**ep, use_hspe=False),
            "epitwin_nogfba": lambda: EpiTwin(**ep, use_gfba=False),
            "labram": lambda: LaBraMStyleReconstructor(**dict(common, patch=config.labram_patch)),
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
    """``predict(W, montage, masked)`` of a :class:`StateRidgeReconstructor` given per-sample
    labels (the oracle's true states)."""

    def __init__(self, model, labels):
        self.model, self.labels = model, labels

    def predict(self, W, montage, masked):
        return self.model.predict(W, montage, masked, self.labels)


def _evaluate(name, model, W, montage, fs, config, out):
    pred = leave_one_shaft_out(model, W, montage)
    metrics = reconstruction_metrics(W, pred, fs)
    if config.world == "routing":  # #36: per (test window, shaft) squared errors, for pairing
        out.setdefault("sq_err", {})[name] = [
            np.sum((pred[:, montage.shaft == s] - W[:, montage.shaft == s]).astype(np.float64) ** 2,
                   axis=(1, 2)).tolist() for s in montage.shafts]
        out["sq_err_n"] = [int((montage.shaft == s).sum() * W.shape[-1]) for s in montage.shafts]
    metrics["rmse_per_shaft"] = [float(np.sqrt(np.mean((pred[:, montage.shaft == s]
                                                        - W[:, montage.shaft == s]) ** 2)))
                                 for s in montage.shafts]
    freqs, P = _mean_psd(pred, fs)
    on = montage.shaft == config.figure_shaft
    out["methods"][name] = metrics
    out["psd"][name] = P.tolist()
    out["freqs"] = freqs.tolist()
    out["trace"][name] = pred[0, on][:3].tolist()


@uses_device
def run_protocol(config: ProtocolConfig, seed: int, task: dict) -> dict:
    """Train (or fit) one method and evaluate it leave-one-shaft-out on the test block."""
    torch.set_num_threads(1)
    data = protocol_data(config)
    W, montage = data["test"]
    fs = data["fs"]
    method = task["method"]
    out = {"method": method, "methods": {}, "psd": {}, "trace": {}, "freqs": [], "notes": []}
    start = time.perf_counter()
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
            else:
                out["mne"] = _mne_check(data["test_continuous"], montage, fs)
    else:
        model = _models(config, method, seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            model.fit([t[0] for t in data["train"]], [t[1] for t in data["train"]],
                      X_val=data["val"], fs=fs)
        out["notes"] += [str(w.message) for w in caught if "refinement" in str(w.message)]
        out["history"] = model.history_
        out["step0"] = {"train_rmse": model.step0_train_rmse_, "val_rmse": model.step0_val_rmse_}
        out["n_steps"] = int(model.n_steps_)
        out["refinement"] = getattr(model, "refinement_", "off")
        _evaluate(method, model, W, montage, fs, config, out)
    out["seconds"] = time.perf_counter() - start
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
    for j in jobs:
        m = j.metrics
        for name, met in m["methods"].items():
            rows.append(dict({k: met[k] for k in METRICS}, method=name, seed=j.seed))
        if j.seed == min(jj.seed for jj in jobs):
            psd.update(m["psd"])
            trace.update(m["trace"])
            freqs = m["freqs"] or freqs
            if "mne" in m:
                extra["mne"] = m["mne"]
            if "sq_err" in m:  # #36 routing world: per (shaft, test window) squared errors
                extra.setdefault("sq_err", {}).update(m["sq_err"])
                extra["sq_err_n"] = m["sq_err_n"]
        notes += [f"{m['method']} (seed {j.seed}): {n}" for n in m["notes"]]
        if "history" in m and j.seed == min(jj.seed for jj in jobs):
            extra.setdefault("curves", {})[m["method"]] = {"history": m["history"],
                                                           "step0": m.get("step0"),
                                                           "n_steps": m.get("n_steps")}
        if "refinement" in m and m["method"].startswith("epitwin") and m["refinement"] != "off":
            extra.setdefault("refinement", {})[f"{m['method']}/{j.seed}"] = m["refinement"]
    frame = pd.DataFrame(rows)
    for c in METRICS:
        frame[c] = pd.to_numeric(frame[c], errors="coerce")
    return frame, psd, trace, freqs, notes, extra


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


def summarize_protocol(jobs, config: ProtocolConfig) -> Result:
    frame, psd, trace, freqs, notes, extra = _collect(jobs)
    fs = 256.0
    P = config.label or config.protocol
    table = summary_table(frame.to_dict("records"), "method", METRICS)
    rmse = {m: _mean(frame, m, "rmse") for m in frame.method.unique()}
    paper = "EpiTwin -16.8 % RMSE vs LaBraM (real sEEG)"
    if config.world == "routing":
        return _summarize_routing(frame, table, rmse, psd, trace, freqs, notes, extra, P, fs)
    claims = [Claim.at_most(f"{P}: RMSE(EpiTwin) / RMSE(LaBraM-style)",
                            rmse.get("epitwin", np.nan) / rmse.get("labram", np.nan), 0.90, paper=paper),
              Claim.at_most(f"{P}: RMSE(EpiTwin) / RMSE(IDW)",
                            rmse.get("epitwin", np.nan) / rmse.get("idw", np.nan),
                            0.95, paper="beats interpolation (no number)")]  # #36: W as X
    if config.protocol == "W" and config.world == "switching":
        # pre-registered (#36): in the switching world a model can beat the best linear map
        claims.append(Claim.at_most(f"{P}: RMSE(EpiTwin) / RMSE(ridge with lags)",
                                    rmse.get("epitwin", np.nan) / rmse.get("ridge", np.nan), 0.95,
                                    paper="learns structure a linear map cannot (pre-registered, #36)"))
    if config.protocol == "W":
        soi = {m: abs(_mean(frame, m, "soi")) for m in ("epitwin", "epitwin_mse")}
        lsd = {m: _mean(frame, m, "lsd") for m in ("epitwin", "epitwin_mse")}
        claims += [
            Claim.at_least(f"{P}: adversarial refinement: relative reduction of |SOI| vs MSE-only",
                           1 - soi["epitwin"] / soi["epitwin_mse"], 0.20,
                           paper="reduces spectral over-smoothing (no number)"),
            Claim.at_least(f"{P}: adversarial refinement: relative reduction of LSD vs MSE-only",
                           1 - lsd["epitwin"] / lsd["epitwin_mse"], 0.20,
                           paper="reduces spectral over-smoothing (no number)"),
            Claim.at_most(f"{P}: RMSE(EpiTwin) / RMSE(MSE-only)",
                          rmse["epitwin"] / rmse["epitwin_mse"], 1.05,
                          paper="refinement keeps accuracy")]
        if "ridge" in rmse:
            notes.append(f"ridge with lags: RMSE {rmse['ridge']:.3f} vs EpiTwin {rmse['epitwin']:.3f} "
                         f"(ratio EpiTwin/ridge {rmse['epitwin'] / rmse['ridge']:.3f}, MSE-only/ridge "
                         f"{rmse.get('epitwin_mse', np.nan) / rmse['ridge']:.3f}; reported, not a bar: "
                         "the world is linear-Gaussian given the network state, so not beating ridge "
                         "is a finding, not a bug)")
        if "mne" in extra:
            mne_r = extra["mne"]
            notes.append(
                "MNE interpolate_bads on sEEG: whole shaft -> " + mne_r["whole_shaft"]
                + f"; one middle contact per shaft: {mne_r['single_contact_ok']} interpolated "
                f"(RMSE {mne_r['single_contact_rmse_mne']}, IDW on the same contacts "
                f"{mne_r['single_contact_rmse_idw']}), failures: {mne_r['single_contact_failures']}"
                + ("; ratio EpiTwin/MNE on whole shafts: undefined (MNE cannot interpolate a whole "
                   "shaft)" if mne_r["whole_shaft"] != "interpolated" else ""))
    else:
        claims += [
            Claim.at_least("X: -HSPE (per-contact index embedding): relative RMSE increase",
                           rmse["epitwin_nohspe"] / rmse["epitwin"] - 1, 0.10,
                           paper="spatial encodings make unmonitored locations reconstructible"),
            Claim.at_least("X: -GFBA (plain attention): relative RMSE increase",
                           rmse["epitwin_nogfba"] / rmse["epitwin"] - 1, 0.02,
                           paper="GFBA improves reconstruction (no number)")]
    if "refinement" in extra:
        notes.append(f"refinement outcome: {extra['refinement']}")
    figs = _figures(psd, trace, freqs, fs, f"Protocol {P}")
    tables = {f"{P}: leave-one-shaft-out metrics (z-units)": table}
    _add_curves(extra, figs, tables, P)
    return Result(tables=tables, figures=figs, claims=claims, notes=notes)


def _add_curves(extra: dict, figs: dict, tables: dict, P: str) -> None:
    """The training-curve figure and the steps / validation-RMSE table, when the run kept curves."""
    if not extra.get("curves"):
        return
    figs["training curves (train and validation RMSE per epoch)"] = _curves_figure(extra["curves"], f"Protocol {P}")
    rows = []
    for name, c in sorted(extra["curves"].items()):
        h = [e for e in c["history"] if "val_rmse" in e]
        best = min(h, key=lambda e: e["val_rmse"]) if h else {}
        rows.append({"method": name, "optimiser steps": c.get("n_steps"),
                     "step-0 val RMSE": (c.get("step0") or {}).get("val_rmse"),
                     "best val RMSE": best.get("val_rmse"), "at epoch": best.get("epoch"),
                     "last val RMSE": h[-1]["val_rmse"] if h else None})
    tables[f"{P}: optimiser steps and validation RMSE"] = pd.DataFrame(rows)


# #36: the routing world's pre-registered bars (written down before EpiTwin was trained on it).
# Positive control: the state oracle must beat global ridge by >= 15 % RMSE (the design
# criterion, met on the dev patients; here re-measured on the reported patient). EpiTwin: W's
# bar vs IDW; its ratios to ridge, to the oracle and to the inferred-state ridge are reported
# with paired statistics, not as bars.
ROUTE_ORACLE_BAR = 0.85
ROUTE_IDW_BAR = 0.95
N_BOOT = 2000


def paired_comparisons(sq_err: dict, n_per_shaft, pairs) -> pd.DataFrame:
    """RMSE ratio A/B with a percentile-bootstrap 95 % interval over test windows (resampled
    with replacement, the same windows for A and B) and a sign test over shafts (per-shaft RMSE;
    a win = A lower). ``sq_err[name]`` is (n_shafts, n_windows) sums of squared errors."""
    n = np.asarray(n_per_shaft, float)
    rows = []
    for a, b in pairs:
        if a not in sq_err or b not in sq_err:
            continue
        A, B = np.asarray(sq_err[a]), np.asarray(sq_err[b])
        ratio = float(np.sqrt(A.sum() / B.sum()))
        rng = np.random.default_rng(0)
        idx = rng.integers(0, A.shape[1], size=(N_BOOT, A.shape[1]))
        boots = np.sqrt(A.sum(0)[idx].sum(1) / B.sum(0)[idx].sum(1))
        lo, hi = np.quantile(boots, [0.025, 0.975])
        per_shaft = np.sqrt(B.sum(1) / (n * A.shape[1])) - np.sqrt(A.sum(1) / (n * A.shape[1]))
        st = sign_test(per_shaft)
        rows.append({"A": a, "B": b, "RMSE A / RMSE B": ratio, "95 % interval (windows)":
                     f"[{lo:.3f}, {hi:.3f}]", "shafts A better": st["wins"],
                     "shafts A worse": st["losses"], "sign test p (one-sided)": st["p"],
                     "mean per-shaft RMSE gain": float(np.mean(per_shaft))})
    return pd.DataFrame(rows)


def _summarize_routing(frame, table, rmse, psd, trace, freqs, notes, extra, P, fs) -> Result:
    nan = float("nan")
    r = {k: rmse.get(k, nan) for k in ("epitwin", "idw", "ridge", "ridge_oracle", "ridge_inferred")}
    claims = [
        Claim.at_most(f"{P}: positive control: RMSE(ridge per true state) / RMSE(ridge)",
                      r["ridge_oracle"] / r["ridge"], ROUTE_ORACLE_BAR,
                      paper="world design: a model that knows the state beats the linear map "
                      "(Resolution, #36)"),
        Claim.at_most(f"{P}: RMSE(EpiTwin) / RMSE(IDW)", r["epitwin"] / r["idw"], ROUTE_IDW_BAR,
                      paper="beats interpolation (no number)")]
    pairs = [("epitwin", "idw"), ("epitwin", "ridge"), ("epitwin", "ridge_oracle"),
             ("epitwin", "ridge_inferred"), ("ridge_oracle", "ridge"), ("ridge_inferred", "ridge")]
    tables = {f"{P}: leave-one-shaft-out metrics (z-units)": table}
    if extra.get("sq_err"):
        paired = paired_comparisons(extra["sq_err"], extra["sq_err_n"], pairs)
        tables[f"{P}: paired comparisons (ratio, window bootstrap, sign test over shafts)"] = paired
        for row in paired.to_dict("records"):
            notes.append(f"{row['A']} / {row['B']}: RMSE ratio {row['RMSE A / RMSE B']:.3f} "
                         f"{row['95 % interval (windows)']}, A better on {row['shafts A better']} "
                         f"of {row['shafts A better'] + row['shafts A worse']} shafts "
                         f"(sign p {row['sign test p (one-sided)']:.3g})")
    notes.append("reported, not bars: EpiTwin / ridge, EpiTwin / oracle, EpiTwin / inferred-state "
                 "ridge; the world is non-linear in the observed contacts by design (Resolution)")
    if "refinement" in extra:
        notes.append(f"refinement outcome: {extra['refinement']}")
    figs = _figures(psd, trace, freqs, fs, f"Protocol {P}")
    _add_curves(extra, figs, tables, P)
    return Result(tables=tables, figures=figs, claims=claims, notes=notes)


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

def _protocol_part(name, quick, full, description, default=True, seeds=(0,)):
    return Part(name=name, run=run_protocol, summarize=summarize_protocol, tasks=protocol_tasks,
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
        # #36: the pre-registered second world (state-dependent hemisphere gains), opt-in: its
        # full run did not fit the session; same protocol and settings as W
        _protocol_part("W_switch", replace(W_QUICK, world="switching", label="W_switch"),
                       replace(W_FULL, world="switching", label="W_switch"),
                       "W on the pre-registered non-linear 'switching' world (opt-in)",
                       default=False),
        # #36: the routing world (designed with a state-oracle positive control, Resolution):
        # EpiTwin at W's 1,007 steps vs IDW, ridge, ridge per true state (oracle) and ridge per
        # inferred state; opt-in (one EpiTwin training, about 5 CPU-minutes)
        _protocol_part("W_route", replace(W_QUICK, world="routing", label="W_route",
                                          methods=("epitwin", "linear")),
                       replace(W_FULL, world="routing", label="W_route",
                               methods=("epitwin", "linear")),
                       "W on the 'routing' world: the state switches which source drives each "
                       "shaft's local field (opt-in)", default=False),
        _protocol_part("W_seeds", W_QUICK, replace(W_FULL, epochs=20), "W at 20 epochs, 3 seeds",
                       default=False, seeds=(0, 1, 2)),
        _protocol_part("X_seeds", X_QUICK, replace(X_FULL, epochs=20), "X at 20 epochs, 3 seeds",
                       default=False, seeds=(0, 1, 2)),
    ],
    claims=["EpiTwin lowers RMSE vs LaBraM by 16.8 % under series-level masking",
            "adversarial refinement reduces spectral over-smoothing",
            "spatial encodings (HSPE, GFBA) make unmonitored locations reconstructible"],
    reference=PAPER,
))
