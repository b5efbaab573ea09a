"""epitwin's torch components on a second device (fake here, CUDA where present)."""

import numpy as np
import pytest
import torch

from devicecheck import DeviceEntry, check_entry, device_cases, forward_backward
from fakecuda import FakeCuda
from icml26.epitwin import (EpiTwin, EpiTwinGenerator, GFBAttention, HybridSpatialPE,
                            LaBraMStyleReconstructor, LaBraMStyleTransformer,
                            MultiScaleDiscriminator, make_synthetic_seeg, montage_tensors)

X, MONTAGE, _ = make_synthetic_seeg(duration_s=4, n_shafts=3)


def _tensors(dev, k_lap=4):
    return {k: v.to(dev) for k, v in montage_tensors(MONTAGE, k_lap=k_lap).items()}


def _batch(dev):
    x = torch.as_tensor(X[None, :, :128]).repeat(2, 1, 1).to(dev)
    mask = torch.as_tensor(np.stack([MONTAGE.mask_for([0]), MONTAGE.mask_for([1])])).to(dev)
    return x, mask


def _generator(**kw):
    def run(dev):
        g = EpiTwinGenerator(d_model=8, n_layers=1, n_heads=2, patch=64, k_lap=4, dropout=0.0,
                             **kw).to(dev)
        x, mask = _batch(dev)
        F = torch.rand(x.shape[1], x.shape[1], generator=torch.Generator().manual_seed(0)).to(dev)
        return forward_backward(g, x, mask, _tensors(dev), F)
    return run


def _gfba(dev):
    att = GFBAttention(8, 2, geometry_start=True).to(dev)
    t = _tensors(dev)
    bias = att.bias(t["dist"], t["same_shaft"], torch.rand(len(t["dist"]), len(t["dist"])).to(dev))
    return {"bias": bias, "rbf": att.rbf(t["dist"])}


def _hspe(dev):
    t = _tensors(dev)
    pe = HybridSpatialPE(8, k_lap=4).to(dev)
    return forward_backward(pe, t["pos"], t["lap"], t["region"], t["tissue"], t["index"])


def _labram(dev):
    m = LaBraMStyleTransformer(d_model=8, n_layers=1, n_heads=2, patch=64, dropout=0.0,
                               residual_start=True).to(dev)
    x, mask = _batch(dev)
    return forward_backward(m, x, mask, _tensors(dev))


def _discriminator(dev):
    x = torch.randn(2, 2, 256, generator=torch.Generator().manual_seed(0)).to(dev)
    return forward_backward(MultiScaleDiscriminator().to(dev), x,
                            reduce=lambda out: sum(s.sum() + sum(f.pow(2).mean() for f in fs)
                                                   for s, fs in out))


def _estimator(cls, **kw):
    def run(dev):
        est = cls(d_model=8, n_layers=1, n_heads=2, patch=64, epochs=2, batch_size=4, window=128,
                  stride=128, dropout=0.0, device=dev, **kw).fit(X[:, :512], MONTAGE)
        return {"pred": est.predict(X[:, :256], MONTAGE, masked_shafts=(0,)),
                "history": [{k: v for k, v in h.items()} for h in est.history_]}
    return run


ENTRIES = [
    DeviceEntry("epitwin.montage_tensors", lambda dev: _tensors(dev)),
    DeviceEntry("epitwin.EpiTwinGenerator", _generator()),
    DeviceEntry("epitwin.EpiTwinGenerator without HSPE, plain attention",
                _generator(use_hspe=False, use_gfba=False)),
    DeviceEntry("epitwin.GFBAttention", _gfba),
    DeviceEntry("epitwin.HybridSpatialPE", _hspe),
    DeviceEntry("epitwin.LaBraMStyleTransformer", _labram),
    DeviceEntry("epitwin.MultiScaleDiscriminator", _discriminator, rtol=1e-3, atol=1e-4),
    DeviceEntry("epitwin.EpiTwin", _estimator(EpiTwin, k_lap=4, adversarial=True)),
    DeviceEntry("epitwin.LaBraMStyleReconstructor", _estimator(LaBraMStyleReconstructor)),
]

NO_DEVICE = {
    "IDWReconstructor": "numpy inverse-distance interpolation",
    "RidgeReconstructor": "scikit-learn ridge regression",
    "StateRidgeReconstructor": "scikit-learn ridge regression",
    "InferredStateRidge": "scikit-learn ridge regression",
    "mne_interpolate": "MNE's spherical-spline interpolation (numpy)",
}


@pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
def test_device(entry, kind):
    check_entry(entry, kind)


def test_estimator_device_is_validated():
    with pytest.raises(ValueError, match="device must be"):
        EpiTwin(epochs=1, window=128, stride=128, patch=64, device="gpu").fit(X[:, :512], MONTAGE)


def test_epitwin_model_lives_on_the_device_and_predicts_numpy():
    with FakeCuda() as fake:
        est = EpiTwin(d_model=8, n_layers=1, n_heads=2, patch=64, k_lap=4, epochs=1, batch_size=4,
                      window=128, stride=128, adversarial=False, device="cuda").fit(X[:, :512], MONTAGE)
        assert {p.device for p in est.model_.parameters()} == {fake.device}
        assert isinstance(est.predict(X[:, :256], MONTAGE), np.ndarray)
