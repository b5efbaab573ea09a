"""Cyclone frames with ground truth: the :class:`TCFrames` container and the :class:`SynthTC` generator.

TC-Bench pairs IBTrACS best tracks with GridSat-B1 infrared (IR) brightness-temperature
(BT) frames.  Neither can be downloaded here, so :class:`SynthTC` renders physically
grounded synthetic IR frames whose ground truth is known exactly, with a *planted
saturating shortcut*: the cold cloud top and the central dense overcast stop changing at
980 hPa, while the warm eye keeps carrying the true pressure signal (spec §5; the
generator is this project's design, not the paper's).  The real-data builder lives in
:mod:`icml26.tcbench.pipeline`.

References
----------
Yao, Polesello, Pervez, Muller, Locatello. *The Perception–Physics Paradox: Probing
Scientific Alignment with TC-Bench.* ICML 2026 (arXiv 2605.24782).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
from scipy.ndimage import gaussian_filter

from ..core.validation import check_int, check_scalar_in, check_vector

__all__ = ["TCFrames", "SynthTC", "as_frames", "background_temperature", "BT_MIN", "BT_MAX",
           "ENV_PRESSURE", "INTENSE_THRESHOLD"]

BT_MIN, BT_MAX = 140.0, 375.0          # GridSat-B1 clip range (K), stage 04
ENV_PRESSURE = 1010.0                  # environmental pressure P_env (hPa)
INTENSE_THRESHOLD = 980.0              # intense regime: P_c < 980 hPa
# Generator control (saturate=False), fixed before its first run: beyond ΔP = 30 hPa the cloud
# top keeps cooling (K per hPa) and the central dense overcast keeps growing (km per hPa).
UNSATURATED_TOP_SLOPE = 0.4
UNSATURATED_CDO_SLOPE = 1.0
KNAFF_ZEHR_A = 24.254 ** -2            # quadratic coefficient of the wind–pressure relation
BASIN_BASE_LON = (-60.0, -120.0, 140.0, 88.0, 165.0)  # a nominal genesis longitude per basin


def _optional(value, n: int, name: str, dtype=float):
    if value is None:
        return None
    arr = np.asarray(value, dtype=dtype)
    if arr.shape[:1] != (n,):
        raise ValueError(f"{name} has {arr.shape[0] if arr.ndim else 0} entries; "
                         f"expected {n} (one per frame)")
    return arr


@dataclass
class TCFrames:
    """Frames of tropical-cyclone trajectories with their physical labels.

    One entry per frame (3-hourly fix).  Only ``pressure``, ``trajectory_id`` and ``t``
    are required, so the probes run on any user's embeddings with cyclone labels.

    Parameters
    ----------
    pressure : array of shape (n,)
        Minimum central pressure ``P_c`` (hPa); NaN marks a missing label.
    trajectory_id : array of shape (n,)
        Storm identifier (int or str); all frames of a storm share it.
    t : array of shape (n,)
        Integer time step within the trajectory (3-hour units); consecutive frames differ by 1.
    wind : array of shape (n,), optional
        Maximum sustained wind ``V_m`` (kt).
    lat, lon : array of shape (n,), optional
        Best-track centre (degrees).
    basin : array of shape (n,), optional
        Basin / reporting agency (int code or str).
    rmw : array of shape (n,), optional
        Radius of maximum wind ``R_m`` (km).
    size : array of shape (n,), optional
        Storm size factor ``S`` (SynthTC only).
    valid : array of shape (n,), optional
        ``frame_valid_mask`` (1 = usable frame); default all valid.
    images : array of shape (n, H, W), optional
        IR brightness temperature (K).

    References
    ----------
    Yao, Polesello, Pervez, Muller & Locatello, "The Perception-Physics Paradox: Probing Scientific
    Alignment with TC-Bench", ICML 2026 (arXiv:2605.24782).

    Examples
    --------
    >>> import numpy as np
    >>> f = TCFrames(pressure=[1000., 990.], trajectory_id=[0, 0], t=[0, 1])
    >>> len(f), f.regime().tolist()
    (2, ['moderate', 'moderate'])
    """

    pressure: Any
    trajectory_id: Any
    t: Any
    wind: Any = None
    lat: Any = None
    lon: Any = None
    basin: Any = None
    rmw: Any = None
    size: Any = None
    valid: Any = None
    images: Any = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.pressure = check_vector(self.pressure, "pressure", allow_nan=True)
        n = self.pressure.shape[0]
        self.trajectory_id = np.asarray(self.trajectory_id)
        if self.trajectory_id.shape != (n,):
            raise ValueError(f"trajectory_id has shape {self.trajectory_id.shape}; expected ({n},)")
        self.t = _optional(self.t, n, "t", dtype=np.int64)
        for name in ("wind", "lat", "lon", "rmw", "size"):
            setattr(self, name, _optional(getattr(self, name), n, name))
        if self.basin is not None:
            self.basin = np.asarray(self.basin)
            if self.basin.shape != (n,):
                raise ValueError(f"basin has shape {self.basin.shape}; expected ({n},)")
        self.valid = (np.ones(n, dtype=bool) if self.valid is None
                      else _optional(self.valid, n, "valid", dtype=bool))
        if self.images is not None:
            self.images = np.asarray(self.images, dtype=np.float32)
            if self.images.ndim != 3 or self.images.shape[0] != n:
                raise ValueError(f"images must have shape (n_frames={n}, H, W), "
                                 f"got {self.images.shape}")

    def __len__(self) -> int:
        return int(self.pressure.shape[0])

    @property
    def n_trajectories(self) -> int:
        return int(np.unique(self.trajectory_id).size)

    def target(self, name: str) -> np.ndarray:
        """The label array ``pressure`` or ``wind`` (raises if absent)."""
        if name not in ("pressure", "wind"):
            raise ValueError(f"target must be one of ['pressure', 'wind'], got {name!r}")
        values = getattr(self, name)
        if values is None:
            raise ValueError(f"target {name!r} requested but frames have no {name} labels")
        return values

    def regime(self, threshold: float = INTENSE_THRESHOLD) -> np.ndarray:
        """``"intense"`` where ``pressure < threshold``, else ``"moderate"`` (NaN: ``"missing"``)."""
        out = np.where(self.pressure < threshold, "intense", "moderate").astype(object)
        out[~np.isfinite(self.pressure)] = "missing"
        return out

    def subset(self, index) -> "TCFrames":
        """The frames selected by an integer index array or boolean mask."""
        index = np.asarray(index)
        kwargs = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            kwargs[f.name] = value if (value is None or f.name == "meta") else value[index]
        return TCFrames(**kwargs)

    def to_hf_dataset(self, split_seed: int = 42, fractions=(0.8, 0.1, 0.1)):
        """A ``datasets.DatasetDict`` in the official TC-Bench schema (one row per trajectory).

        Trajectory-level 80/10/10 split (seed 42), as pipeline stage 06.  Needs the
        optional ``datasets`` package.
        """
        try:
            import datasets
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("to_hf_dataset needs the optional 'datasets' package "
                              "(pip install datasets)") from exc
        from .pipeline import split_ids

        rows = self.to_records()
        splits = split_ids([r["cyclone_id"] for r in rows], fractions, split_seed)
        by_id = {r["cyclone_id"]: r for r in rows}
        return datasets.DatasetDict({
            name: datasets.Dataset.from_list([by_id[i] for i in ids])
            for name, ids in splits.items()})

    def to_records(self) -> list[dict]:
        """One dict per trajectory in the TC-Bench schema (``frames`` only if images exist)."""
        rows = []
        for tid in _ordered_unique(self.trajectory_id):
            idx = np.flatnonzero(self.trajectory_id == tid)
            idx = idx[np.argsort(self.t[idx], kind="stable")]
            agency = str(self.basin[idx[0]]) if self.basin is not None else "synth"
            year = int(self.meta.get("year", 2000))
            name = f"SYN{tid}"
            row = {
                "cyclone_id": f"{agency}_{year}_{name}", "location": agency, "year": year,
                "name": name,
                "frame_valid_mask": self.valid[idx].astype(np.int8).tolist(),
                "pressure": self.pressure[idx].tolist(),
                "wind": (self.wind[idx] if self.wind is not None
                         else np.full(idx.size, np.nan)).tolist(),
                "center": np.stack([_or_nan(self.lat, idx), _or_nan(self.lon, idx)], 1).tolist(),
                "timestamps": [_timestamp(int(s)) for s in self.t[idx]],
                "num_timesteps": int(idx.size),
                "pressure_wind_valid": np.isfinite(self.pressure[idx]).astype(np.int8).tolist(),
                "interpolated": np.zeros(idx.size, dtype=np.int8).tolist(),
                "pressure_wind_strategy": "trim_ends_interpolate_middle",
            }
            if self.images is not None:
                row["frames"] = self.images[idx]
                row["height"], row["width"] = map(int, self.images.shape[1:])
            rows.append(row)
        return rows


def _or_nan(values, idx):
    return values[idx] if values is not None else np.full(idx.size, np.nan)


def _timestamp(step: int) -> str:
    base = np.datetime64("2000-08-01T00") + np.timedelta64(3 * step, "h")
    return str(base.astype("datetime64[h]")).replace("-", ".").replace("T", ".")


def _ordered_unique(values) -> list:
    _, first = np.unique(values, return_index=True)
    return [values[i] for i in np.sort(first)]


def as_frames(frames: Any) -> TCFrames:
    """Accept a :class:`TCFrames`, a mapping of arrays or a pandas DataFrame with the same names."""
    if isinstance(frames, TCFrames):
        return frames
    if isinstance(frames, Mapping) or hasattr(frames, "columns"):
        names = {f.name for f in dataclasses.fields(TCFrames)} - {"meta"}
        keys = list(frames.columns) if hasattr(frames, "columns") else list(frames.keys())
        missing = [k for k in ("pressure", "trajectory_id", "t") if k not in keys]
        if missing:
            raise ValueError(f"frames lacks required labels {missing}; expected keys "
                             "'pressure', 'trajectory_id', 't'")
        return TCFrames(**{k: np.asarray(frames[k]) for k in keys if k in names})
    raise TypeError(f"frames must be a TCFrames, a mapping or a DataFrame, "
                    f"got {type(frames).__name__}")


def background_temperature(lat, basin) -> np.ndarray:
    """SynthTC's clear-sky background brightness temperature (K) of a frame.

    ``T_bg = 300 − 0.35 (φ − 10) + 1.5 (b − 2)``: the latitude cue (cooler poleward) plus the
    agency (basin) calibration offset. The renderer uses it for every frame; the Exp B physics
    oracle E5 takes it as an ancillary feature (the environment information an analyst has
    beside the image).

    Examples
    --------
    >>> background_temperature(np.array([10.0, 30.0]), np.array([2, 2])).tolist()
    [300.0, 293.0]
    """
    lat = np.asarray(lat, dtype=float)
    return 300.0 - 0.35 * (lat - 10.0) + 1.5 * (np.asarray(basin, dtype=float) - 2)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class SynthTC:
    """Physically grounded synthetic IR cyclone trajectories with exact ground truth (spec §5).

    Per trajectory (3-hourly frames, ``T ~ U{12..39}``): basin ``b ~ U{0..4}``; peak deficit
    ``ΔP_peak ~ clip(Gamma(2, 22), 8, 135)`` hPa around ``P_env = 1010``; a life cycle
    ``s(t)`` rising as ``(t/t_p)^1.5`` to the peak ``t_p ~ U(0.4, 0.75)`` and decaying
    linearly after it, plus a random walk ``0.3·cumsum N(0, 1)``.  Latitude drifts
    poleward; the wind follows a Knaff–Zehr-form wind–pressure relation (stronger wind at
    lower latitude for the same pressure); the radius of maximum wind shrinks with
    intensity (Holland-type vortex).  Frames are rendered as IR brightness temperature:
    background (latitude and agency-calibration cues), cold cloud top and central dense
    overcast that **saturate at 980 hPa**, a spiral band (nuisance) and a **warm eye** for
    ``ΔP > 30`` whose temperature keeps rising with intensity (the true signal), then a
    Gaussian PSF, sensor noise and the GridSat clip to [140, 375] K.

    Parameters
    ----------
    n_trajectories : int, default 400
        Number of storms (at least 2).
    image_size : int, default 64
        Frame side in pixels (at least 16).
    km_per_px : float, default 5.0
        Pixel size (km).
    seed : int, default 0
        Seed of all randomness.
    render : bool, default True
        Render images; ``False`` generates the labels only (fast).
    saturate : bool, default True
        ``True``: the cold cloud top and the central dense overcast stop changing at 980 hPa
        (the benchmark world). ``False`` (the generator control, a Resolution not from the
        paper): beyond ΔP = 30 the cloud top keeps cooling by 0.4 K/hPa and the overcast keeps
        growing by 1 km/hPa, so the large-scale appearance carries the intense-regime signal
        too (``T_top`` stays above the 140 K clip up to ΔP = 140).

    Notes
    -----
    By construction ``ΔP = (240 − T_top)/1.6 + (T_eye − T_top)``: the physical state is a
    *linear* function of cloud-top and eye temperatures across both regimes, while
    large-scale appearance (cloud-top temperature, cold area) stops changing below 980 hPa.
    All constants are this project's design (spec §5, "not from the paper").

    References
    ----------
    Yao et al., *The Perception–Physics Paradox*, ICML 2026; Knaff & Zehr (2007),
    Holland (1980) for the functional forms.

    Examples
    --------
    >>> frames = SynthTC(n_trajectories=3, image_size=32, seed=0).generate()
    >>> frames.images.shape[1:], bool((frames.images >= 140).all())
    ((32, 32), True)
    """

    def __init__(self, n_trajectories: int = 400, image_size: int = 64, km_per_px: float = 5.0,
                 seed: int = 0, render: bool = True, saturate: bool = True):
        self.n_trajectories = n_trajectories
        self.saturate = bool(saturate)
        self.image_size = image_size
        self.km_per_px = km_per_px
        self.seed = seed
        self.render = render

    def _validate(self) -> None:
        check_int(self.n_trajectories, "n_trajectories", min_value=2)
        check_int(self.image_size, "image_size", min_value=16)
        check_scalar_in(self.km_per_px, "km_per_px", low=0.0, low_inclusive=False)

    def generate(self) -> TCFrames:
        """Generate all trajectories; returns :class:`TCFrames` with ``images`` when ``render``."""
        self._validate()
        parts = [self._trajectory(k) for k in range(self.n_trajectories)]
        cat = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
        images = cat.pop("images", None)
        return TCFrames(images=images, meta={"generator": "SynthTC", "seed": self.seed,
                                             "km_per_px": self.km_per_px}, **cat)

    # -- one storm ---------------------------------------------------------------------
    def _trajectory(self, k: int) -> dict:
        # separate streams per storm for labels and rendering: labels do not depend on render
        rng = np.random.default_rng([self.seed, k, 0])
        n_steps = int(rng.integers(12, 40))
        basin = int(rng.integers(0, 5))
        peak = float(np.clip(rng.gamma(2.0, 22.0), 8.0, 135.0))
        t_peak = rng.uniform(0.4, 0.75)
        tt = np.linspace(0.0, 1.0, n_steps)
        life = np.where(tt <= t_peak, (tt / t_peak) ** 1.5, (1.0 - tt) / (1.0 - t_peak))
        walk = 0.3 * np.cumsum(rng.standard_normal(n_steps))
        deficit = np.clip(peak * (0.15 + 0.85 * life) + walk, 2.0, 140.0)
        pressure = ENV_PRESSURE - deficit
        lat0, speed = rng.uniform(6.0, 25.0), rng.uniform(0.02, 0.25)
        step = np.arange(n_steps)
        lat = lat0 + speed * step
        lon0 = BASIN_BASE_LON[basin] + rng.uniform(-10.0, 10.0)
        lon = (lon0 - rng.uniform(0.05, 0.4) * step + 180.0) % 360.0 - 180.0
        size = float(np.exp(rng.normal(0.0, 0.15)))
        q = np.clip(23.286 - 12.587 * size - 0.483 * np.abs(lat) + ENV_PRESSURE - pressure,
                    0.0, None)
        a = KNAFF_ZEHR_A
        wind = np.maximum(15.0, (-0.483 + np.sqrt(0.483 ** 2 + 4 * a * q)) / (2 * a))
        rmw = 70.0 * np.exp(-0.012 * deficit) * np.exp(rng.normal(0.0, 0.1, n_steps))
        out = {"pressure": pressure, "wind": wind, "rmw": rmw, "lat": lat, "lon": lon,
               "basin": np.full(n_steps, basin), "trajectory_id": np.full(n_steps, k),
               "t": step, "size": np.full(n_steps, size)}
        if self.render:
            out["images"] = self._render(deficit, lat, basin, size, rmw,
                                         np.random.default_rng([self.seed, k, 1]))
        return out

    def _render(self, deficit, lat, basin, size, rmw, rng) -> np.ndarray:
        n, side, km = deficit.size, self.image_size, self.km_per_px
        centre = (side - 1) / 2.0
        jitter = rng.normal(0.0, 1.5, size=(n, 2))
        yy, xx = np.mgrid[0:side, 0:side].astype(float)
        dy = yy[None] - (centre + jitter[:, 0, None, None])
        dx = xx[None] - (centre + jitter[:, 1, None, None])
        r = km * np.hypot(dx, dy)                                          # (n, H, W) km
        theta = np.arctan2(dy, dx)
        phase = rng.uniform(0.0, 2 * np.pi)
        cdo_noise = rng.normal(0.0, 15.0)                                  # storm-level
        t_bg = background_temperature(lat, basin)
        t_top = np.maximum(192.0, 240.0 - 1.6 * deficit) + rng.normal(0.0, 1.0, n)
        r_cdo = 60.0 + 3.0 * np.minimum(deficit, 30.0) + 20.0 * size + cdo_noise
        if not self.saturate:                      # generator control: no saturation at 980 hPa
            beyond = np.maximum(deficit - 30.0, 0.0)
            t_top = t_top - UNSATURATED_TOP_SLOPE * beyond
            r_cdo = r_cdo + UNSATURATED_CDO_SLOPE * beyond
        r_cdo = r_cdo[:, None, None]
        band = 0.9 * 0.5 * (1 + np.cos(2 * theta - 3 * np.log(r + 10.0) + phase)) \
            * np.exp(-((r - 1.8 * r_cdo) / 60.0) ** 2)
        cloud = np.clip(_sigmoid((r_cdo - r) / 15.0) + band, 0.0, 1.0)
        bt = t_bg[:, None, None] - cloud * (t_bg - t_top)[:, None, None]
        eye_temp = np.minimum(t_bg, t_top + 1.0 * (deficit - 30.0))
        eye_radius = np.maximum(0.5 * rmw, 12.0)
        weight = _sigmoid((eye_radius[:, None, None] - r) / 3.0)
        weight = weight * (deficit > 30.0)[:, None, None]
        bt = bt * (1 - weight) + eye_temp[:, None, None] * weight
        bt = gaussian_filter(bt, sigma=(0.0, 0.8, 0.8), mode="nearest")
        bt = bt + rng.normal(0.0, 2.0, size=bt.shape)
        return np.clip(bt, BT_MIN, BT_MAX).astype(np.float32)
