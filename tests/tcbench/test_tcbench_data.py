"""SynthTC generator, encoders and baselines."""

import numpy as np
import pytest
import torch

from icml26.tcbench import Climatology, DvorakLite, SynthTC, TCFrames
from icml26.tcbench.baselines import pressure_to_t_number, t_number_to_pressure, t_number_to_wind
from icml26.tcbench.encoders import (ConvAutoencoder, EyeFeatures, PixelPCA, RandomConvEncoder,
                                     SupervisedCNN)


@pytest.fixture(scope="module")
def frames():
    return SynthTC(n_trajectories=30, image_size=64, seed=0).generate()


def test_synthtc_labels_follow_the_generative_process():
    f = SynthTC(n_trajectories=400, seed=0, render=False).generate()
    assert 0.2 < (f.pressure < 980).mean() < 0.32          # spec: ≈ 26% below 980
    assert 0.005 < (f.pressure < 920).mean() < 0.04        # spec: ≈ 2% below 920
    assert f.pressure.min() >= 1010 - 140 and f.pressure.max() <= 1010 - 2
    lengths = np.bincount(f.trajectory_id)
    assert lengths.min() >= 12 and lengths.max() <= 39


def test_wind_is_stronger_at_low_latitude_for_equal_pressure():
    f = SynthTC(n_trajectories=400, seed=1, render=False).generate()
    band = (f.pressure > 950) & (f.pressure < 960)
    assert f.wind[band & (f.lat < 15)].mean() > f.wind[band & (f.lat > 25)].mean() + 3


def test_synthtc_is_deterministic_and_labels_do_not_depend_on_rendering(frames):
    again = SynthTC(n_trajectories=30, image_size=64, seed=0).generate()
    labels = SynthTC(n_trajectories=30, seed=0, render=False).generate()
    np.testing.assert_array_equal(frames.images, again.images)
    np.testing.assert_array_equal(frames.pressure, labels.pressure)
    assert labels.images is None


def test_images_are_clipped_and_the_eye_is_warm_only_when_intense(frames):
    assert frames.images.min() >= 140 and frames.images.max() <= 375
    feats = EyeFeatures().fit_transform(frames.images)
    contrast = feats[:, 0] - feats[:, 1]                    # eye max minus cloud-ring mean
    strong, weak = frames.pressure < 950, frames.pressure > 985
    assert contrast[strong].mean() > contrast[weak].mean() + 10


def test_synthtc_bad_parameters():
    with pytest.raises(ValueError, match="n_trajectories"):
        SynthTC(n_trajectories=1).generate()
    with pytest.raises(ValueError, match="image_size"):
        SynthTC(image_size=8).generate()
    with pytest.raises(ValueError, match="km_per_px"):
        SynthTC(km_per_px=0.0).generate()


def test_tcframes_validates_lengths():
    with pytest.raises(ValueError, match="expected 2"):
        TCFrames(pressure=[1000.0, 990.0], trajectory_id=[0, 0], t=[0, 1], wind=[1.0])


def test_tcframes_records_follow_the_schema(frames):
    rows = frames.to_records()
    assert len(rows) == 30
    row = rows[0]
    assert row["num_timesteps"] == len(row["pressure"]) == row["frames"].shape[0]
    assert row["cyclone_id"] == f"{row['location']}_{row['year']}_{row['name']}"
    assert len(row["timestamps"][0].split(".")) == 4


def test_encoders_output_shapes_and_are_deterministic(frames):
    x = frames.images[:40]
    assert PixelPCA(8).fit(x).transform(x).shape == (40, 8)
    enc = RandomConvEncoder(random_state=0)
    np.testing.assert_array_equal(enc.transform(x), RandomConvEncoder(random_state=0).transform(x))
    assert enc.transform(x).shape == (40, 128)
    assert EyeFeatures().fit_transform(x).shape == (40, 5)


def test_autoencoder_reduces_reconstruction_error(frames):
    ae = ConvAutoencoder(64, 16, width=4, random_state=0).fit(frames.images[:96], epochs=3, batch_size=32)
    assert ae.loss_history_[-1] < ae.loss_history_[0]
    assert ae.transform(frames.images[:3]).shape == (3, 16)
    with pytest.raises(ValueError, match="multiple of 8"):
        ConvAutoencoder(image_size=60)


