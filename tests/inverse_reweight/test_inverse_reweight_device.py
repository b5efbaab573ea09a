"""inverse_reweight's torch components on a second device (fake here, CUDA where present)."""

import numpy as np
import pytest
import torch

from devicecheck import DeviceEntry, check_entry, device_cases, forward_backward
from fakecuda import FakeCuda
from icml26.inverse_reweight import (BalancedSoftmaxLoss, ClassBalancedLoss, CNN1dNet,
                                     CosineClassifier, DRWSchedule, FocalLoss,
                                     InverseReweightLoss, LDAMLoss, LongTailTrainer,
                                     MittagLefflerLR, MLPNet, class_balanced_weights,
                                     inverse_weights, make_gaussian_lt, per_class_mean,
                                     prior_weights, warmup_cosine_lr)

COUNTS = [30, 10, 3]


def _batch(dev, n=6):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(n, 3, generator=g).to(dev).requires_grad_(True)
    targets = torch.tensor([0, 1, 2, 0, 0, 1][:n]).to(dev)
    return logits, targets


def _loss(make):
    def run(dev):
        loss_fn = make().to(dev)
        logits, targets = _batch(dev)
        loss = loss_fn(logits, targets)
        loss.backward()
        return {"loss": loss, "grad": logits.grad}
    return run


def _ldam_drw(dev):
    drw = DRWSchedule(COUNTS, switch_epoch=1)
    loss_fn = LDAMLoss(COUNTS, weight=drw.weights(1)).to(dev)       # weights set, then moved
    logits, targets = _batch(dev)
    out = {"loss": loss_fn(logits, targets)}
    loss_fn.set_weight(drw.weights(2))                              # set while on the device
    out["after_set"] = loss_fn(logits, targets)
    return out


def _ilr_epochs(dev):
    loss_fn = InverseReweightLoss(COUNTS, switch_epoch=1, prior="inv_sqrt_freq").to(dev)
    logits, targets = _batch(dev)
    out = {}
    for epoch in range(3):
        loss_fn.set_epoch(epoch)
        out[epoch] = loss_fn(logits, targets)
    out["weights"] = loss_fn.last_weights
    return out


def _schedules(dev):
    p = torch.nn.Parameter(torch.ones(2).to(dev))
    opt = torch.optim.SGD([p], lr=0.1)
    sched = MittagLefflerLR(opt, np.array(COUNTS), 10, 2, 5)
    cos = warmup_cosine_lr(torch.optim.SGD([p], lr=0.1), 10, 2)
    lrs = []
    for _ in range(4):
        p.sum().backward()
        opt.step()
        sched.step()
        cos.step()
        lrs.append(opt.param_groups[0]["lr"])
    return {"p": p.detach(), "lrs": lrs}


def _trainer(method, **kw):
    def run(dev):
        X, y, Xt, _, _ = make_gaussian_lt(n_classes=3, n_features=8, n_max=20, imbalance_ratio=5,
                                          seed=0)
        clf = LongTailTrainer(method, epochs=3, network="mlp", batch_size=16, device=dev,
                              **kw).fit(X, y)
        return {"logits": clf.decision_function(Xt), "features": clf.transform(Xt),
                "pred": clf.predict(Xt), "loss": clf.per_sample_loss(Xt[:5], y[:5]),
                "history": clf.history_}
    return run


