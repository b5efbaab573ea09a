"""Synthetic generator, montage validation, windowing and the EDF / FIF / BIDS loaders."""

import mne
import numpy as np
import pytest

from icml26.epitwin import SEEGMontage, load_seeg, make_synthetic_seeg, raw_to_arrays, to_raw, windows


@pytest.fixture(scope="module")
def patient():
    return make_synthetic_seeg(brain_seed=0, patient_seed=3, duration_s=12, n_shafts=3)


def test_generator_is_deterministic_and_shaped(patient):
    X, montage, info = patient
    X2, montage2, _ = make_synthetic_seeg(brain_seed=0, patient_seed=3, duration_s=12, n_shafts=3)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(montage.pos, montage2.pos)
    assert X.dtype == np.float32 and X.shape == (montage.n_contacts, 12 * 256)
    assert set(np.unique(montage.shaft)) == {0, 1, 2}
    # contacts 3.5 mm apart along each shaft, inside the ellipsoid
    for s in montage.shafts:
        p = montage.pos[montage.shaft == s]
        np.testing.assert_allclose(np.linalg.norm(np.diff(p, axis=0), axis=1), 3.5, atol=1e-9)
    assert np.all(np.sum((montage.pos / [65, 55, 50]) ** 2, 1) <= 1 + 1e-9)
    assert info["state"].shape == (X.shape[1],) and set(np.unique(info["state"])) <= {0, 1}
    # unit-variance signal plus local noise (0.3) and white noise (0.05)
    assert abs(X.std(1).mean() - np.sqrt(1 + 0.3 ** 2 + 0.05 ** 2)) < 0.1


def test_brain_seed_shared_patient_seed_changes_implant(patient):
    _, montage, info = patient
    _, other, info2 = make_synthetic_seeg(brain_seed=0, patient_seed=4, duration_s=4, n_shafts=3)
    np.testing.assert_array_equal(info["source_pos"], info2["source_pos"])
    assert other.n_contacts != montage.n_contacts or not np.allclose(other.pos, montage.pos)


def test_montage_validation():
    pos = np.zeros((3, 3))
    with pytest.raises(ValueError, match="montage.pos"):
        SEEGMontage(np.zeros((3, 2)), [0, 0, 0], [0, 1, 2])
    with pytest.raises(ValueError, match="montage.pos contains NaN"):
        SEEGMontage(np.full((3, 3), np.nan), [0, 0, 0], [0, 1, 2])
    with pytest.raises(ValueError, match="montage.shaft"):
        SEEGMontage(pos, [0, 0], [0, 1, 2])
    with pytest.raises(ValueError, match="montage.tissue"):
        SEEGMontage(pos, [0, 0, 0], [0, 1, 2], tissue=[0, 1, 5])
    m = SEEGMontage(pos, [0, 0, 1], [0, 1, 0])
    with pytest.raises(ValueError, match="does not have"):
        m.mask_for([7])
    with pytest.raises(ValueError, match="every contact"):
        m.mask_for([0, 1])


def test_windows_bad_input():
    with pytest.raises(ValueError, match="shorter than one window"):
        windows(np.zeros((2, 100)), T=512)
    with pytest.raises(ValueError, match="X contains NaN"):
        windows(np.full((2, 600), np.nan))
    assert windows(np.zeros((2, 1024)), 512, 256).shape == (3, 2, 512)


def test_raw_round_trip_fif(tmp_path, patient):
    X, montage, _ = patient
    raw = to_raw(X, montage, 256.0)
    assert set(raw.get_channel_types()) == {"seeg"}
    path = tmp_path / "sub-01_ieeg.fif"
    raw.save(path, verbose="error")
    X2, m2, fs = load_seeg(path)
    assert fs == 256.0
    np.testing.assert_allclose(X2, X, atol=1e-4)
    np.testing.assert_allclose(m2.pos, montage.pos, atol=1e-3)
    np.testing.assert_array_equal(m2.shaft, montage.shaft)
    np.testing.assert_array_equal(m2.index, montage.index)


def test_edf_needs_positions(tmp_path, patient):
    X, montage, _ = patient
    raw = to_raw(X[:, :1024], montage, 256.0)
    path = tmp_path / "rec.edf"
    mne.export.export_raw(path, raw, fmt="edf", verbose="error")
    with pytest.raises(ValueError, match="contacts without positions"):
        load_seeg(path)
    positions = dict(zip(montage.names, montage.pos))
    X2, m2, fs = load_seeg(path, positions=positions)
    assert X2.shape == (montage.n_contacts, 1024) and fs == 256.0
    np.testing.assert_allclose(X2, X[:, :1024], atol=0.02)  # EDF stores 16-bit samples
    np.testing.assert_array_equal(m2.index, montage.index)


def test_bids_round_trip(tmp_path, patient):
    mne_bids = pytest.importorskip("mne_bids")
    X, montage, _ = patient
    raw = to_raw(X[:, :1024], montage, 256.0)
    raw.set_montage(mne.channels.make_dig_montage(
        ch_pos={n: p / 1000 for n, p in zip(montage.names, montage.pos)}, coord_frame="mni_tal"),
        verbose="error")
    bids_path = mne_bids.BIDSPath(subject="01", session="01", task="rest", datatype="ieeg",
                                  root=tmp_path)
    mne_bids.write_raw_bids(raw, bids_path, format="EDF", allow_preload=True, overwrite=True,
                            verbose="error")
    X2, m2, fs = load_seeg(bids_path)
    assert X2.shape == (montage.n_contacts, 1024)
    np.testing.assert_allclose(m2.pos, montage.pos, atol=0.1)


def test_loader_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a file"):
        load_seeg(tmp_path / "missing.edf")
    bad = tmp_path / "x.txt"
    bad.write_text("x")
    with pytest.raises(ValueError, match="must be an .edf"):
        load_seeg(bad)
    info = mne.create_info(["LA1", "noNumber"], 256.0, "seeg")
    raw = mne.io.RawArray(np.zeros((2, 300)), info, verbose="error")
    with pytest.raises(ValueError, match="does not end in a contact number"):
        raw_to_arrays(raw, positions={"LA1": (0, 0, 0), "noNumber": (1, 0, 0)})
