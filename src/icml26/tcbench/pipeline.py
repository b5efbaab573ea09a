"""The TC-Bench real-data builder: IBTrACS best tracks + GridSat-B1 IR → per-storm files (stages 03–07).

For users who have the data locally (IBTrACS v4 CSV, ~50 MB; GridSat-B1 ``irwin_cdr``
files, ~500 GB for the full benchmark).  Nothing is downloaded (stages 01–02 of the
official pipeline are downloads).  Stages, following the official ``dataset/0*_*.py``:

03. keep fixes on the strict 3-hourly grid (00, 03, …, 21 UTC), keep storms reported by a
    single WMO agency, read the agency-native pressure/wind columns, trim leading/trailing
    NaN labels and linearly interpolate interior gaps, give each ``UNNAMED`` storm a unique name;
04. crop a ``crop_size``² window (224 by default, ±112 grid points) centred on the grid point
    nearest to the best-track centre (longitude wraps), nearest-neighbour fill small NaN
    holes (reject the frame if a NaN is farther than 2% of the width from valid data), clip
    BT to [140, 375] K; drop storms with fewer than 2 usable frames;
05. one netCDF file per storm with ``frame_valid_mask`` (invalid if the valid fraction
    < 0.995, NaN near the centre, seam-like NaN rows/columns or a NaN blob > 1% of pixels);
06. trajectory-level 80/10/10 split (seed 42), and a Hugging Face ``DatasetDict`` when the
    optional ``datasets`` package is installed;
07. per-channel mean/std over the valid train frames.

References
----------
Yao et al., *The Perception–Physics Paradox: Probing Scientific Alignment with TC-Bench*,
ICML 2026; official code ``CausalLearningAI/tc-bench`` (``dataset/``).
"""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import ndimage
from scipy.io import netcdf_file

from ..core.io import atomic_file
from ..core.validation import check_int
from .data import BT_MAX, BT_MIN, TCFrames

__all__ = ["AGENCY_COLUMNS", "read_ibtracs", "clean_tracks", "read_gridsat", "crop_frame",
           "frame_valid", "split_ids", "build_tcbench", "load_tcbench"]

AGENCY_COLUMNS = {"atcf": "USA", "hurdat_atl": "USA", "hurdat_epa": "USA", "bom": "BOM",
                  "nadi": "NADI", "newdelhi": "NEWDELHI", "reunion": "REUNION",
                  "tokyo": "TOKYO", "wellington": "WELLINGTON"}
GRID_HOURS = np.arange(0, 24, 3)
MAX_FILL_DISTANCE = 0.02      # of the crop width
MIN_VALID_FRACTION = 0.995
CENTRE_RADIUS = 8             # px: any NaN this close to the centre invalidates the frame
SEAM_FRACTION = 0.5           # a row/column more than half NaN is a seam
MAX_BLOB_FRACTION = 0.01
SPLIT_FRACTIONS = (0.8, 0.1, 0.1)
STRATEGY = "trim_ends_interpolate_middle"