ENTRIES = [
    DeviceEntry("inverse_reweight.InverseReweightLoss", _loss(lambda: InverseReweightLoss(COUNTS))),
    DeviceEntry("inverse_reweight.InverseReweightLoss epochs and macro weights", _ilr_epochs),
    DeviceEntry("inverse_reweight.inverse_weights",
                lambda dev: inverse_weights(torch.tensor([1.0, 2.0, 4.0]).to(dev),
                                            torch.tensor([True, True, False]).to(dev), 0.1,
                                            prior_weights(COUNTS, "inv_freq").to(dev)),
                covers=("inverse_reweight.prior_weights",)),
    DeviceEntry("inverse_reweight.per_class_mean",
                lambda dev: per_class_mean(torch.arange(6.0).to(dev),
                                           torch.tensor([0, 1, 1, 2, 2, 2]).to(dev), 4)),
    DeviceEntry("inverse_reweight.ClassBalancedLoss", _loss(lambda: ClassBalancedLoss(COUNTS)),
                covers=("inverse_reweight.class_balanced_weights",)),
    DeviceEntry("inverse_reweight.FocalLoss", _loss(lambda: FocalLoss(gamma=2.0))),
    DeviceEntry("inverse_reweight.LDAMLoss", _loss(lambda: LDAMLoss(COUNTS))),
    DeviceEntry("inverse_reweight.LDAMLoss with DRW weights", _ldam_drw,
                covers=("inverse_reweight.DRWSchedule",)),
    DeviceEntry("inverse_reweight.BalancedSoftmaxLoss", _loss(lambda: BalancedSoftmaxLoss(COUNTS))),
    DeviceEntry("inverse_reweight.CosineClassifier",
                lambda dev: forward_backward(CosineClassifier(4, 3).to(dev),
                                             torch.randn(2, 4).to(dev))),
    DeviceEntry("inverse_reweight.CNN1dNet",
                lambda dev: forward_backward(CNN1dNet(3, length=12, channels=4, feature_dim=8)
                                             .to(dev), torch.randn(2, 12).to(dev))),
    DeviceEntry("inverse_reweight.MLPNet",
                lambda dev: forward_backward(MLPNet(3, in_features=5, hidden=8, feature_dim=4)
                                             .to(dev), torch.randn(2, 5).to(dev))),
    DeviceEntry("inverse_reweight.MittagLefflerLR", _schedules,
                covers=("inverse_reweight.warmup_cosine_lr",)),
    DeviceEntry("inverse_reweight.LongTailTrainer ilr", _trainer("ilr")),
    DeviceEntry("inverse_reweight.LongTailTrainer ce_drw", _trainer("ce_drw", switch_frac=0.5)),
    DeviceEntry("inverse_reweight.LongTailTrainer ldam_drw", _trainer("ldam_drw", switch_frac=0.5)),
]

NO_DEVICE = {
    "make_long_tailed": "numpy subsampling of a dataset",
    "long_tail_counts": "numpy class counts",
    "load_mnist1d": "reads numpy arrays",
    "load_mnist1d_lt": "reads numpy arrays",
    "make_gaussian_lt": "numpy synthetic data",
}


@pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
def test_device(entry, kind):
    check_entry(entry, kind)


def test_ldam_weight_is_a_buffer_moved_by_to():
    loss_fn = LDAMLoss(COUNTS, weight=[1.0, 2.0, 3.0])
    assert "weight" in dict(loss_fn.named_buffers())
    with FakeCuda() as fake:
        assert loss_fn.to(fake.device).weight.device == fake.device


def test_trainer_device_is_validated():
    X, y, _, _, _ = make_gaussian_lt(n_classes=3, n_features=4, n_max=10, imbalance_ratio=2, seed=0)
    with pytest.raises(ValueError, match="device must be"):
        LongTailTrainer("ce", epochs=1, network="mlp", device="tpu").fit(X, y)


def test_trainer_on_device_keeps_model_there_and_returns_numpy():
    X, y, _, _, _ = make_gaussian_lt(n_classes=3, n_features=4, n_max=10, imbalance_ratio=2, seed=0)
    with FakeCuda() as fake:
        clf = LongTailTrainer("ilr", epochs=2, network="mlp", device="cuda").fit(X, y)
        assert {p.device for p in clf.model_.parameters()} == {fake.device}
        assert clf.loss_.last_weights.device == fake.device
        assert isinstance(clf.decision_function(X), np.ndarray)


def test_decision_function_follows_a_model_moved_after_fit():
    X, y, _, _, _ = make_gaussian_lt(n_classes=3, n_features=4, n_max=10, imbalance_ratio=2, seed=0)
    clf = LongTailTrainer("ce", epochs=1, network="mlp").fit(X, y)
    expected = clf.decision_function(X)
    with FakeCuda() as fake:
        clf.model_.to(fake.device)
        np.testing.assert_array_equal(clf.decision_function(X), expected)
