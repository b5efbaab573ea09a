"""The real-data builder (stages 03–07) on tiny IBTrACS-like and GridSat-like files."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy.io import netcdf_file

from icml26.tcbench import build_tcbench, load_tcbench
from icml26.tcbench.pipeline import clean_tracks, crop_frame, frame_valid, read_gridsat, read_ibtracs

COLUMNS = ["SID", "SEASON", "NAME", "ISO_TIME", "LAT", "LON", "WMO_AGENCY", "USA_PRES",
           "USA_WIND", "TOKYO_PRES", "TOKYO_WIND"]
UNITS = ["", "Year", "", "", "degrees_north", "degrees_east", "", "mb", "kts", "mb", "kts"]


def _track(sid, name, agency, start, n, lat, lon, pres_col):
    rows = []
    for k in range(n):
        t = pd.Timestamp(start) + pd.Timedelta(hours=3 * k)
        p, w = 1000 - 3 * k, 35 + 3 * k
        row = dict(SID=sid, SEASON="2005", NAME=name, ISO_TIME=t.strftime("%Y-%m-%d %H:%M:%S"),
                   LAT=f"{lat + 0.3 * k:.2f}", LON=f"{lon + 0.5 * k:.2f}", WMO_AGENCY=agency,
                   USA_PRES=" ", USA_WIND=" ", TOKYO_PRES=" ", TOKYO_WIND=" ")
        row[f"{pres_col}_PRES"], row[f"{pres_col}_WIND"] = str(p), str(w)
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("tcb")
    rows = (_track("S1", "ALPHA", "hurdat_atl", "2005-08-01 00:00", 4, 20.0, 178.5, "USA")   # crosses the dateline
            + _track("S2", "UNNAMED", "tokyo", "2005-08-01 00:00", 3, 15.0, 140.0, "TOKYO")
            + _track("S3", "UNNAMED", "tokyo", "2005-08-01 03:00", 3, 16.0, 150.0, "TOKYO")
            + _track("S4", "BETA", "tokyo", "2005-08-01 00:00", 3, 10.0, 120.0, "TOKYO"))
    rows[1]["USA_PRES"] = " "                       # interior gap in S1 -> interpolated
    rows.insert(2, dict(rows[1], ISO_TIME="2005-08-01 04:30:00"))   # off-grid fix, dropped
    s4 = [r for r in rows if r["SID"] == "S4"]
    s4[0]["WMO_AGENCY"] = "bom"                     # two agencies -> storm dropped
    csv = root / "ibtracs.csv"
    pd.DataFrame([dict(zip(COLUMNS, UNITS))] + rows, columns=COLUMNS).to_csv(csv, index=False)
    grid = root / "gridsat"
    grid.mkdir()
    lat = np.arange(-60, 60.01, 1.0)
    lon = np.arange(-180, 180, 1.0)
    rng = np.random.default_rng(0)
    for k in range(6):
        t = pd.Timestamp("2005-08-01 00:00") + pd.Timedelta(hours=3 * k)
        raw = (250 + 20 * rng.standard_normal((1, lat.size, lon.size))) * 100
        raw = raw.astype(np.int16)
        if k == 1:
            raw[0, 75, 320] = -31999                # a NaN hole at S2's centre (15N, 140E) at t=1
        with netcdf_file(grid / f"GRIDSAT-B1.{t:%Y.%m.%d.%H}.v02r01.nc", "w") as nc:
            nc.createDimension("time", 1), nc.createDimension("lat", lat.size)
            nc.createDimension("lon", lon.size)
            nc.createVariable("lat", "f4", ("lat",))[:] = lat
            nc.createVariable("lon", "f4", ("lon",))[:] = lon
            v = nc.createVariable("irwin_cdr", "i2", ("time", "lat", "lon"))
            v[:] = raw
            v.scale_factor, v.add_offset, v._FillValue = 0.01, 0.0, np.int16(-31999)
    return root, csv, grid


def test_read_ibtracs_folds_the_units_row(data):
    _, csv, _ = data
    df = read_ibtracs(csv)
    assert df.attrs["units"]["LAT"] == "degrees_north"
    assert df.SEASON.iloc[0] == "2005"


def test_clean_tracks_stage_03(data):
    _, csv, _ = data
    tracks = clean_tracks(read_ibtracs(csv))
    assert set(tracks.sid) == {"S1", "S2", "S3"}                 # S4 has two agencies
    s1 = tracks[tracks.sid == "S1"]
    assert len(s1) == 4 and s1.step.tolist() == [0, 1, 2, 3]       # off-grid fix dropped
    assert s1.interpolated.tolist() == [0, 1, 0, 0] and s1.pressure.iloc[1] == 997
    names = tracks.drop_duplicates("sid").cyclone_id.tolist()
    assert len(set(names)) == 3 and names[0] == "hurdat_atl_2005_ALPHA"
    assert len(clean_tracks(read_ibtracs(csv), agencies=["tokyo"])) == 6
    with pytest.raises(ValueError, match="agencies"):
        clean_tracks(read_ibtracs(csv), agencies=["mars"])


def test_crop_frame_is_exactly_224_and_wraps_longitude():
    lat = np.linspace(-60, 60, 300)
    lon = np.linspace(-180, 180, 400, endpoint=False)
    bt = np.tile(lon, (lat.size, 1))                            # BT encodes longitude
    crop, nan_mask = crop_frame(bt + 400, lat, lon, 0.0, 179.9)
    assert crop.shape == (224, 224) and crop.dtype == np.float32 and not nan_mask.any()
    assert crop.max() == 375                                     # clipped
    crop, _ = crop_frame(250 + 0.5 * bt, lat, lon, 0.0, 179.9)
    j = 0                                                        # -180 is nearest to 179.9 (wrap)
    assert crop[0, 0] == pytest.approx(250 + 0.5 * lon[(j - 112) % 400])
    assert crop[0, -1] == pytest.approx(250 + 0.5 * lon[(j + 111) % 400])
    assert crop_frame(bt, lat, lon, 59.0, 0.0) is None           # window leaves the grid


def test_crop_frame_fills_small_holes_and_rejects_big_ones():
    lat, lon = np.linspace(-30, 30, 100), np.linspace(-180, 180, 200, endpoint=False)
    bt = np.full((100, 200), 250.0)
    bt[50, 100] = np.nan
    crop, nan_mask = crop_frame(bt, lat, lon, 0.0, 0.0, crop_size=50)
    assert np.isfinite(crop).all() and nan_mask.sum() == 1
    bt[30:70, 80:120] = np.nan
    assert crop_frame(bt, lat, lon, 0.0, 0.0, crop_size=50) is None


def test_frame_valid_rules():
    mask = np.zeros((100, 100), bool)
    assert frame_valid(mask)
    centre = mask.copy(); centre[50, 50] = True
    assert not frame_valid(centre)
    seam = mask.copy(); seam[:, 3] = True
    assert not frame_valid(seam)


def test_read_gridsat_applies_scale_and_fill(data):
    _, _, grid = data
    lat, lon, bt = read_gridsat(sorted(grid.glob("*.nc"))[1])
    assert bt.shape == (lat.size, lon.size) and np.isnan(bt).sum() == 1
    assert 150 < np.nanmean(bt) < 350


def test_build_and_load_round_trip(data, tmp_path):
    _, csv, grid = data
    manifest = build_tcbench(csv, grid, tmp_path, crop_size=64)
    assert manifest["n_storms"] == 3 and manifest["n_frames"] == 10
    assert sum(manifest["splits"].values()) == 3
    splits = json.loads((tmp_path / "splits.json").read_text())
    assert set(sum(splits.values(), [])) == {p.stem for p in (tmp_path / "storms").glob("*.nc")}
    frames = load_tcbench(tmp_path)
    assert len(frames) == 10 and frames.images.shape[1:] == (64, 64)
    assert frames.valid.sum() == 9                               # the hole near S2's centre
    assert 200 < manifest["stats"]["mean"][0] < 300


def test_build_rejects_missing_inputs(data, tmp_path):
    _, csv, grid = data
    with pytest.raises(FileNotFoundError, match="gridsat_dir"):
        build_tcbench(csv, tmp_path / "nope", tmp_path)
    with pytest.raises(FileNotFoundError, match="ibtracs_csv"):
        build_tcbench(tmp_path / "nope.csv", grid, tmp_path)
