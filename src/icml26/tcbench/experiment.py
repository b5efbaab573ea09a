"""Reproduction of *The Perception–Physics Paradox* (TC-Bench) at CPU scale.

Parts (spec §6):

* ``protocol`` (Exp A) — the probing protocol on latents built from exact SynthTC labels:
  an isomorphic latent passes (regime ratios ≈ 1), a latent with a planted saturating
  shortcut at 980 hPa collapses (ratios ≥ 2, lower intense participation ratio).
* ``paradox`` (Exp B) — image level: generic frozen encoders (pixel PCA, random ConvNet,
  autoencoder) collapse in the intense regime while physics-aligned controls (pixel-
  supervised CNN, Dvorak-style eye features) do not, and held-out-basin error still looks fine.
  Every job also renders the same storms with ``SynthTC(saturate=False)`` (the generator
  control: the large-scale appearance keeps changing below 980 hPa) and re-runs E1, E2, E3
  and E5 there; each collapse claim's negative control is its own statistic in that world.
* ``scaling`` — probe fit time is linear in the number of frames.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.claims import Measurement
from ..core.device import cpu_only, job_device, uses_device
from ..core.experiment import Experiment, Part, Result, register
from ..core.figures import subplots
from ..core.stats import loglog_slope, paired_mean_interval, summary_table, win_fraction_interval
from .baselines import Climatology, DvorakLite
from .data import INTENSE_THRESHOLD, SynthTC, TCFrames, background_temperature
from .encoders import ConvAutoencoder, EyeFeatures, PixelPCA, RandomConvEncoder, SupervisedCNN
from .geometry import geometry_report
from .probes import (StructuralAlignmentProbe, bin_profile, cross_agency_ood, q_con, q_dyn,
                     q_stat, regime_balance, trajectory_split)

REFERENCE = ("D. Yao, A. Polesello, A. Pervez, C. Muller, F. Locatello. The Perception–Physics "
             "Paradox: Probing Scientific Alignment with TC-Bench. ICML 2026 (arXiv 2605.24782).")

# The bars live in claims.toml (spec §6 verbatim where the spec gives one).
GEOMETRY_EDGES = (920.0, 980.0, 990.0, 1010.0)   # bins [920, 980) and [990, 1010)
SEEDS = (42, 43, 44, 45, 46)
LATENTS = ("isomorphic", "shortcut", "nonlinear")
ENCODERS = {"E1": "PCA-64 pixels", "E2": "random ConvNet", "E3": "conv autoencoder",
            "E4": "supervised CNN", "E5": "eye features (oracle)"}
GENERIC = ("E1", "E2", "E3")
# Encoders re-run in the generator control world (SynthTC(saturate=False)); E4 (the supervised
# CNN, the costliest) is not, so the control world's B1 denominator is E5 alone.
CONTROL_ENCODERS = ("E1", "E2", "E3", "E5")
INTERVAL_LEVEL = 0.95        # paired BCa intervals over the five seeds


def _standardize(a: np.ndarray) -> np.ndarray:
    return (a - a.mean()) / a.std()


def _regime_stats(frames: TCFrames, Z: np.ndarray, seed: int, min_count: int,
                  standardize: bool, with_dyn_profile: bool = True) -> tuple:
    """Fit the pressure probe and compute Q_stat / Q_dyn / geometry summaries."""
    probe = StructuralAlignmentProbe(random_state=seed, standardize=standardize).fit(Z, frames)
    stat = q_stat(probe, Z, frames)
    dyn = q_dyn(probe, Z, frames)
    med = stat.groupby("regime").xi_stat.median()
    mean_dyn = dyn.groupby("regime").xi_dyn.mean()
    geo = geometry_report(Z, frames.pressure, edges=GEOMETRY_EDGES, min_count=min_count)
    out = {
        "xi_stat_moderate": float(med["moderate"]), "xi_stat_intense": float(med["intense"]),
        "xi_stat_ratio": float(med["intense"] / med["moderate"]),
        "xi_dyn_moderate": float(mean_dyn["moderate"]), "xi_dyn_intense": float(mean_dyn["intense"]),
        "xi_dyn_ratio": float(mean_dyn["intense"] / mean_dyn["moderate"]),
        "pr_intense": float(geo.d_eff.iloc[0]), "pr_moderate": float(geo.d_eff.iloc[2]),
        "spread_intense": float(geo.spread.iloc[0]), "spread_moderate": float(geo.spread.iloc[2]),
        "alpha": probe.alpha_,
    }
    if with_dyn_profile:
        prof = bin_profile(dyn)
        out["dyn_profile"] = {f"{b:g}": float(m) for b, m in zip(prof["bin"], prof["mean"])}
    return out, probe


# -- Exp A: protocol check with exact truth ----------------------------------------------------
@dataclass(frozen=True)
class ProtocolConfig:
    n_trajectories: int = 400
    latent_dim: int = 64
    noise: float = 0.05
    residual_scale: float = 0.05
    matrix_seed: int = 0
    min_count: int = 500


def protocol_latents(frames: TCFrames, kind: str, dim: int = 64, noise: float = 0.05,
                     residual_scale: float = 0.05, matrix_seed: int = 0,
                     seed: int = 0) -> np.ndarray:
    """Exp A latents from exact labels ``y = std(P_c, V_m, R_m, φ)``.

    ``isomorphic``: ``A y + 0.05 tanh(B y) + noise``; ``shortcut``: ``A_sc ỹ + noise`` with
    ``ỹ = std(max(P_c, 980), φ, ζ)`` (no pressure information below 980 hPa);
    ``nonlinear``: ``A y^{∘3} + noise``.  ``A, B, A_sc ~ N(0, 1)`` from ``matrix_seed``.
    """
    y = np.c_[_standardize(frames.pressure), _standardize(frames.wind),
              _standardize(frames.rmw), _standardize(frames.lat)]
    mats = np.random.default_rng(matrix_seed)
    A, B = mats.standard_normal((dim, 4)), mats.standard_normal((dim, 4))
    A_sc = mats.standard_normal((dim, 3))
    rng = np.random.default_rng(seed)
    n = len(frames)
    if kind == "isomorphic":
        z = y @ A.T + residual_scale * np.tanh(y @ B.T)
    elif kind == "shortcut":
        shortcut = np.c_[_standardize(np.maximum(frames.pressure, INTENSE_THRESHOLD)),
                         _standardize(frames.lat), rng.standard_normal(n)]
        z = shortcut @ A_sc.T
    elif kind == "nonlinear":
        z = (y ** 3) @ A.T
    else:
        raise ValueError(f"kind must be one of {list(LATENTS)}, got {kind!r}")
    return z + noise * rng.standard_normal((n, dim))


def run_protocol(config: ProtocolConfig, seed: int) -> dict:
    frames = SynthTC(config.n_trajectories, seed=seed, render=False).generate()
    out = {}
    for kind in LATENTS:
        Z = protocol_latents(frames, kind, config.latent_dim, config.noise,
                             config.residual_scale, config.matrix_seed, seed)
        out[kind], _ = _regime_stats(frames, Z, seed, config.min_count, standardize=False)
    out["n_frames"] = len(frames)
    return out


def _records(jobs, keys, metrics):
    rows = []
    for job in jobs:
        for key in keys:
            m = job.metrics[key]
            rows.append({"latent" if key in LATENTS else "encoder": key, "seed": job.seed,
                         **{k: m[k] for k in metrics}})
    return rows


def _profile_figure(jobs, keys, title):
    fig, ax = subplots(figsize=(6.5, 3.6))
    for key in keys:
        prof = pd.DataFrame([{"bin": float(b), "xi": v} for j in jobs
                             for b, v in j.metrics[key]["dyn_profile"].items()])
        mean = prof.groupby("bin").xi.mean()
        ax.plot(mean.index, mean.values, marker=".", label=key)
    ax.axvline(INTENSE_THRESHOLD, color="grey", ls="--", lw=1)
    ax.set_xlabel("P_c(t) bin (hPa)")
    ax.set_ylabel("mean ξ_dyn (hPa / 3 h)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def summarize_protocol(jobs, config: ProtocolConfig) -> Result:
    metrics = ["xi_stat_moderate", "xi_stat_intense", "xi_stat_ratio", "xi_dyn_moderate",
               "xi_dyn_intense", "xi_dyn_ratio", "pr_intense", "pr_moderate"]
    rows = _records(jobs, LATENTS, metrics)
    table = summary_table(rows, "latent", metrics)
    frame = pd.DataFrame(rows)
    by = {k: frame[frame.latent == k] for k in LATENTS}
    iso, sc = by["isomorphic"], by["shortcut"]
    measurements = {
        "A_iso_stat_ratio": float(iso.xi_stat_ratio.max()),
        "A_iso_dyn_ratio": float(iso.xi_dyn_ratio.max()),
        "A_shortcut_stat_ratio": float(sc.xi_stat_ratio.min()),
        "A_shortcut_dyn_ratio": float(sc.xi_dyn_ratio.min()),
        "A_shortcut_pr_ratio": float((sc.pr_intense / sc.pr_moderate).max()),
    }
    nl = by["nonlinear"]
    notes = [f"A(iii) nonlinear-but-injective latent (reported only): ξ_stat ratio "
             f"{nl.xi_stat_ratio.min():.2f}–{nl.xi_stat_ratio.max():.2f}, ξ_dyn ratio "
             f"{nl.xi_dyn_ratio.min():.2f}–{nl.xi_dyn_ratio.max():.2f} (linear probes penalise "
             "non-linear encodings by design)."]
    figure = _profile_figure(jobs, LATENTS, "Exp A: ξ_dyn per 5-hPa bin (mean over seeds)")
    return Result(tables={"protocol": table}, figures={"protocol_xi_dyn": figure},
                  measurements=measurements, notes=notes)


# -- Exp B: image-level paradox ----------------------------------------------------------------
@dataclass(frozen=True)
class ParadoxConfig:
    n_trajectories: int = 300
    image_size: int = 64
    pca_components: int = 64
    ae_epochs: int = 5
    ae_width: int = 8
    ae_train_frames: int = 3000
    cnn_epochs: int = 10
    held_out_basin: int = 4
    min_count: int = 500
    standardize: bool = True
    encoder_seed: int = 0
    # B4: d_eff on features z-scored over all frames (the convention behind the spec's
    # prototype numbers); False = raw features (the official repository's geometry code).
    geometry_standardize: bool = True
    # E5's ancillary input beside the five eye features: "abs_lat" (|latitude|, what an
    # analyst knows beside the image), "background" (the background temperature, which mixes
    # latitude with the basin's calibration offset: the earlier rule), "none".
    e5_ancillary: str = "abs_lat"
    # the generator control: the same seeds rendered with SynthTC(saturate=False)
    generator_control: bool = True


E5_ANCILLARY = ("abs_lat", "background", "none")


def _oracle_features(frames: TCFrames, ancillary: str = "abs_lat") -> np.ndarray:
    """E5: the five Dvorak-style eye features plus one ancillary input.

    The latitude cue of SynthTC's wind–pressure relation is not in the eye, so without an
    ancillary input E5's wind probe cannot order storms by latitude at equal pressure.
    ``"abs_lat"`` gives it ``|φ|``; ``"background"`` gives it the clear-sky background
    temperature, which carries the basin's calibration offset as well as latitude.
    """
    if ancillary not in E5_ANCILLARY:
        raise ValueError(f"ancillary must be one of {list(E5_ANCILLARY)}, got {ancillary!r}")
    eye = EyeFeatures().fit_transform(frames.images)
    if ancillary == "none":
        return eye
    extra = (np.abs(frames.lat) if ancillary == "abs_lat"
             else background_temperature(frames.lat, frames.basin))
    return np.c_[eye, extra]


def encode_frames(frames: TCFrames, config: ParadoxConfig, train_index: np.ndarray | None,
                  names=tuple(ENCODERS)) -> dict:
    """Features of every frame from the Exp B encoders ``names`` (E4 trains on ``train_index``)."""
    images, seed = frames.images, config.encoder_seed
    device = job_device()                 # initialised on the CPU (seeded), trained there
    out = {}
    if "E1" in names:
        out["E1"] = PixelPCA(config.pca_components, seed).fit(images).transform(images)
    if "E2" in names:
        out["E2"] = RandomConvEncoder(seed).to(device).transform(images)
    if "E3" in names:
        # the autoencoder is pretrained on a random subset of unlabelled frames (CPU budget)
        subset = np.random.default_rng(seed).permutation(len(images))[:config.ae_train_frames]
        ae = ConvAutoencoder(config.image_size, 64, config.ae_width, seed).to(device).fit(
            images[np.sort(subset)], epochs=config.ae_epochs)
        out["E3"] = ae.transform(images)
    if "E4" in names:
        cnn = SupervisedCNN(random_state=seed).to(device).fit(
            images[train_index], frames.pressure[train_index], epochs=config.cnn_epochs)
        out["E4"] = cnn.transform(images)
    if "E5" in names:
        out["E5"] = _oracle_features(frames, config.e5_ancillary)
    return {name: out[name] for name in names}


def _encoder_stats(frames: TCFrames, Z: np.ndarray, config: ParadoxConfig, seed: int) -> dict:
    stats, probe = _regime_stats(frames, Z, seed, config.min_count, config.standardize)
    wind = StructuralAlignmentProbe(target="wind", random_state=seed,
                                    standardize=config.standardize).fit(Z, frames)
    con = q_con(probe, wind, Z, frames).attrs["psi_con"]
    ood = cross_agency_ood(Z, frames, config.held_out_basin, standardize=config.standardize)
    report = probe.evaluate(Z, frames)
    # participation ratio of globally standardized features (B4's claim by default) beside
    # the raw-feature one of the official repository (pr_intense / pr_moderate)
    geo_std = geometry_report(Z, frames.pressure, edges=GEOMETRY_EDGES,
                              min_count=config.min_count, standardize=True)
    stats.update(pr_std_intense=float(geo_std.d_eff.iloc[0]),
                 pr_std_moderate=float(geo_std.d_eff.iloc[2]))
    stats.update(
        psi_con_moderate=con["moderate"]["pairwise_rate"],
        psi_con_intense=con["intense"]["pairwise_rate"],
        psi_con_bins_moderate=con["moderate"]["bin_rate"],
        psi_con_bins_intense=con["intense"]["bin_rate"],
        mae_id=ood["mae_id"], mae_ood=ood["mae_ood"], ood_ratio=ood["ratio"],
        mae_test=report["overall"]["mae"], mae_intense=report["intense"]["mae"],
        r2=report["overall"]["r2"], dim=int(Z.shape[1]))
    return stats


@uses_device
def run_paradox(config: ParadoxConfig, seed: int) -> dict:
    timings = {}
    start = time.perf_counter()
    frames = SynthTC(config.n_trajectories, config.image_size, seed=seed).generate()
    # the probes' own balanced trajectory split: E4 and Dvorak-lite never see test storms
    balanced = regime_balance(frames.pressure)
    train_pos, test_pos = trajectory_split(frames.trajectory_id[balanced], 0.2, seed)
    train_index = balanced[train_pos]
    test = np.zeros(len(frames), dtype=bool)
    test[balanced[test_pos]] = True
    timings["generate"] = time.perf_counter() - start
    features = encode_frames(frames, config, train_index)
    timings["encode"] = time.perf_counter() - start - timings["generate"]
    out = {"n_frames": len(frames)}
    for name, Z in features.items():
        out[name] = _encoder_stats(frames, Z, config, seed)
    dvorak = DvorakLite().fit(frames.images[train_index], frames.pressure[train_index])
    clim = Climatology().fit(frames.basin[train_index], frames.pressure[train_index])
    intense = test & (frames.pressure < INTENSE_THRESHOLD)
    out["baselines"] = {
        "dvorak_mae": float(np.mean(np.abs(dvorak.predict(frames.images[test]) - frames.pressure[test]))),
        "dvorak_mae_intense": float(np.mean(np.abs(dvorak.predict(frames.images[intense])
                                                   - frames.pressure[intense]))),
        "climatology_mae": float(np.mean(np.abs(clim.predict(frames.basin[test]) - frames.pressure[test]))),
        "climatology_mae_intense": float(np.mean(np.abs(clim.predict(frames.basin[intense])
                                                        - frames.pressure[intense]))),
    }
    if config.generator_control:
        mark = time.perf_counter()
        world = SynthTC(config.n_trajectories, config.image_size, seed=seed,
                        saturate=False).generate()
        control = encode_frames(world, config, None, CONTROL_ENCODERS)
        out["control"] = {name: _encoder_stats(world, Z, config, seed)
                          for name, Z in control.items()}
        timings["control"] = time.perf_counter() - mark
    timings["total"] = time.perf_counter() - start
    out["timings"] = timings
    return out


def _per_seed(jobs, world: str | None = None) -> dict:
    """``{encoder: DataFrame indexed by seed}`` of one world's per-encoder statistics."""
    rows = {}
    for job in jobs:
        block = job.metrics if world is None else job.metrics.get(world)
        if block is None:
            return {}
        for enc in ENCODERS:
            if enc in block:
                rows.setdefault(enc, []).append({"seed": job.seed, **{
                    k: v for k, v in block[enc].items() if not isinstance(v, dict)}})
    return {enc: pd.DataFrame(r).set_index("seed") for enc, r in rows.items()}