# -- stage 03: tracks ---------------------------------------------------------------------
def read_ibtracs(path) -> pd.DataFrame:
    """Read an IBTrACS ``list`` CSV; the second (units) row is folded into ``df.attrs["units"]``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"ibtracs_csv {str(path)!r} does not exist")
    df = pd.read_csv(path, na_values=["", " "], keep_default_na=True, low_memory=False,
                     dtype=str)
    required = {"SID", "SEASON", "NAME", "ISO_TIME", "LAT", "LON", "WMO_AGENCY"}
    missing = sorted(required - set(df.columns))
    if missing:
        raise ValueError(f"ibtracs_csv lacks IBTrACS columns {missing}")
    units = {}
    if len(df) and not str(df.loc[0, "SEASON"]).strip().isdigit():   # the units row
        units = {c: ("" if pd.isna(v) else str(v).strip()) for c, v in df.iloc[0].items()}
        df = df.iloc[1:].reset_index(drop=True)
    df = df.apply(lambda col: col.str.strip())          # every column was read as text
    df = df.replace({"": np.nan})
    df.attrs["units"] = units
    return df


def _trim_and_interpolate(pressure: np.ndarray, wind: np.ndarray):
    ok = np.isfinite(pressure) & np.isfinite(wind)
    if not ok.any():
        return None
    first, last = np.flatnonzero(ok)[[0, -1]]
    keep = slice(first, last + 1)
    p, w = pressure[keep].copy(), wind[keep].copy()
    interpolated = ~(np.isfinite(p) & np.isfinite(w))
    x = np.arange(p.size)
    for arr in (p, w):
        bad = ~np.isfinite(arr)
        if bad.any():
            arr[bad] = np.interp(x[bad], x[~bad], arr[~bad])
    return keep, p, w, interpolated


def clean_tracks(df: pd.DataFrame, agencies: Iterable[str] | None = None,
                 years: Iterable[int] | None = None) -> pd.DataFrame:
    """Stage 03: strict 3-hourly single-agency tracks with agency-native pressure and wind.

    Returns one row per kept fix with ``cyclone_id, sid, location, year, name, time, step,
    lat, lon, pressure, wind, interpolated``.
    """
    if agencies is not None:
        agencies = list(agencies)
        unknown = sorted(set(agencies) - set(AGENCY_COLUMNS))
        if unknown:
            raise ValueError(f"agencies {unknown} unknown; expected some of {sorted(AGENCY_COLUMNS)}")
    years = None if years is None else {int(y) for y in years}
    time = pd.to_datetime(df["ISO_TIME"], errors="coerce")
    on_grid = time.notna() & time.dt.hour.isin(GRID_HOURS) & (time.dt.minute == 0) \
        & (time.dt.second == 0)
    df = df.assign(_time=time)[on_grid]
    rows, unnamed = [], 0
    for sid, storm in df.groupby("SID", sort=False):
        wmo = storm["WMO_AGENCY"].dropna().unique()
        if len(wmo) != 1 or wmo[0] not in AGENCY_COLUMNS:
            continue
        agency = str(wmo[0])
        year = int(float(storm["SEASON"].iloc[0]))
        if (agencies is not None and agency not in agencies) or (years is not None and year not in years):
            continue
        prefix = AGENCY_COLUMNS[agency]
        if f"{prefix}_PRES" not in storm or f"{prefix}_WIND" not in storm:
            continue
        storm = storm.sort_values("_time").drop_duplicates("_time")
        pressure = pd.to_numeric(storm[f"{prefix}_PRES"], errors="coerce").to_numpy(float)
        wind = pd.to_numeric(storm[f"{prefix}_WIND"], errors="coerce").to_numpy(float)
        fixed = _trim_and_interpolate(pressure, wind)
        if fixed is None:
            continue
        keep, p, w, interpolated = fixed
        storm = storm.iloc[keep]
        name = str(storm["NAME"].iloc[0]) if pd.notna(storm["NAME"].iloc[0]) else "UNNAMED"
        if name.upper() in ("UNNAMED", "NOT_NAMED", "NAN"):
            unnamed += 1
            name = f"UNNAMED{unnamed}_{sid}"
        times = storm["_time"].to_numpy()
        step = ((times - times[0]) / np.timedelta64(3, "h")).astype(int)
        rows.append(pd.DataFrame({
            "cyclone_id": f"{agency}_{year}_{name}", "sid": sid, "location": agency,
            "year": year, "name": name, "time": times, "step": step,
            "lat": pd.to_numeric(storm["LAT"]).to_numpy(float),
            "lon": pd.to_numeric(storm["LON"]).to_numpy(float),
            "pressure": p, "wind": w, "interpolated": interpolated.astype(np.int8)}))
    columns = ["cyclone_id", "sid", "location", "year", "name", "time", "step", "lat", "lon",
               "pressure", "wind", "interpolated"]
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)


# -- stage 04: imagery ----------------------------------------------------------------------
def read_gridsat(path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lat, lon, bt)`` of a GridSat-B1 file: ``irwin_cdr`` (K) with scale/offset/fill applied.

    Reads ``.npz`` (arrays ``lat, lon, irwin_cdr``) and netCDF-3 with SciPy; netCDF-4/HDF5
    (the official distribution) needs ``xarray`` with a netCDF-4 engine installed.
    """
    path = str(path)
    if path.endswith(".npz"):
        with np.load(path) as data:
            return (np.asarray(data["lat"], float), np.asarray(data["lon"], float),
                    np.asarray(data["irwin_cdr"], float).squeeze())
    try:
        with netcdf_file(path, "r", mmap=False) as nc:
            var = nc.variables["irwin_cdr"]
            raw = np.asarray(var[:], dtype=float).squeeze()
            fill = getattr(var, "_FillValue", None)
            scale = float(getattr(var, "scale_factor", 1.0))
            offset = float(getattr(var, "add_offset", 0.0))
            lat = np.asarray(nc.variables["lat"][:], float)
            lon = np.asarray(nc.variables["lon"][:], float)
    except TypeError:  # not netCDF-3: try xarray for netCDF-4
        try:
            import xarray
        except ImportError as exc:
            raise ImportError(f"{path} is not netCDF-3; reading netCDF-4 GridSat files needs "
                              "xarray with netCDF4 or h5netcdf installed") from exc
        with xarray.open_dataset(path) as ds:
            return (ds["lat"].values.astype(float), ds["lon"].values.astype(float),
                    ds["irwin_cdr"].values.astype(float).squeeze())
    bt = raw.copy()
    if fill is not None:
        bt[raw == float(np.asarray(fill).ravel()[0])] = np.nan
    return lat, lon, bt * scale + offset


