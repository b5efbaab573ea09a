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

__all__ = ["IDWReconstructor", "RidgeReconstructor", "lagged", "mne_interpolate",
           "StateRidgeReconstructor", "InferredStateRidge", "band_log_power"]


class IDWReconstructor(BaseReconstructor):
    """Inverse-distance weighting: each masked contact is the ``1 / d^power`` weighted mean of
    all observed contacts (standardised units), optionally of its ``n_nearest`` only.

    References
    ----------
    Shepard, "A two-dimensional interpolation function for irregularly-spaced data", Proc. 23rd ACM
    National Conference, 1968. EpiTwin, a conditional spatial graph transformer for stereo-EEG
    reconstruction at unmonitored electrodes, ICML 2026 (title and authors not retrieved; see the
    package README): its interpolation baseline.

    Examples
    --------
    >>> from icml26.epitwin import make_synthetic_seeg
    >>> X, montage, _ = make_synthetic_seeg(duration_s=4, n_shafts=3)
    >>> IDWReconstructor(power=2.0).fit(X, montage).predict(X, montage, [1]).shape == X.shape
    True
    """

    def __init__(self, power: float = 2.0, n_nearest: int | None = None):
        self.power, self.n_nearest = power, n_nearest

    def _fit(self, patients, val):
        check_scalar_in(self.power, "power", low=0.0)

    def _reconstruct(self, Z, mask, montage):
        W = idw_weights(montage.pos, ~mask, power=self.power, n_nearest=self.n_nearest)
        # Only the masked rows are used, and only observed columns are non-zero: one float64
        # matmul on those blocks (the mixed float64/float32 einsum over all rows was 85 % of a
        # predict; equal to it to round-off, tested).
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
    # 27 % of a ridge predict); lags beyond the window clip to its edge as before.
    Zp = np.pad(Z, ((0, 0), (0, 0), (pad, pad)), mode="edge") if pad else Z
    out = np.empty((W, N, len(lags), T), dtype=Z.dtype)
    for k, lag in enumerate(lags):
        if abs(lag) <= pad:
            out[:, :, k] = Zp[:, :, pad + lag:pad + lag + T]
        else:
            out[:, :, k] = Z[:, :, np.clip(np.arange(T) + lag, 0, T - 1)]
    return out.reshape(W, N * len(lags), T)


def lagged_gram(Z: np.ndarray, lags) -> np.ndarray:
    """Gram matrix of the lagged contacts (:func:`lagged` layout) over every sample of the
    (W, N, T) windows, accumulated in float64 over chunks of 16 windows."""
    n_feat = Z.shape[1] * len(lags)
    G = np.zeros((n_feat, n_feat))
    for i in range(0, len(Z), 16):
        A = lagged(np.asarray(Z[i:i + 16], dtype=np.float64), lags).transpose(1, 0, 2).reshape(n_feat, -1)
        G += A @ A.T
    return G


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

    References
    ----------
    Hoerl & Kennard, "Ridge Regression: Biased Estimation for Nonorthogonal Problems",
    Technometrics 12, 1970. EpiTwin, a conditional spatial graph transformer for stereo-EEG
    reconstruction at unmonitored electrodes, ICML 2026 (title and authors not retrieved; see the
    package README): a linear baseline.

    Examples
    --------
    >>> from icml26.epitwin import make_synthetic_seeg
    >>> X, montage, _ = make_synthetic_seeg(duration_s=4, n_shafts=3)
    >>> ridge = RidgeReconstructor(lags=(-2, 0, 2), alpha=1e-3).fit(X, montage)
    >>> ridge.predict(X, montage, [1]).shape == X.shape
    True
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
        self.gram_ = lagged_gram(Z, self.lags)
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
        # fancy-indexed lags were 57 % of a predict; equal to round-off, tested).
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
    synthetic recording, ``make_synthetic_seeg(patient_seed=0, n_shafts=10)``, is one).
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


# -- state-gated ridge (the routing world's positive control and a learnable baseline) ---

