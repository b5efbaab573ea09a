"""spectral_rl's torch component (graph-drawing features) on a second device."""

import numpy as np
import pytest

from devicecheck import DeviceEntry, check_entry, device_cases
from icml26.spectral_rl import GraphDrawingFeatures


def _fit(dev):
    rng = np.random.default_rng(0)
    s = rng.integers(0, 6, 200)
    s2 = np.clip(s + rng.integers(-1, 2, 200), 0, 5)
    learner = GraphDrawingFeatures(n_components=2, lr=1e-2, n_steps=30, batch_size=16,
                                   device=dev).fit(s, s2, 6)
    return {"features": learner.features_, "loss": learner.loss_curve_}


ENTRIES = [DeviceEntry("spectral_rl.GraphDrawingFeatures", _fit)]


@pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
def test_device(entry, kind):
    check_entry(entry, kind)


def test_device_is_validated():
    with pytest.raises(ValueError, match="device must be"):
        GraphDrawingFeatures(n_components=1, n_steps=1, device="tpu").fit(
            np.array([0, 1]), np.array([1, 0]), 2)
