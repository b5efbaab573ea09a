"""lcl's torch components on a second device (fake here, CUDA where present)."""

import numpy as np
import pytest
import torch

from devicecheck import DeviceEntry, check_entry, device_cases, forward_backward
from fakecuda import FakeCuda
from icml26.lcl import (LCL, NBVAE, FateCompositionRegressor, LCLEncoder, lcl_loss,
                        simulate_lineage_tracing)


def _data():
    return simulate_lineage_tracing(n_clones=12, n_genes=300, seed=0)


def _lcl(dev):
    data = _data()
    model = LCL(hidden_dims=(16, 8), embedding_dim=4, batch_size=8, max_epochs=2, warmup_epochs=0,
                device=dev).fit(data.X, data.clone)
    return {"base": model.transform(data.X), "proj": model.transform(data.X, space="projection"),
            "history": model.history_}


def _fate(dev):
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(40, 3))
    Y = np.exp(np.c_[Z[:, 0], -Z[:, 0]])
    Y /= Y.sum(1, keepdims=True)
    head = FateCompositionRegressor(hidden=4, max_epochs=5, batch_size=16, device=dev).fit(Z, Y)
    return {"pred": head.predict(Z), "score": head.score(Z, Y)}


def _nbvae(dev):
    counts = np.random.default_rng(0).poisson(2.0, size=(32, 12))
    vae = NBVAE(n_latent=2, hidden=8, max_epochs=2, batch_size=16, device=dev).fit(counts)
    return {"z": vae.transform(counts), "loss": vae.history_["loss"]}


ENTRIES = [
    DeviceEntry("lcl.LCLEncoder",
                lambda dev: forward_backward(LCLEncoder(10, hidden_dims=(8, 4), embedding_dim=3)
                                             .to(dev), torch.randn(5, 10).to(dev))),
    DeviceEntry("lcl.lcl_loss",
                lambda dev: lcl_loss(torch.randn(4, 3).to(dev), torch.randn(4, 3).to(dev),
                                     torch.randn(2, 3).to(dev), 0.5, 0.1)),
    DeviceEntry("lcl.LCL", _lcl),
    DeviceEntry("lcl.FateCompositionRegressor", _fate),
    DeviceEntry("lcl.NBVAE", _nbvae, rng_draws=("randn_like", "dropout"),
                note="the reparameterisation noise and the encoder's dropout masks are drawn on "
                     "the device (CUDA's generator)"),
]

NO_DEVICE = {
    "clone_fate_compositions": "numpy counting of clone fates",
    "kl_composition": "numpy KL between composition arrays",
    "pca_embedding": "scikit-learn PCA",
    "pca_lda_embedding": "scikit-learn PCA and linear discriminant analysis on numpy arrays",
}


@pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
def test_device(entry, kind):
    check_entry(entry, kind)


@pytest.mark.parametrize("make", [
    lambda: LCL(max_epochs=1, device="gpu"),
    lambda: NBVAE(max_epochs=1, device="gpu"),
    lambda: FateCompositionRegressor(max_epochs=1, device="gpu"),
])
def test_device_argument_is_validated(make):
    data = _data()
    est = make()
    with pytest.raises(ValueError, match="device must be"):
        if isinstance(est, LCL):
            est.fit(data.X, data.clone)
        elif isinstance(est, NBVAE):
            est.fit(np.ones((4, 3)))
        else:
            est.fit(np.ones((4, 2)), np.full((4, 2), 0.5))


def test_nbvae_on_device_transforms_numpy():
    counts = np.random.default_rng(0).poisson(2.0, size=(16, 6))
    with FakeCuda() as fake:
        vae = NBVAE(n_latent=2, hidden=4, max_epochs=1, device="cuda").fit(counts)
        assert next(vae.module_.parameters()).device == fake.device
        assert isinstance(vae.transform(counts), np.ndarray)