def gridsat_file(gridsat_dir, time) -> str | None:
    """The GridSat-B1 file for a fix time (``GRIDSAT-B1.YYYY.MM.DD.HH.*``), or None."""
    stamp = pd.Timestamp(time).strftime("%Y.%m.%d.%H")
    hits = sorted(glob.glob(os.path.join(str(gridsat_dir), f"GRIDSAT-B1.{stamp}.*")))
    return hits[0] if hits else None


def crop_frame(bt: np.ndarray, lat: np.ndarray, lon: np.ndarray, centre_lat: float,
               centre_lon: float, crop_size: int = 224):
    """Stage 04: the ``crop_size``² window around the grid point nearest the centre.

    Longitude wraps (the grid is treated as periodic); a window leaving the latitude range
    is rejected.  Small NaN holes are filled with the nearest valid value; the frame is
    rejected when a NaN lies farther than 2% of the width from valid data.  BT is clipped
    to [140, 375] K.

    Returns
    -------
    (crop, nan_mask) or None
        ``crop`` float32 of shape ``(crop_size, crop_size)``, ``nan_mask`` the NaNs before filling.
    """
    crop_size = check_int(crop_size, "crop_size", min_value=2)
    half = crop_size // 2
    i = int(np.argmin(np.abs(lat - centre_lat)))
    lon_wrapped = (lon - centre_lon + 180.0) % 360.0 - 180.0
    j = int(np.argmin(np.abs(lon_wrapped)))
    rows = np.arange(i - half, i - half + crop_size)
    if rows[0] < 0 or rows[-1] >= lat.size:
        return None
    cols = np.arange(j - half, j - half + crop_size) % lon.size
    crop = np.asarray(bt, float)[np.ix_(rows, cols)]
    if lat[0] > lat[-1]:      # north-up grids: keep south at row 0 like ascending files
        crop = crop[::-1]
    nan_mask = ~np.isfinite(crop)
    if nan_mask.all():
        return None
    if nan_mask.any():
        dist, (ii, jj) = ndimage.distance_transform_edt(nan_mask, return_indices=True)
        if dist.max() > MAX_FILL_DISTANCE * crop_size:
            return None
        crop = crop[ii, jj]
    return np.clip(crop, BT_MIN, BT_MAX).astype(np.float32), nan_mask


def frame_valid(nan_mask: np.ndarray) -> bool:
    """Stage 05 validity: enough valid pixels, none missing at the centre, no seams, no big blob."""
    n = nan_mask.size
    if 1.0 - nan_mask.mean() < MIN_VALID_FRACTION:
        return False
    h, w = nan_mask.shape
    yy, xx = np.mgrid[0:h, 0:w]
    if (nan_mask & (np.hypot(yy - (h - 1) / 2, xx - (w - 1) / 2) <= CENTRE_RADIUS)).any():
        return False
    if (nan_mask.mean(axis=0) > SEAM_FRACTION).any() or (nan_mask.mean(axis=1) > SEAM_FRACTION).any():
        return False
    labels, count = ndimage.label(nan_mask)
    if count and np.bincount(labels.ravel())[1:].max() > MAX_BLOB_FRACTION * n:
        return False
    return True


# -- stages 05–07 -----------------------------------------------------------------------------
def split_ids(ids: Sequence[str], fractions=SPLIT_FRACTIONS, seed: int = 42) -> dict:
    """Trajectory-level train/validation/test split of unique ids (stage 06)."""
    unique = np.array(sorted(set(ids)), dtype=object)
    order = np.random.default_rng(seed).permutation(unique.size)
    n_train = int(round(fractions[0] * unique.size))
    n_val = int(round(fractions[1] * unique.size))
    cut = [order[:n_train], order[n_train:n_train + n_val], order[n_train + n_val:]]
    return {name: sorted(unique[c].tolist()) for name, c in zip(("train", "validation", "test"), cut)}


