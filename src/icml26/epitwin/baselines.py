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
        return np.einsum("ij,wjt->wit", W, Z)


def lagged(Z: np.ndarray, lags) -> np.ndarray:
    """Lagged copies ``x(t + lag)`` of (W, N, T) windows -> (W, N * len(lags), T), edge-padded
    within each window; feature ``n * len(lags) + k`` is contact ``n`` at ``lags[k]``."""
    W, N, T = Z.shape
    t = np.arange(T)
    out = np.empty((W, N, len(lags), T), dtype=Z.dtype)
    for k, lag in enumerate(lags):
        out[:, :, k] = Z[:, :, np.clip(t + int(lag), 0, T - 1)]
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
        B = self.coef_for(mask)
        n_l = len(self.lags)
        obs = np.flatnonzero(~mask)
        feats = lagged(Z.astype(np.float64), self.lags)
        sel = (obs[:, None] * n_l + np.arange(n_l)[None]).ravel()
        out = np.zeros(Z.shape)
        out[:, mask] = np.einsum("fm,wft->wmt", B, feats[:, sel])
        return out


def mne_interpolate(X, montage, bad_contacts, fs: float = 256.0, method: str | None = None):
    """Reconstruct ``bad_contacts`` (indices) with MNE's ``Raw.interpolate_bads``.

    For ``seeg`` channels MNE 1.13 fits a 1-D spline along each shaft it detects from the
    contact positions and needs at least 4 good contacts on the same shaft: it raises
    ``RuntimeError`` when a whole shaft (series-level masking) is bad. Its shaft detection starts
    from each contact's nearest neighbour, so where two shafts pass within a contact spacing it
    can fail (re-raised here as ``RuntimeError``). Returns the reconstructed (N, T) array.
    """
    from .data import to_raw

    raw = to_raw(np.asarray(X, float), montage, fs)
    raw.info["bads"] = [montage.names[i] for i in np.atleast_1d(bad_contacts)]
    kwargs = {} if method is None else {"method": method}
    try:
        raw.interpolate_bads(reset_bads=True, verbose="error", **kwargs)
    except IndexError as exc:  # MNE's shaft detection (nearest contact on another shaft)
        raise RuntimeError("MNE could not detect the sEEG shaft of the bad contacts from their "
                           f"positions (IndexError in _find_seeg_electrode_shaft: {exc})") from exc
    return raw.get_data() / 1e-4
