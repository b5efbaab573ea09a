"""Baselines for shaft reconstruction: inverse-distance weighting, ridge regression with lags,
and MNE's own ``interpolate_bads`` for sEEG contacts (the LaBraM-style transformer lives in
:mod:`icml26.epitwin.estimator`).

Examples
--------
>>> from icml26.epitwin import make_synthetic_seeg
>>> X, montage, _ = make_synthetic_seeg(duration_s=8, n_shafts=3)
>>> IDWReconstructor().fit(X, montage).predict(X, montage, [1]).shape == X.shape
True
"""

from __future__ import annotations

import numpy as np

from icml26.core.validation import check_scalar_in

from .estimator import BaseReconstructor
from .spatial import idw_weights

__all__ = ["IDWReconstructor", "RidgeReconstructor", "lagged", "mne_interpolate"]


class IDWReconstructor(BaseReconstructor):
    """Inverse-distance weighting: each masked contact is the ``1 / d^power`` weighted mean of
    all observed contacts (standardised units), optionally of its ``n_nearest`` only."""

    def __init__(self, power: float = 2.0, n_nearest: int | None = None):
        self.power, self.n_nearest = power, n_nearest

    def _fit(self, patients, val):
        check_scalar_in(self.power, "power", low=0.0)

    def _reconstruct(self, Z, mask, montage):
        W = idw_weights(montage.pos, ~mask, power=self.power, n_nearest=self.n_nearest)
        # Only the masked rows are used, and only observed columns are non-zero: one float64
        # matmul on those blocks (the mixed float64/float32 einsum over all rows was 85 % of a
        # predict, #42; equal to it to round-off, tested).
        obs = ~mask
        out = np.zeros(Z.shape)
        out[:, mask] = np.matmul(W[np.ix_(mask, obs)], Z[:, obs].astype(np.float64))
        return out


def lagged(Z: np.ndarray, lags) -> np.ndarray:
    """Lagged copies ``x(t + lag)`` of (W, N, T) windows -> (W, N * len(lags), T), edge-padded
    within each window; feature ``n * len(lags) + k`` is contact ``n`` at ``lags[k]``."""
    W, N, T = Z.shape
    lags = [int(lag) for lag in lags]
    pad = min(max((abs(lag) for lag in lags), default=0), T - 1) if T else 0
    # Edge-pad once, then each lag is a slice (fancy indexing with clipped indices per lag was
    # 27 % of a ridge predict, #42); lags beyond the window clip to its edge as before.
    Zp = np.pad(Z, ((0, 0), (0, 0), (pad, pad)), mode="edge") if pad else Z
    out = np.empty((W, N, len(lags), T), dtype=Z.dtype)
    for k, lag in enumerate(lags):
        if abs(lag) <= pad:
            out[:, :, k] = Zp[:, :, pad + lag:pad + lag + T]
        else:
            out[:, :, k] = Z[:, :, np.clip(np.arange(T) + lag, 0, T - 1)]
    return out.reshape(W, N * len(lags), T)