def _write_storm(path: Path, storm: pd.DataFrame, frames: np.ndarray, valid: np.ndarray) -> None:
    first = storm.iloc[0]
    with atomic_file(path) as tmp, netcdf_file(tmp, "w", version=2) as nc:
        nc.createDimension("time", len(storm))
        nc.createDimension("y", frames.shape[1])
        nc.createDimension("x", frames.shape[2])
        nc.createDimension("two", 2)
        for name, value in (("cyclone_id", first.cyclone_id), ("location", first.location),
                            ("name", first["name"]), ("pressure_wind_strategy", STRATEGY)):
            setattr(nc, name, str(value))
        nc.year = int(first.year)
        nc.timestamps = ",".join(pd.to_datetime(storm.time).dt.strftime("%Y.%m.%d.%H"))
        def var(name, dtype, dims, values):
            nc.createVariable(name, dtype, dims)[:] = values
        var("frames", "f4", ("time", "y", "x"), frames)
        var("frame_valid_mask", "i1", ("time",), valid.astype(np.int8))
        var("pressure", "f8", ("time",), storm.pressure.to_numpy())
        var("wind", "f8", ("time",), storm.wind.to_numpy())
        var("center", "f8", ("time", "two"), storm[["lat", "lon"]].to_numpy())
        var("step", "i4", ("time",), storm.step.to_numpy())
        var("interpolated", "i1", ("time",), storm.interpolated.to_numpy())
        var("pressure_wind_valid", "i1", ("time",), np.ones(len(storm), np.int8))


def build_tcbench(ibtracs_csv, gridsat_dir, out_dir, agencies=None, years=None,
                  crop_size: int = 224, split_seed: int = 42) -> dict:
    """Build TC-Bench (stages 03–07) from local IBTrACS and GridSat-B1 files.

    Parameters
    ----------
    ibtracs_csv : path
        IBTrACS v4 ``list`` CSV (with its units row).
    gridsat_dir : path
        Folder of ``GRIDSAT-B1.YYYY.MM.DD.HH.*`` files (netCDF or ``.npz``).
    out_dir : path
        Output folder: ``storms/<cyclone_id>.nc``, ``splits.json``, ``stats.json`` and
        ``manifest.json`` (and ``hf/`` when ``datasets`` is installed).
    agencies, years : iterable, optional
        Restrict to these WMO agencies / seasons.
    crop_size : int, default 224
    split_seed : int, default 42

    Returns
    -------
    dict
        The manifest: counts of storms/frames per stage, the split sizes and the BT statistics.

    Examples
    --------
    >>> build_tcbench("ibtracs.csv", "gridsat/", "tcbench_out/")  # doctest: +SKIP
    """
    gridsat_dir = Path(gridsat_dir)
    if not gridsat_dir.is_dir():
        raise FileNotFoundError(f"gridsat_dir {str(gridsat_dir)!r} is not a folder")
    tracks = clean_tracks(read_ibtracs(ibtracs_csv), agencies, years)
    out_dir = Path(out_dir)
    (out_dir / "storms").mkdir(parents=True, exist_ok=True)
    cache: dict[str, tuple] = {}
    kept, n_frames, n_valid, dropped = [], 0, 0, []
    for cid, storm in tracks.groupby("cyclone_id", sort=False):
        crops, nan_masks, keep_rows = [], [], []
        for k, fix in enumerate(storm.itertuples(index=False)):
            path = gridsat_file(gridsat_dir, fix.time)
            if path is None:
                continue
            if path not in cache:
                cache.clear()   # fixes arrive in time order: one file in memory at a time
                cache[path] = read_gridsat(path)
            lat, lon, bt = cache[path]
            cropped = crop_frame(bt, lat, lon, fix.lat, fix.lon, crop_size)
            if cropped is None:
                continue
            crops.append(cropped[0])
            nan_masks.append(cropped[1])
            keep_rows.append(k)
        if len(crops) < 2:
            dropped.append(cid)
            continue
        sub = storm.iloc[keep_rows]
        valid = np.array([frame_valid(m) for m in nan_masks])
        _write_storm(out_dir / "storms" / f"{cid}.nc", sub, np.stack(crops), valid)
        kept.append(cid)
        n_frames += len(crops)
        n_valid += int(valid.sum())
    splits = split_ids(kept, SPLIT_FRACTIONS, split_seed)
    stats = _channel_stats(out_dir, splits["train"])
    manifest = {"n_tracks": int(tracks.cyclone_id.nunique()), "n_storms": len(kept),
                "n_frames": n_frames, "n_valid_frames": n_valid, "dropped": dropped,
                "splits": {k: len(v) for k, v in splits.items()}, "stats": stats,
                "crop_size": crop_size}
    (out_dir / "splits.json").write_text(json.dumps(splits, indent=1))
    (out_dir / "stats.json").write_text(json.dumps(stats, indent=1))
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    _maybe_hf(out_dir, splits)
    return manifest


