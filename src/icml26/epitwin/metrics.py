"""Reconstruction metrics on masked contacts: RMSE, MAE, Pearson r, log-spectral distance (LSD),
band power ratios and the over-smoothing index (SOI).

Definitions (EpiTwin reports RMSE and "spectral over-smoothing"; the exact spectral metrics are
our Resolution): Welch spectra (Hann, ``nperseg = 256``, 50 % overlap) of every masked series;
``LSD = sqrt(mean_{1 <= f <= 100 Hz} (10 log10 P_hat(f) - 10 log10 P(f))^2)`` per series, averaged
over series; band power ratios ``BPR_b = sum P_hat_b / sum P_b`` pooled over series;
``SOI = 1 - P_hat_{30-100} / P_{30-100}`` (> 0 means the reconstruction lost high-frequency power).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> y = rng.standard_normal((4, 512))
>>> m = reconstruction_metrics(y, y, fs=256)
>>> round(m["rmse"], 6), round(m["lsd"], 6), round(m["soi"], 6)
(0.0, 0.0, 0.0)
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.signal import welch

from icml26.core.validation import check_finite_array, check_scalar_in

__all__ = ["reconstruction_metrics", "BANDS", "FLAT_POWER_REL"]

BANDS = {"delta": (1, 4), "theta": (4, 8), "alpha": (8, 13), "beta": (13, 30), "gamma": (30, 80),
         "high_gamma": (80, 120)}

#: A band holds "no power" of the truth when its power (variance in the band) is below this
#: fraction of the truth's mean square; its ratios are then NaN with a RuntimeWarning.
FLAT_POWER_REL = 1e-12


def _band(freqs, lo, hi):
    return (freqs >= lo) & (freqs < hi)


def reconstruction_metrics(y_true, y_pred, fs: float, nperseg: int = 256) -> dict:
    """Metrics of reconstructed series against the truth.

    Parameters
    ----------
    y_true, y_pred : array of shape (n_series, T) or (..., T)
        True and reconstructed masked-contact series (leading axes are flattened).
    fs : float
        Sampling rate (Hz).
    nperseg : int
        Welch segment length (shortened to ``T`` when the series are shorter).

    Returns
    -------
    dict
        ``rmse, mae, pearson, lsd, soi`` and ``bpr_<band>`` for the bands of :data:`BANDS`
        (NaN for a band above Nyquist). ``soi`` and a ``bpr_<band>`` are NaN, with one
        ``RuntimeWarning`` naming them, when ``y_true`` has no power in that band (below
        :data:`FLAT_POWER_REL` of its mean square, e.g. constant series): a ratio to nothing is
        undefined; ``rmse``, ``mae`` and ``lsd`` stay defined.
    """
    y_true = check_finite_array(y_true, "y_true", dtype=np.float64)
    y_pred = check_finite_array(y_pred, "y_pred", dtype=np.float64)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred must have the same shape, got {y_true.shape} and "
                         f"{y_pred.shape}")
    fs = check_scalar_in(fs, "fs", low=0.0, low_inclusive=False)
    T = y_true.shape[-1]
    a, b = y_true.reshape(-1, T), y_pred.reshape(-1, T)
    err = b - a
    out = {"rmse": float(np.sqrt(np.mean(err ** 2))), "mae": float(np.mean(np.abs(err)))}
    ac, bc = a - a.mean(1, keepdims=True), b - b.mean(1, keepdims=True)
    den = np.sqrt((ac ** 2).sum(1) * (bc ** 2).sum(1))
    r = np.where(den > 1e-12, (ac * bc).sum(1) / np.where(den > 1e-12, den, 1.0), 0.0)
    out["pearson"] = float(r.mean())
    seg = min(int(nperseg), T)
    freqs, P = welch(a, fs=fs, window="hann", nperseg=seg, noverlap=seg // 2, axis=-1)
    _, Ph = welch(b, fs=fs, window="hann", nperseg=seg, noverlap=seg // 2, axis=-1)
    tiny = 1e-12
    band = _band(freqs, 1.0, 100.0 + 1e-9)
    lsd = np.sqrt(np.mean((10 * np.log10(Ph[:, band] + tiny) - 10 * np.log10(P[:, band] + tiny)) ** 2,
                          axis=1))
    out["lsd"] = float(lsd.mean())
    # A ratio to the truth's power in a band is undefined when the truth has none there (a
    # constant or flat series): NaN with one RuntimeWarning naming the bands, never a silent
    # NaN/inf. "No power" is below FLAT_POWER_REL of the truth's mean square.
    df = float(freqs[1] - freqs[0]) if len(freqs) > 1 else float(fs)
    floor = FLAT_POWER_REL * float(np.mean(a ** 2)) * a.shape[0]  # pooled over series
    undefined = []

    def ratio(sel, key):
        p = float(P[:, sel].sum())
        if p * df <= floor or p <= 0.0:
            undefined.append(key)
            return float("nan")
        return float(Ph[:, sel].sum()) / p

    hi = _band(freqs, 30.0, 100.0 + 1e-9)
    out["soi"] = 1.0 - ratio(hi, "soi") if hi.any() else float("nan")
    for name, (lo, up) in BANDS.items():
        sel = _band(freqs, lo, up)
        out[f"bpr_{name}"] = ratio(sel, f"bpr_{name}") if sel.any() else float("nan")
    if undefined:
        warnings.warn(f"y_true has no power in the band(s) of {', '.join(undefined)} (constant or flat "
                      "series); these ratios are NaN", RuntimeWarning, stacklevel=2)
    return out