class RidgeReconstructor(BaseReconstructor):
    """Ridge regression from the observed contacts (each at the given ``lags``) to the masked
    ones, fitted on the training windows of one patient (a linear map cannot transfer across
    montages). The Gram matrix of all lagged contacts is accumulated once in ``fit``; each mask
    then solves ``(G_oo + alpha I) B = G_om`` on its blocks (no intercept: data standardised).

    Parameters
    ----------
    lags : sequence of int
        Sample lags (default ``(-4, -2, 0, 2, 4)``).
    alpha : float
        Ridge penalty, in units of the per-sample Gram (``alpha * n_samples`` is added).
    """

    def __init__(self, lags=(-4, -2, 0, 2, 4), alpha: float = 1e-3):
        self.lags, self.alpha = lags, alpha

    def _fit(self, patients, val):
        check_scalar_in(self.alpha, "alpha", low=0.0)
        if len(patients) != 1:
            raise ValueError("RidgeReconstructor fits one patient (one montage): a linear map "
                             "between contacts does not transfer across montages")
        if 0 not in tuple(self.lags):
            raise ValueError(f"lags must contain 0, got {self.lags}")
        Z = patients[0]["Z"]
        n_feat = Z.shape[1] * len(self.lags)
        G = np.zeros((n_feat, n_feat))
        for i in range(0, len(Z), 16):
            A = lagged(Z[i:i + 16].astype(np.float64), self.lags).transpose(1, 0, 2).reshape(n_feat, -1)
            G += A @ A.T
        self.gram_ = G
        self.n_samples_ = Z.shape[0] * Z.shape[2]
        self.key_ = patients[0]["key"]
        self._solved = {}

    def coef_for(self, mask: np.ndarray) -> np.ndarray:
        """Coefficients (n_observed * n_lags, n_masked) for this mask."""
        key = mask.tobytes()
        if key not in self._solved:
            n_l = len(self.lags)
            zero = list(self.lags).index(0)
            obs = np.flatnonzero(~mask)
            feat = (obs[:, None] * n_l + np.arange(n_l)[None]).ravel()
            target = np.flatnonzero(mask) * n_l + zero
            A = self.gram_[np.ix_(feat, feat)] + self.alpha * self.n_samples_ * np.eye(len(feat))
            self._solved[key] = np.linalg.solve(A, self.gram_[np.ix_(feat, target)])
        return self._solved[key]

    def _reconstruct(self, Z, mask, montage):
        if self._key(montage) != self.key_:
            raise ValueError("RidgeReconstructor can only reconstruct the montage it was fitted on")
        B = self.coef_for(mask)                        # (n_observed * n_lags, n_masked)
        # Σ_lag B_lagᵀ · shift_lag(Z_obs) = Σ_lag shift_lag(B_lagᵀ · Z_obs): one float64 matmul
        # of all lags' coefficients with the observed contacts laid out (contact, window·time),
        # then each lag's edge-clamped shift of its few output rows — the lagged features
        # (n_observed * n_lags rows) are never formed (the mixed-dtype einsum and the
        # fancy-indexed lags were 57 % of a predict, #42; equal to round-off, tested).
        lags = [int(lag) for lag in self.lags]
        n_l, (n_w, _, T) = len(lags), Z.shape
        n_o, n_m = int((~mask).sum()), int(mask.sum())
        Zo = np.ascontiguousarray(Z[:, ~mask].transpose(1, 0, 2), dtype=np.float64)  # (o, W, T)
        coef = B.reshape(n_o, n_l, n_m).transpose(1, 2, 0).reshape(n_l * n_m, n_o)  # lag-major
        Y = (coef @ Zo.reshape(n_o, n_w * T)).reshape(n_l, n_m, n_w, T)
        acc = np.zeros((n_m, n_w, T))
        t = np.arange(T)
        for k, lag in enumerate(lags):
            acc += Y[k] if lag == 0 else Y[k][:, :, np.clip(t + lag, 0, T - 1)]
        acc = acc.transpose(1, 0, 2)
        out = np.zeros(Z.shape)
        out[:, mask] = acc
        return out


def mne_interpolate(X, montage, bad_contacts, fs: float = 256.0, method: str | None = None,
                    per_shaft: bool = True):
    """Reconstruct ``bad_contacts`` (indices) with MNE's ``Raw.interpolate_bads``.

    For ``seeg`` channels MNE 1.13 fits a 1-D spline along each shaft it detects from the
    contact positions and needs at least 4 good contacts on the same shaft: it raises
    ``RuntimeError`` when a whole shaft (series-level masking) is bad.

    MNE's shaft detection starts from each contact's nearest neighbour and runs over every
    contact of the recording, so where two shafts pass within a contact spacing of each other
    it fails with an ``IndexError`` for *every* bad contact, wherever it is (the default
    synthetic recording, ``make_synthetic_seeg(patient_seed=0, n_shafts=10)``, is one, #42).
    With ``per_shaft=True`` (default) MNE is given the contacts of one shaft of ``montage`` at a
    time (the shaft of the bad contacts): its spline uses only same-shaft contacts anyway, so the
    result is the same where its detection works on the whole recording (tested) and defined
    where it does not. ``per_shaft=False`` passes the whole recording (MNE's own detection; its
    failure is re-raised as ``RuntimeError``). Returns the reconstructed (N, T) array.
    """
    from .data import to_raw

    X = np.asarray(X, float)
    bad = np.unique(np.atleast_1d(np.asarray(bad_contacts, dtype=int)))
    if bad.size and (bad.min() < 0 or bad.max() >= montage.n_contacts):
        raise ValueError(f"bad_contacts must be contact indices in [0, {montage.n_contacts - 1}]")
    kwargs = {} if method is None else {"method": method}
    groups = ([np.flatnonzero(montage.shaft == s) for s in np.unique(montage.shaft[bad])]
              if per_shaft else [np.arange(montage.n_contacts)])
    out = X.copy()
    for contacts in groups:
        raw = to_raw(X[contacts], montage.subset(contacts), fs)
        raw.info["bads"] = [montage.names[i] for i in contacts if i in set(bad.tolist())]
        try:
            raw.interpolate_bads(reset_bads=True, verbose="error", **kwargs)
        except IndexError as exc:  # MNE's shaft detection (nearest contact on another shaft)
            raise RuntimeError("MNE could not detect the sEEG shaft of the bad contacts from their "
                               f"positions (IndexError in _find_seeg_electrode_shaft: {exc})") from exc
        out[contacts] = raw.get_data() / 1e-4
    return out