def _channel_stats(out_dir: Path, train_ids) -> dict:
    """Stage 07: mean/std of BT over valid frames of the train storms (one IR channel)."""
    total = total_sq = count = 0.0
    for cid in train_ids:
        with netcdf_file(out_dir / "storms" / f"{cid}.nc", "r", mmap=False) as nc:
            frames = np.asarray(nc.variables["frames"][:], float)
            valid = np.asarray(nc.variables["frame_valid_mask"][:]).astype(bool)
        x = frames[valid]
        total, total_sq, count = total + x.sum(), total_sq + (x ** 2).sum(), count + x.size
    if count == 0:
        return {"mean": [float("nan")], "std": [float("nan")]}
    mean = total / count
    return {"mean": [mean], "std": [float(np.sqrt(max(total_sq / count - mean ** 2, 0.0)))]}


def _maybe_hf(out_dir: Path, splits: dict) -> None:
    try:
        import datasets
    except ImportError:
        return
    rows = {r["cyclone_id"]: r for r in _storm_records(out_dir)}
    datasets.DatasetDict({name: datasets.Dataset.from_list([rows[i] for i in ids])
                          for name, ids in splits.items() if ids}).save_to_disk(str(out_dir / "hf"))


def _native(values) -> np.ndarray:
    """A native-byte-order copy (netCDF-3 stores big-endian; pyarrow rejects byte-swapped)."""
    arr = np.asarray(values)
    return arr.astype(arr.dtype.newbyteorder("="))


def _storm_records(out_dir: Path) -> list[dict]:
    records = []
    for path in sorted((Path(out_dir) / "storms").glob("*.nc")):
        with netcdf_file(path, "r", mmap=False) as nc:
            get = lambda n: _native(nc.variables[n][:])
            dec = lambda v: v.decode() if isinstance(v, bytes) else v
            frames = get("frames").astype(np.float32)
            records.append({
                "cyclone_id": dec(nc.cyclone_id), "location": dec(nc.location),
                "year": int(nc.year), "name": dec(nc.name), "frames": frames,
                "frame_valid_mask": get("frame_valid_mask").astype(np.int8),
                "pressure": get("pressure"), "wind": get("wind"), "center": get("center"),
                "timestamps": dec(nc.timestamps).split(","), "step": get("step"),
                "num_timesteps": int(frames.shape[0]), "height": int(frames.shape[1]),
                "width": int(frames.shape[2]),
                "pressure_wind_valid": get("pressure_wind_valid").astype(np.int8),
                "interpolated": get("interpolated").astype(np.int8),
                "pressure_wind_strategy": dec(nc.pressure_wind_strategy)})
    return records


def load_tcbench(out_dir, split: str | None = None) -> TCFrames:
    """Load a built TC-Bench folder (or one split of it) as :class:`TCFrames`."""
    out_dir = Path(out_dir)
    records = _storm_records(out_dir)
    if not records:
        raise FileNotFoundError(f"no storms under {str(out_dir / 'storms')!r}; run build_tcbench first")
    if split is not None:
        splits = json.loads((out_dir / "splits.json").read_text())
        if split not in splits:
            raise ValueError(f"split must be one of {sorted(splits)}, got {split!r}")
        wanted = set(splits[split])
        records = [r for r in records if r["cyclone_id"] in wanted]
    cat = lambda key: np.concatenate([np.asarray(r[key]) for r in records])
    return TCFrames(
        pressure=cat("pressure"), wind=cat("wind"), t=cat("step"),
        trajectory_id=np.concatenate([[r["cyclone_id"]] * r["num_timesteps"] for r in records]),
        lat=cat("center")[:, 0], lon=cat("center")[:, 1],
        basin=np.concatenate([[r["location"]] * r["num_timesteps"] for r in records]),
        valid=cat("frame_valid_mask").astype(bool), images=cat("frames"),
        meta={"source": str(out_dir)})