def _state_gram(Z: np.ndarray, labels: np.ndarray, lags, n_states: int) -> list:
    """Gram matrices of the lagged contacts over the samples of each state.

    ``Z`` (W, N, T) standardised windows, ``labels`` (W, T) ints in [0, n_states)."""
    n_feat = Z.shape[1] * len(lags)
    grams = [np.zeros((n_feat, n_feat)) for _ in range(n_states)]
    counts = np.zeros(n_states, dtype=np.int64)
    for i in range(0, len(Z), 16):
        A = lagged(Z[i:i + 16].astype(np.float64), lags).transpose(1, 0, 2).reshape(n_feat, -1)
        lab = labels[i:i + 16].reshape(-1)
        for s in range(n_states):
            on = lab == s
            if on.any():
                As = A[:, on]
                grams[s] += As @ As.T
                counts[s] += int(on.sum())
    return grams, counts


def training_mask_distribution(shaft: np.ndarray, mask_shafts, target_shaft: int,
                               max_per_size: int = 200, seed: int = 0) -> list:
    """The masks :class:`~icml26.epitwin.estimator.EpiTwin` trains on that hide ``target_shaft``,
    with their probabilities given that it is hidden: ``[(hidden shafts, weight), ...]``.

    Training draws ``k`` uniformly in ``mask_shafts`` (capped at the number of shafts − 1),
    then ``k`` shafts uniformly; given one shaft is hidden, size ``k`` has probability
    proportional to ``k`` and the other ``k − 1`` shafts are uniform. Sizes with more than
    ``max_per_size`` combinations are represented by that many draws (seeded).
    """
    import itertools
    from math import comb

    ids = [int(c) for c in np.unique(shaft)]
    others = [c for c in ids if c != int(target_shaft)]
    lo, hi = int(mask_shafts[0]), min(int(mask_shafts[1]), len(ids) - 1)
    sizes = list(range(lo, hi + 1)) or [1]
    total = sum(sizes)
    rng = np.random.default_rng(seed)
    out = []
    for k in sizes:
        n = comb(len(others), k - 1)
        if n <= max_per_size:
            combos = list(itertools.combinations(others, k - 1))
        else:
            combos = [tuple(rng.choice(others, size=k - 1, replace=False)) for _ in range(max_per_size)]
        out += [((int(target_shaft), *map(int, c)), (k / total) / len(combos)) for c in combos]
    return out


def pooled_unmixing_map(gram: np.ndarray, n_samples: int, shaft: np.ndarray, lags, alpha: float,
                        mask_shafts=(1, 2), interp_logits: np.ndarray | None = None) -> np.ndarray:
    """The least-squares map of the signed unmixing read-out's class, pooled over the training
    masks (a **Resolution, not from the paper**: its start; see
    :class:`~icml26.epitwin.model.SignedUnmixing`).

    For each contact ``i``, one signed coefficient per contact and lag, shared by every
    training mask that hides ``i``'s shaft (hidden inputs are zero), minimising the expected
    squared error over :func:`training_mask_distribution` of the residual left by the
    interpolation ``sum_j softmax_j(interp_logits_ij) x_j`` over the observed contacts (none
    when ``interp_logits`` is None): ``[sum_m w_m P_m G P_m + alpha n I] M_i = sum_m w_m P_m
    (G e_i - G v_i^m)``, with ``G`` the Gram of the lagged contacts (:func:`lagged` layout) over
    ``n_samples`` samples. Returns ``M`` of shape (N, N, n_lags): ``M[i, j, l]`` multiplies
    contact ``j`` at ``lags[l]`` for target ``i``.
    """
    lags = [int(lag) for lag in lags]
    if 0 not in lags:
        raise ValueError(f"lags must contain 0, got {lags}")
    shaft = np.asarray(shaft)
    N, n_l, zero = len(shaft), len(lags), lags.index(0)
    if gram.shape != (N * n_l, N * n_l):
        raise ValueError(f"gram must be ({N * n_l}, {N * n_l}) for {N} contacts x {n_l} lags, "
                         f"got {gram.shape}")
    feat_shaft = np.repeat(shaft, n_l)
    out = np.zeros((N, N, n_l))
    for c in np.unique(shaft):
        masks = training_mask_distribution(shaft, mask_shafts, int(c))
        seen = feat_shaft != c                  # the own shaft's inputs are always hidden: no coefficient
        A = alpha * n_samples * np.eye(int(seen.sum()))
        keep = []
        for hidden, w in masks:
            P = ~np.isin(feat_shaft, hidden)
            A += w * (gram * (P[:, None] & P[None, :]))[np.ix_(seen, seen)]
            keep.append((hidden, w, P))
        for i in np.flatnonzero(shaft == c):
            b = np.zeros(N * n_l)
            for hidden, w, P in keep:
                target = gram[:, i * n_l + zero].copy()
                if interp_logits is not None:
                    v = _interp_weights(interp_logits[i], ~np.isin(shaft, hidden))
                    target -= gram[:, zero::n_l] @ v
                b += w * P * target
            coef = np.zeros(N * n_l)
            coef[seen] = np.linalg.solve(A, b[seen])
            out[i] = coef.reshape(N, n_l)
    return out


