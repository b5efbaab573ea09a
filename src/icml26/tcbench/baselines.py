"""Baselines of the paper that no maintained library provides: Dvorak-lite and climatology.

* :class:`DvorakLite` — a rule-based intensity estimate in the spirit of the Dvorak
  enhanced-IR technique: a T-number from the cloud-top temperature of the ring around the
  centre plus an eye adjustment, mapped to pressure and wind by the Dvorak tables (App. E).
* :class:`Climatology` — per-basin (or per-month) mean of the target from the train split.

References
----------
Yao et al., *The Perception–Physics Paradox: Probing Scientific Alignment with TC-Bench*,
ICML 2026, App. E; Dvorak (1984), NOAA Tech. Rep. NESDIS 11 (T-number tables).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..core.validation import check_finite_array, check_same_length
from .encoders import EyeFeatures

__all__ = ["DvorakLite", "Climatology", "T_NUMBERS", "T_TO_PRESSURE", "T_TO_WIND",
           "t_number_to_pressure", "t_number_to_wind", "pressure_to_t_number"]

T_NUMBERS = np.arange(1.0, 8.01, 0.5)
T_TO_PRESSURE = np.array([1009, 1005, 1000, 997, 991, 984, 976, 966, 954, 941, 927, 914, 898,
                          879, 858], dtype=float)
T_TO_WIND = np.array([25, 25, 30, 35, 45, 55, 65, 77, 90, 102, 115, 127, 140, 155, 170],
                     dtype=float)


def t_number_to_pressure(t_number) -> np.ndarray:
    """Dvorak T-number → minimum central pressure (hPa), linear between table entries."""
    return np.interp(np.asarray(t_number, float), T_NUMBERS, T_TO_PRESSURE)


def t_number_to_wind(t_number) -> np.ndarray:
    """Dvorak T-number → maximum sustained wind (kt), linear between table entries."""
    return np.interp(np.asarray(t_number, float), T_NUMBERS, T_TO_WIND)


def pressure_to_t_number(pressure) -> np.ndarray:
    """Inverse of :func:`t_number_to_pressure` (clipped to T ∈ [1, 8])."""
    return np.interp(np.asarray(pressure, float), T_TO_PRESSURE[::-1], T_NUMBERS[::-1])


class DvorakLite(RegressorMixin, BaseEstimator):
    """Dvorak-style T-number from cloud-top and eye temperatures, mapped by the Dvorak tables.

    The central-feature (CF) number grows as the ring around the centre gets colder; an
    eye adds an adjustment that grows with the eye–cloud temperature contrast:
    ``T = c0 + c1·(−T_ring) + c2·max(T_eye − T_ring, 0)``, clipped to [1, 8], then
    ``P = table(T)`` and ``V = table(T)``.  The three coefficients are calibrated by least
    squares on the train frames (the operational technique uses fixed enhancement-curve
    thresholds for a real sensor; our frames are synthetic, so the thresholds are learned —
    a named deviation).

    Parameters
    ----------
    eye_radius : float, default 6
        Pixels around the image centre searched for the warm eye.
    ring : (float, float), default (8, 16)
        Inner/outer radius (px) of the cloud-top ring.

    References
    ----------
    Dvorak, "Tropical cyclone intensity analysis using satellite data", NOAA Technical Report
    NESDIS 11, 1984. Yao, Polesello, Pervez, Muller & Locatello, "The Perception-Physics Paradox:
    Probing Scientific Alignment with TC-Bench", ICML 2026 (arXiv:2605.24782). Its Appendix E
    baseline.

    Examples
    --------
    >>> from icml26.tcbench import SynthTC
    >>> f = SynthTC(n_trajectories=20, seed=0).generate()
    >>> model = DvorakLite().fit(f.images, f.pressure)
    >>> model.predict(f.images[:2]).shape
    (2,)
    """

    def __init__(self, eye_radius: float = 6.0, ring: tuple = (8.0, 16.0)):
        self.eye_radius = eye_radius
        self.ring = ring

    def _design(self, images) -> np.ndarray:
        feats = EyeFeatures(self.eye_radius, self.ring).fit_transform(images)
        eye, ring_mean = feats[:, 0], feats[:, 1]
        return np.c_[np.ones(len(feats)), -ring_mean, np.maximum(eye - ring_mean, 0.0)]

    def fit(self, images, pressure) -> "DvorakLite":
        """Calibrate the T-number rule against best-track pressure."""
        pressure = check_finite_array(pressure, "pressure", ndim=1)
        X = self._design(images)
        check_same_length(images=X, pressure=pressure)
        self.coef_ = np.linalg.lstsq(X, pressure_to_t_number(pressure), rcond=None)[0]
        return self

    def t_number(self, images) -> np.ndarray:
        """The T-number of each frame (clipped to [1, 8])."""
        check_is_fitted(self, "coef_")
        return np.clip(self._design(images) @ self.coef_, T_NUMBERS[0], T_NUMBERS[-1])

    def predict(self, images) -> np.ndarray:
        """Central pressure (hPa) from the T-number table."""
        return t_number_to_pressure(self.t_number(images))

    def predict_wind(self, images) -> np.ndarray:
        """Maximum wind (kt) from the T-number table."""
        return t_number_to_wind(self.t_number(images))


class Climatology(RegressorMixin, BaseEstimator):
    """Mean target per group (basin/agency or month) from the train split.

    Unseen groups get the overall train mean.

    References
    ----------
    Yao, Polesello, Pervez, Muller & Locatello, "The Perception-Physics Paradox: Probing Scientific
    Alignment with TC-Bench", ICML 2026 (arXiv:2605.24782). Its climatology baseline (a per-group
    mean).

    Examples
    --------
    >>> Climatology().fit(["a", "a", "b"], [1.0, 3.0, 5.0]).predict(["a", "b", "c"]).tolist()
    [2.0, 5.0, 3.0]
    """

    def fit(self, groups, y) -> "Climatology":
        groups = np.asarray(groups)
        y = check_finite_array(y, "y", ndim=1)
        check_same_length(groups=groups, y=y)
        self.groups_ = np.unique(groups)
        self.means_ = {g: float(y[groups == g].mean()) for g in self.groups_}
        self.overall_ = float(y.mean())
        return self

    def predict(self, groups) -> np.ndarray:
        check_is_fitted(self, "means_")
        return np.array([self.means_.get(g, self.overall_) for g in np.asarray(groups)])