def _mean_with_interval(values, note: str = "") -> Measurement:
    values = np.asarray(values, dtype=float)
    if values.size < 2:                  # one seed (quick runs): the point value, no interval
        return Measurement(float(values.mean()), note=note)
    low, high = paired_mean_interval(values, level=INTERVAL_LEVEL)
    return Measurement(float(values.mean()), interval=(low, high),
                       note=f"mean of {values.size} per-seed values, {INTERVAL_LEVEL:.0%} BCa"
                            + (f"; {note}" if note else ""))


def _wins(a, b) -> Measurement:
    """Fraction of seeds with ``a > b`` (exact 90 % interval: the one-sided sign test)."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    wins, losses = int((diff > 0).sum()), int((diff < 0).sum())
    low, high = win_fraction_interval(wins, losses)
    value = wins / (wins + losses) if wins + losses else float("nan")
    return Measurement(value, interval=(low, high),
                       note=f"{wins}/{wins + losses} seeds; paired gap "
                            f"{diff.mean():+.3f} (per seed " + ", ".join(f"{d:+.3f}" for d in diff) + ")")


def _paradox_measurements(by: dict, config: ParadoxConfig, suffix: str = "") -> dict:
    """The claim measurements of one world (``suffix`` "_nosat" for the generator control)."""
    m = {}
    if not by:
        return m
    controls = [by[e].xi_stat_intense for e in ("E4", "E5") if e in by]
    denom = pd.concat(controls, axis=1).max(axis=1)
    for enc in GENERIC:
        if enc not in by:
            continue
        d = by[enc]
        m[f"B1_{enc}_vs_controls{suffix}"] = _mean_with_interval(
            d.xi_stat_intense / denom, "intense median ξ_stat / max(" + ", ".join(
                e for e in ("E4", "E5") if e in by) + ")")
        m[f"B1_{enc}_ratio{suffix}"] = _mean_with_interval(d.xi_stat_ratio)
    e5 = by["E5"]
    m[f"B2_E5_stat_ratio{suffix}"] = float(e5.xi_stat_ratio.mean())
    m[f"B2_E5_dyn_ratio{suffix}"] = float(e5.xi_dyn_ratio.mean())
    for enc in ("E1", "E2"):
        d = by[enc]
        m[f"B3_{enc}_dyn_vs_E5{suffix}"] = _mean_with_interval(d.xi_dyn_intense / e5.xi_dyn_intense)
        pr_int, pr_mod = (("pr_std_intense", "pr_std_moderate") if config.geometry_standardize
                          else ("pr_intense", "pr_moderate"))
        m[f"B4_{enc}_pr_ratio{suffix}"] = Measurement(
            float((d[pr_int] / d[pr_mod]).max()),
            note="max over seeds, participation ratio of "
                 + ("standardized" if config.geometry_standardize else "raw") + " features")
        m[f"B5_{enc}_ood_ratio{suffix}"] = float(d.ood_ratio.mean())
        rise = d.psi_con_intense - d.psi_con_moderate
        e5_rise = e5.psi_con_intense - e5.psi_con_moderate
        m[f"B6_{enc}_rise_vs_E5{suffix}"] = _wins(rise, e5_rise)
    m[f"B6_E5_rise{suffix}"] = _mean_with_interval(e5.psi_con_intense - e5.psi_con_moderate)
    m[f"B6_E1_rise{suffix}"] = _mean_with_interval(
        by["E1"].psi_con_intense - by["E1"].psi_con_moderate)
    if "E4" in by:
        m[f"B2_E4_intense{suffix}"] = _mean_with_interval(by["E4"].xi_stat_intense)
        m[f"B2_E1_intense{suffix}"] = _mean_with_interval(by["E1"].xi_stat_intense)
        m[f"B6_old_E5_minus_E1_moderate{suffix}"] = Measurement(
            float(e5.psi_con_moderate.mean() - by["E1"].psi_con_moderate.mean()),
            note=f"E5 with ancillary input {config.e5_ancillary!r}")
    return m


def summarize_paradox(jobs, config: ParadoxConfig) -> Result:
    metrics = ["xi_stat_moderate", "xi_stat_intense", "xi_stat_ratio", "xi_dyn_moderate",
               "xi_dyn_intense", "xi_dyn_ratio", "pr_intense", "pr_moderate", "mae_id",
               "mae_ood", "ood_ratio", "psi_con_moderate", "psi_con_intense", "mae_intense",
               "pr_std_intense", "pr_std_moderate"]
    names = list(ENCODERS)
    rows = _records(jobs, names, metrics)
    table = summary_table(rows, "encoder", metrics)
    table.insert(1, "what", [ENCODERS[e] for e in table.encoder])
    tables = {"paradox": table}
    frame = pd.DataFrame(rows)
    mean = frame.groupby("encoder")[metrics].mean()
    measurements = _paradox_measurements(_per_seed(jobs), config)
    nosat = _per_seed(jobs, "control")
    if nosat:
        measurements.update(_paradox_measurements(nosat, config, "_nosat"))
        crow = [{"encoder": e, "seed": s, **{k: d.loc[s, k] for k in metrics}}
                for e, d in nosat.items() for s in d.index]
        tables["generator control (no saturation)"] = summary_table(crow, "encoder", metrics)
    else:
        for key in [k for k in measurements if not k.endswith("_nosat")]:
            measurements.setdefault(key + "_nosat", Measurement(
                float("nan"), incomplete="generator control not run (generator_control=False)"))
    base = pd.DataFrame([j.metrics["baselines"] for j in jobs]).mean().to_frame("mean over seeds")
    tables["baselines (MAE, hPa)"] = base.reset_index()
    notes = [f"ψ_con pairwise (moderate / intense), mean over seeds: " + ", ".join(
        f"{e} {mean.loc[e, 'psi_con_moderate']:.2f} / {mean.loc[e, 'psi_con_intense']:.2f}"
        for e in names) + f" (paper: ≈ 0.20 / ≈ 0.55); E5's ancillary input: "
        f"{config.e5_ancillary}."]
    timing = pd.DataFrame([j.metrics["timings"] for j in jobs]).mean()
    notes.append("per-seed job seconds (mean): " + ", ".join(f"{k} {v:.1f}" for k, v in timing.items()))
    figures = {"paradox_xi_dyn": _profile_figure(jobs, names, "Exp B: ξ_dyn per 5-hPa bin"),
               "paradox_xi_stat": _stat_figure(mean)}
    return Result(tables=tables, figures=figures, measurements=measurements, notes=notes)


def _stat_figure(mean: pd.DataFrame):
    fig, ax = subplots(figsize=(6.5, 3.4))
    x = np.arange(len(mean))
    ax.bar(x - 0.2, mean.xi_stat_moderate, 0.4, label="moderate (P_c ≥ 980)")
    ax.bar(x + 0.2, mean.xi_stat_intense, 0.4, label="intense (P_c < 980)")
    ax.set_xticks(x, [f"{e}\n{ENCODERS[e]}" for e in mean.index], fontsize=7)
    ax.set_ylabel("median ξ_stat")
    ax.set_title("Exp B: static fidelity per regime (mean over seeds)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# -- scaling --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScalingConfig:
    sizes: tuple = (2000, 4000, 8000, 16000, 32000)
    dim: int = 64
    repeats: int = 3


def probe_fit_seconds(n_frames: int, dim: int, repeats: int, seed: int) -> float:
    """Best-of-``repeats`` wall time of ``StructuralAlignmentProbe.fit`` on ``n_frames`` frames."""
    frames = SynthTC(max(2, n_frames // 20), seed=seed, render=False).generate()
    reps = int(np.ceil(n_frames / len(frames)))
    # tile trajectories (with fresh ids) until there are exactly n_frames frames
    index = np.tile(np.arange(len(frames)), reps)[:n_frames]
    offset = np.repeat(np.arange(reps), len(frames))[:n_frames] * (frames.trajectory_id.max() + 1)
    tiled = frames.subset(index)
    tiled.trajectory_id = tiled.trajectory_id + offset
    Z = protocol_latents(tiled, "isomorphic", dim, seed=seed)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        StructuralAlignmentProbe(random_state=seed).fit(Z, tiled)
        best = min(best, time.perf_counter() - start)
    return float(best)


@cpu_only("a CPU-seconds measurement")
def run_scaling(config: ScalingConfig, seed: int) -> dict:
    seconds = [probe_fit_seconds(n, config.dim, config.repeats, seed) for n in config.sizes]
    return {"sizes": list(config.sizes), "seconds": seconds}


def summarize_scaling(jobs, config: ScalingConfig) -> Result:
    sizes = jobs[0].metrics["sizes"]
    seconds = np.mean([j.metrics["seconds"] for j in jobs], axis=0)
    slope = loglog_slope(sizes, seconds)
    table = pd.DataFrame({"N": sizes, "fit seconds": seconds})
    return Result(tables={"probe fit time": table}, measurements={"fit_time_slope": slope},
                  notes=["Timings on a shared 2-core machine; best of repeats."])


EXPERIMENT = register(Experiment(
    slug="tcbench",  # title, claims and part descriptions: claims.toml
    parts=[
        Part(name="protocol", run=run_protocol, summarize=summarize_protocol,
             quick=ProtocolConfig(n_trajectories=150, min_count=200), full=ProtocolConfig(),
             seeds=SEEDS, quick_seeds=(42,)),
        Part(name="paradox", run=run_paradox, summarize=summarize_paradox,
             quick=ParadoxConfig(n_trajectories=80, ae_epochs=2, ae_train_frames=800,
                                 cnn_epochs=6, min_count=100),
             full=ParadoxConfig(), seeds=SEEDS, quick_seeds=(42,)),
        Part(name="scaling", run=run_scaling, summarize=summarize_scaling,
             quick=ScalingConfig(sizes=(1000, 2000, 4000, 8000), repeats=2),
             full=ScalingConfig(), seeds=(0,), quick_seeds=(0,)),
    ],
))