def test_supervised_cnn_learns_pressure(frames):
    cnn = SupervisedCNN(random_state=0).fit(frames.images[:160], frames.pressure[:160], epochs=3)
    assert cnn.loss_history_[-1] < cnn.loss_history_[0]
    out = cnn(torch.zeros(2, 1, 64, 64))
    assert out.shape == (2,)
    with pytest.raises(ValueError, match="inconsistent lengths"):
        SupervisedCNN().fit(frames.images[:3], frames.pressure[:2])


def test_dvorak_tables_and_inverse():
    assert t_number_to_pressure(4.0) == 976 and t_number_to_wind(6.5) == 127
    assert t_number_to_pressure(4.25) == pytest.approx((976 + 966) / 2)
    np.testing.assert_allclose(pressure_to_t_number(t_number_to_pressure([2.0, 5.5])), [2.0, 5.5])


def test_dvorak_lite_beats_climatology(frames):
    half = frames.trajectory_id < 15
    model = DvorakLite().fit(frames.images[half], frames.pressure[half])
    clim = Climatology().fit(frames.basin[half], frames.pressure[half])
    test = ~half
    mae = np.abs(model.predict(frames.images[test]) - frames.pressure[test]).mean()
    mae_clim = np.abs(clim.predict(frames.basin[test]) - frames.pressure[test]).mean()
    assert mae < 0.5 * mae_clim
    assert model.predict_wind(frames.images[:2]).shape == (2,)


def test_to_hf_dataset_schema(frames):
    pytest.importorskip("datasets")
    dd = frames.to_hf_dataset()
    assert set(dd) == {"train", "validation", "test"}
    assert sum(len(dd[k]) for k in dd) == 30
    assert {"cyclone_id", "frames", "frame_valid_mask", "pressure", "wind", "center"} <= set(dd["train"].column_names)


def test_background_temperature_is_what_the_renderer_uses(frames):
    from icml26.tcbench.data import background_temperature

    # weak storms at the image corner: clear sky = T_bg up to noise, PSF and cloud bands
    t_bg = background_temperature(frames.lat, frames.basin)
    np.testing.assert_allclose(t_bg, 300 - 0.35 * (frames.lat - 10) + 1.5 * (frames.basin - 2))
    warmest = frames.images.reshape(len(frames.images), -1).max(axis=1)
    assert np.corrcoef(warmest, t_bg)[0, 1] > 0.3


def test_e5_oracle_features_ancillary_inputs(frames):
    from icml26.tcbench.data import background_temperature
    from icml26.tcbench.experiment import _oracle_features

    with_lat = _oracle_features(frames, "abs_lat")
    with_bg = _oracle_features(frames, "background")
    without = _oracle_features(frames, "none")
    assert with_lat.shape[1] == without.shape[1] + 1
    np.testing.assert_array_equal(with_lat[:, :-1], without)
    np.testing.assert_allclose(with_bg[:, -1], background_temperature(frames.lat, frames.basin))


def test_generator_control_removes_the_saturation(frames):
    """saturate=False: same labels, and the cold cloud top keeps cooling below 980 hPa."""
    control = SynthTC(n_trajectories=30, image_size=64, seed=0, saturate=False).generate()
    np.testing.assert_array_equal(control.pressure, frames.pressure)
    moderate = frames.pressure > 985
    np.testing.assert_array_equal(control.images[moderate], frames.images[moderate])
    coldest = lambda f: f.images.reshape(len(f.images), -1).min(axis=1)   # noqa: E731
    deep = frames.pressure < 940
    assert coldest(control)[deep].mean() < coldest(frames)[deep].mean() - 10
    # with saturation the cold cloud top is flat in P_c below 980 hPa; without it, it is not
    intense = frames.pressure < 980
    slope = lambda f: np.polyfit(f.pressure[intense], coldest(f)[intense], 1)[0]  # noqa: E731
    assert abs(slope(frames)) < 0.1 < slope(control)


def test_fits_leave_the_global_torch_generator_alone(frames):
    ae = ConvAutoencoder(64, 16, width=4, random_state=0)
    cnn = SupervisedCNN(random_state=0)
    state = torch.get_rng_state()
    ae.fit(frames.images[:64], epochs=1, batch_size=32)
    cnn.fit(frames.images[:64], frames.pressure[:64], epochs=1)
    assert torch.equal(torch.get_rng_state(), state)