def _interp_weights(interp_logits: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Weights of the interpolation ``softmax_j(interp_logits_ij)`` over the ``observed``
    contacts (a bool mask broadcast against the logits' rows), zero elsewhere."""
    logit = np.where(observed, interp_logits, -np.inf)
    v = np.exp(logit - logit.max(-1, keepdims=True))
    return v / v.sum(-1, keepdims=True)


def _patch_correlations(Z: np.ndarray, patch: int) -> np.ndarray:
    """Upper triangle of the zero-lag correlation matrix of the contacts in every patch of the
    (W, N, T) windows -> (W * T // patch, N (N - 1) / 2)."""
    W, N, T = Z.shape
    P = Z.reshape(W, N, T // patch, patch).transpose(0, 2, 1, 3).reshape(-1, N, patch)
    P = P - P.mean(-1, keepdims=True)
    P = P / np.maximum(np.linalg.norm(P, axis=-1, keepdims=True), 1e-12)
    iu = np.triu_indices(N, 1)
    return np.concatenate([np.matmul(P[i:i + 512], P[i:i + 512].transpose(0, 2, 1))[:, iu[0], iu[1]]
                           for i in range(0, len(P), 512)])


def mixture_unmixing_maps(Z: np.ndarray, shaft: np.ndarray, lags, alpha: float, n_regimes: int,
                          patch: int, mask_shafts=(1, 2), interp_logits: np.ndarray | None = None,
                          max_iter: int = 20, tol: float = 1e-3, seed: int = 0) -> dict:
    """``n_regimes`` maps of the signed unmixing read-out's class, fitted as a **mixture** by
    hard EM over patches (a **Resolution, not from the paper**: the ``"mixture"`` start of
    :class:`~icml26.epitwin.estimator.EpiTwin`).

    Every regime of :class:`~icml26.epitwin.model.SignedUnmixing` starting at the same pooled
    map (:func:`pooled_unmixing_map`) is a saddle: the regimes' outputs are equal, so the gate
    gets no gradient, and the regimes get the same gradient up to the gate's small random
    differences. This start breaks the symmetry with the data instead. Each patch of ``patch``
    samples of the (W, N, T) training windows (the gate's granularity) is given one regime:

    1. initial regimes by k-means (``n_init=4``, ``random_state=seed``) on each patch's
       zero-lag correlation matrix of the contacts (clustering windows by their spatial
       covariance, as sEEG/EEG "state" analyses do);
    2. M-step: each regime's map is :func:`pooled_unmixing_map` of the Gram over its patches
       (the training-mask distribution of ``mask_shafts``, the residual of ``interp_logits``);
       a regime left with no patch takes the map pooled over all;
    3. E-step: each patch moves to the regime whose map has the least squared error on it,
       scored under the leave-one-shaft-out masks (every contact predicted with its own shaft
       hidden; the pooled maps give each contact no coefficient on its own shaft, so one pass
       scores every shaft);

    until no patch moves, the objective falls by less than ``tol`` (relative) in a round, or
    ``max_iter`` rounds. The hidden contacts' values are used only here,
    on the training windows; at test time the model's gate has to infer the regime from the
    observed contacts.

    Returns
    -------
    dict
        ``maps`` (K, N, N, n_lags) as :func:`pooled_unmixing_map`'s, ``labels`` (W, T // patch),
        ``objective`` (the summed squared error after every E-step, non-increasing up to the
        M-step's ridge term) and ``counts`` (patches per regime).
    """
    from sklearn.cluster import KMeans

    Z = np.asarray(Z, dtype=np.float64)
    shaft = np.asarray(shaft)
    if Z.ndim != 3 or Z.shape[1] != len(shaft):
        raise ValueError(f"Z must be (W, {len(shaft)}, T), got {Z.shape}")
    if int(n_regimes) < 1:
        raise ValueError(f"n_regimes must be >= 1, got {n_regimes}")
    W, N, T = Z.shape
    if int(patch) < 1 or T % int(patch):
        raise ValueError(f"patch must divide the window length T={T}, got {patch}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    check_scalar_in(tol, "tol", low=0.0)
    K, L, n_l = int(n_regimes), T // int(patch), len(lags)
    feats = _patch_correlations(Z, int(patch))
    if K == 1 or len(feats) < K:
        labels = np.zeros(len(feats), dtype=np.int64)
    else:
        labels = KMeans(K, n_init=4, random_state=seed).fit_predict(feats).astype(np.int64)
    # the leave-one-shaft-out interpolation: each contact from the other shafts' contacts
    target = Z if interp_logits is None else Z - np.matmul(
        _interp_weights(np.asarray(interp_logits, dtype=np.float64), shaft[:, None] != shaft[None, :]), Z)
    pooled = None
    objective = []
    for _ in range(int(max_iter)):
        grams, counts = _state_gram(Z, np.repeat(labels.reshape(W, L), patch, axis=1), lags, K)
        maps = []
        for G, n in zip(grams, counts):
            if n == 0:
                if pooled is None:
                    pooled = pooled_unmixing_map(sum(grams), W * T, shaft, lags, alpha,
                                                 mask_shafts=mask_shafts, interp_logits=interp_logits)
                maps.append(pooled)
            else:
                maps.append(pooled_unmixing_map(G, int(n), shaft, lags, alpha, mask_shafts=mask_shafts,
                                                interp_logits=interp_logits))
        flat = np.concatenate([M.reshape(N, N * n_l) for M in maps])      # (K N, N n_l)
        err = np.empty((W, L, K))
        for i in range(0, W, 16):
            pred = np.matmul(flat, lagged(Z[i:i + 16], lags))              # (w, K N, T), BLAS
            r = target[i:i + 16, None] - pred.reshape(len(pred), K, N, T)
            err[i:i + 16] = (r ** 2).sum(2).reshape(len(pred), K, L, patch).sum(-1).transpose(0, 2, 1)
        objective.append(float(err.reshape(W * L, K).min(1).sum()))
        new = err.reshape(W * L, K).argmin(1)
        done = len(objective) == int(max_iter) or (
            len(objective) > 1 and objective[-2] - objective[-1] < tol * objective[-2])
        if np.array_equal(new, labels) or done:
            break                      # the maps are those of ``labels``
        labels = new
    return {"maps": np.stack(maps), "labels": labels.reshape(W, L), "objective": objective,
            "counts": np.bincount(labels, minlength=K)}


class StateRidgeReconstructor:
    """Ridge with lags fitted separately for each network state (a Resolution).

    Given per-sample state labels, each state gets its own ridge map (the Gram of the lagged
    contacts over that state's samples, exact solve per mask as :class:`RidgeReconstructor`);
    ``predict`` applies, sample by sample, the map of the given label. Given the **true** state
    it is the routing world's positive control (*state oracle*: the best a model that knew the
    state could do with a linear map per state); with ``n_states=1`` it is global ridge computed
    by the same code. Works on standardised windows (the protocols z-score the data first).

    With ``mask_shafts=(lo, hi)`` each state's map is instead the **signed unmixing read-out's
    class** (a Resolution): per target contact one signed coefficient per contact and lag,
    shared by every training mask of :func:`training_mask_distribution` (``lo``-``hi`` hidden
    shafts), fitted by :func:`pooled_unmixing_map`. Given the true state it is the best that
    EpiTwin's read-out, trained on those masks, could reach (the *class limit* of W_route's
    representation control); with ``mask_shafts=(1, 1)`` it equals the oracle under
    leave-one-shaft-out.

    References
    ----------
    EpiTwin, a conditional spatial graph transformer for stereo-EEG reconstruction at unmonitored
    electrodes, ICML 2026 (title and authors not retrieved; see the package README). An oracle
    (true-state) positive control of our own, not from the paper.

    Examples
    --------
    >>> from icml26.epitwin import make_synthetic_seeg, windows
    >>> X, montage, info = make_synthetic_seeg(duration_s=20, n_shafts=3, world="routing")
    >>> Z, S = windows(X, 512, 512), windows(info["state"][None].astype(float), 512, 512)[:, 0]
    >>> oracle = StateRidgeReconstructor().fit(Z, montage, S.astype(int))
    >>> oracle.predict(Z, montage, [1], S.astype(int)).shape == Z.shape
    True
    """

    def __init__(self, lags=(-4, -2, 0, 2, 4), alpha: float = 1e-3, n_states: int = 2,
                 mask_shafts=None):
        self.lags, self.alpha, self.n_states = lags, alpha, n_states
        self.mask_shafts = mask_shafts

    def _labels(self, labels, Z):
        if labels is None:
            if self.n_states != 1:
                raise ValueError("labels (W, T) are required when n_states > 1")
            return np.zeros((Z.shape[0], Z.shape[2]), dtype=np.int64)
        labels = np.asarray(labels)
        if labels.size == 0:
            raise ValueError("labels must not be empty (no windows)")
        if labels.ndim == 1 and labels.shape[0] == Z.shape[0]:  # one label per window
            labels = np.repeat(labels[:, None], Z.shape[2], axis=1)
        if labels.shape != (Z.shape[0], Z.shape[2]):
            raise ValueError(f"labels must have shape (W, T) = {(Z.shape[0], Z.shape[2])} or (W,), "
                             f"got {labels.shape}")
        if labels.min() < 0 or labels.max() >= self.n_states:
            raise ValueError(f"labels must lie in [0, {self.n_states - 1}]")
        return labels.astype(np.int64)

    def fit(self, Z, montage, labels=None):
        """``Z`` (W, N, T) standardised training windows, ``labels`` (W, T) or (W,) states."""
        Z = np.asarray(Z)
        if Z.ndim != 3 or Z.shape[1] != montage.n_contacts:
            raise ValueError(f"Z must be (W, {montage.n_contacts}, T), got {Z.shape}")
        if 0 not in tuple(self.lags):
            raise ValueError(f"lags must contain 0, got {self.lags}")
        if self.mask_shafts is not None:
            lo, hi = (int(v) for v in self.mask_shafts)
            if not 1 <= lo <= hi:
                raise ValueError(f"mask_shafts must be (lo, hi) with 1 <= lo <= hi, got {self.mask_shafts}")
        labels = self._labels(labels, Z)
        grams, counts = _state_gram(Z, labels, self.lags, self.n_states)
        self.counts_ = counts
        if self.mask_shafts is not None:
            self.maps_ = [pooled_unmixing_map(G, max(int(n), 1), montage.shaft, self.lags, self.alpha,
                                              mask_shafts=(lo, hi)) for G, n in zip(grams, counts)]
            self.key_ = RidgeReconstructor._key(montage)
            return self
        self.ridges_ = []
        for G, n in zip(grams, counts):
            r = RidgeReconstructor(lags=self.lags, alpha=self.alpha)
            r.gram_, r.n_samples_, r.key_, r._solved = G, max(int(n), 1), r._key(montage), {}
            self.ridges_.append(r)
        self.counts_ = counts
        return self

    def predict(self, Z, montage, masked_shafts, labels=None) -> np.ndarray:
        """``Z`` with the contacts of ``masked_shafts`` replaced, sample by sample, by the
        prediction of the map of that sample's label."""
        Z = np.asarray(Z)
        labels = self._labels(labels, Z)
        mask = montage.mask_for(masked_shafts)
        out = np.array(Z, dtype=np.float64, copy=True)
        out[:, mask] = 0.0
        if self.mask_shafts is not None:
            if RidgeReconstructor._key(montage) != self.key_:
                raise ValueError("StateRidgeReconstructor can only reconstruct the montage it was fitted on")
            A = lagged(out, self.lags)                          # hidden inputs are zero
            for s, M in enumerate(self.maps_):
                on = labels == s
                if on.any():
                    Y = np.einsum("if,wft->wit", M[mask].reshape(int(mask.sum()), -1), A)
                    out[:, mask] += Y * on[:, None, :]
            return out.astype(Z.dtype)
        for s, r in enumerate(self.ridges_):
            if not (labels == s).any():
                continue
            Y = r._reconstruct(Z, mask, montage)[:, mask]
            out[:, mask] += Y * (labels[:, None, :] == s)
        return out.astype(Z.dtype)


def band_log_power(Z: np.ndarray, fs: float, bands=((1, 4), (4, 8), (8, 13), (13, 30), (30, 80))):
    """Log mean power of each contact in each band per window: (W, N, n_bands)."""
    f = np.fft.rfftfreq(Z.shape[-1], 1.0 / fs)
    P = np.abs(np.fft.rfft(Z.astype(np.float64), axis=-1)) ** 2
    return np.stack([np.log(P[..., (f >= lo) & (f < hi)].mean(-1) + 1e-12) for lo, hi in bands], -1)


class InferredStateRidge:
    """Ridge gated by a state inferred from the contacts' own band power (a Resolution;
    the routing world's non-oracle, non-linear baseline: no true state is used anywhere).

    Training (every contact recorded): the windows' log band powers of all contacts are
    standardised, their first principal component is split by 2-means into two clusters, and a
    :class:`StateRidgeReconstructor` is fitted with the cluster of each window as its label.
    Prediction of a masked shaft: the window's cluster is inferred from the *observed*
    contacts' band powers only (logistic regression fitted on the training windows' observed
    contacts to the training clusters), then that cluster's ridge map is applied.

    References
    ----------
    EpiTwin, a conditional spatial graph transformer for stereo-EEG reconstruction at unmonitored
    electrodes, ICML 2026 (title and authors not retrieved; see the package README). A non-linear
    baseline of our own (a Resolution, not from the paper).

    Examples
    --------
    >>> from icml26.epitwin import make_synthetic_seeg, windows
    >>> X, montage, _ = make_synthetic_seeg(duration_s=8, n_shafts=3, world="routing")
    >>> Z = windows(X, 512, 512)
    >>> InferredStateRidge().fit(Z, montage).predict(Z, montage, [1]).shape == Z.shape
    True
    """

    def __init__(self, lags=(-4, -2, 0, 2, 4), alpha: float = 1e-3, fs: float = 256.0,
                 C: float = 1.0):
        self.lags, self.alpha, self.fs, self.C = lags, alpha, fs, C

    def fit(self, Z, montage):
        Z = np.asarray(Z)
        feats = band_log_power(Z, self.fs).reshape(len(Z), -1)
        self.mu_, self.sd_ = feats.mean(0), feats.std(0) + 1e-9
        F = (feats - self.mu_) / self.sd_
        _, _, vt = np.linalg.svd(F - F.mean(0), full_matrices=False)
        pc = F @ vt[0]
        lo, hi = np.quantile(pc, 0.25), np.quantile(pc, 0.75)  # 2-means on the 1-D projection
        for _ in range(100):
            lab = (np.abs(pc - hi) < np.abs(pc - lo)).astype(np.int64)
            if lab.min() == lab.max():
                break
            new_lo, new_hi = pc[lab == 0].mean(), pc[lab == 1].mean()
            if np.isclose(new_lo, lo) and np.isclose(new_hi, hi):
                break
            lo, hi = new_lo, new_hi
        self.train_clusters_ = lab
        self.feats_ = F.reshape(len(Z), montage.n_contacts, -1)
        self.ridge_ = StateRidgeReconstructor(self.lags, self.alpha, n_states=2).fit(Z, montage, lab)
        self._classifiers = {}
        return self

    def infer(self, Z, montage, masked_shafts) -> np.ndarray:
        """The cluster (0/1) of each window of ``Z`` from its observed contacts only."""
        from sklearn.linear_model import LogisticRegression

        mask = montage.mask_for(masked_shafts)
        key = mask.tobytes()
        if key not in self._classifiers:
            y = self.train_clusters_
            if y.min() == y.max():
                self._classifiers[key] = int(y[0])
            else:
                clf = LogisticRegression(C=self.C, max_iter=2000)
                self._classifiers[key] = clf.fit(self.feats_[:, ~mask].reshape(len(y), -1), y)
        clf = self._classifiers[key]
        if isinstance(clf, int):
            return np.full(len(Z), clf, dtype=np.int64)
        F = (band_log_power(np.asarray(Z), self.fs).reshape(len(Z), -1) - self.mu_) / self.sd_
        F = F.reshape(len(Z), montage.n_contacts, -1)[:, ~mask].reshape(len(Z), -1)
        return clf.predict(F).astype(np.int64)

    def predict(self, Z, montage, masked_shafts) -> np.ndarray:
        return self.ridge_.predict(Z, montage, masked_shafts, self.infer(Z, montage, masked_shafts))
