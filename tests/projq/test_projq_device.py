"""projq's torch components on a second device (fake here, CUDA where present)."""

import pytest
import torch

from devicecheck import DeviceEntry, check_entry, device_cases, forward_backward
from fakecuda import FakeCuda
from icml26.projq import (ActivationStats, GroupQuantizer, ProjQ, gptq_eora_alternation,
                          gptq_objective, gptq_quantize, loftq_init, lordq_init, quantize_model,
                          residual_profile, rtn_quantize, synthetic_layer, to_peft_lora,
                          uncorrectable_residual)
from icml26.projq import projq as projq_module
from icml26.projq.tail import prefix_hidden, tail_model
from icml26.zoo import tiny_llama


def _layer(dev, m=8, n=16, tokens=64):
    W, X = synthetic_layer(m, n, tokens=tokens, seed=0)
    return W.to(dev), X.to(dev)


def _stats(X):
    return ActivationStats.from_tensor(X, "layer")


def _stats_hook(dev):
    W, X = _layer(dev)
    lin = torch.nn.Linear(16, 8).to(dev)
    stats, handle = ActivationStats.from_module_hook(lin, "lin")
    lin(X[:20])
    lin(X[20:])
    handle.remove()
    return {"G": stats.G, "H": stats.hessian(), "S": stats.sqrt_gram("last_batch"), "N": stats.N}


def _projq(svd, projector="activation"):
    def run(dev):
        W, X = _layer(dev)
        fitted = ProjQ(bits=2, group_size=8, rank=2, max_iter=2, svd=svd, projector=projector,
                       random_state=0).fit(W, _stats(X))
        return {"W_hat": fitted.transform(), "gptq": fitted.W_gptq_, "loss": fitted.history_}
    return run


def _lordq(svd):
    def run(dev):
        W, X = _layer(dev)
        W_hat = rtn_quantize(W, GroupQuantizer(2, 8))
        return lordq_init(W, W_hat, _stats(X), 2, lora_alpha=4.0, svd=svd, random_state=0)
    return run


def _residuals(dev):
    W, X = _layer(dev)
    W_hat = rtn_quantize(W, GroupQuantizer(2, 8))
    return {"profile": residual_profile(W, W_hat, _stats(X), (0, 2)),
            "rho": uncorrectable_residual(W, W_hat, _stats(X), 2),
            "objective": gptq_objective(W, W_hat, _stats(X).hessian())}


def _model():
    return tiny_llama(vocab=24, hidden=16, layers=1, heads=2, seed=0)


def _quantize_and_lora(method):
    def run(dev):
        model = _model().to(dev)
        ids = torch.randint(24, (2, 8), generator=torch.Generator().manual_seed(0))
        report = quantize_model(model, ids, method=method, bits=2, group_size=16, rank=2, seed=0)
        peft_model = to_peft_lora(model, report, lora_alpha=4)
        out = forward_backward(peft_model, ids.to(dev), reduce=lambda o: o.logits.sum())
        grads = {n: g for n, g in out["grads"].items() if "lora_A" in n}
        return {"logits": out["out"].logits, "lora_A_grads": grads,
                "A": {n: l.A for n, l in report.layers.items()}}
    return run


ENTRIES = [
    DeviceEntry("projq.GroupQuantizer",
                lambda dev: GroupQuantizer(3, 8).quantize(_layer(dev)[0])),
    DeviceEntry("projq.GroupQuantizer nf4",
                lambda dev: GroupQuantizer(4, 8, nf4=True).quantize(_layer(dev)[0])),
    DeviceEntry("projq.rtn_quantize", lambda dev: rtn_quantize(_layer(dev)[0], GroupQuantizer(2, 8))),
    DeviceEntry("projq.gptq_quantize",
                lambda dev: gptq_quantize(_layer(dev)[0], _stats(_layer(dev)[1]).hessian(),
                                          GroupQuantizer(2, 8), block_size=4)),
    DeviceEntry("projq.ActivationStats from_tensor", lambda dev: {
        "G": _stats(_layer(dev)[1]).G, "S": _stats(_layer(dev)[1]).sqrt_gram()}),
    DeviceEntry("projq.ActivationStats from_module_hook", _stats_hook),
    DeviceEntry("projq.ProjQ", _projq("exact")),
    DeviceEntry("projq.ProjQ randomized SVD", _projq("randomized")),
    DeviceEntry("projq.ProjQ weight-space projector", _projq("exact", "weight_space")),
    DeviceEntry("projq.lordq_init", _lordq("exact")),
    DeviceEntry("projq.lordq_init randomized", _lordq("randomized")),
    DeviceEntry("projq.gptq_eora_alternation",
                lambda dev: gptq_eora_alternation(_layer(dev)[0], _stats(_layer(dev)[1]),
                                                  GroupQuantizer(2, 8), 2, n_iter=2)),
    DeviceEntry("projq.loftq_init",
                lambda dev: loftq_init(_layer(dev)[0], GroupQuantizer(2, 8), 2, n_iter=2)),
    DeviceEntry("projq.residual_profile", _residuals,
                covers=("projq.uncorrectable_residual", "projq.gptq_objective")),
    DeviceEntry("projq.quantize_model projq", _quantize_and_lora("projq"),
                covers=("projq.to_peft_lora", "projq.QuantizedModelReport", "projq.LayerReport")),
    DeviceEntry("projq.quantize_model loftq", _quantize_and_lora("loftq")),
]

NO_DEVICE = {
    "synthetic_layer": "builds seeded CPU tensors (W, X); move them with .to(device)",
}


@pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
def test_device(entry, kind):
    check_entry(entry, kind)


def test_tail_model_stays_on_the_models_device():
    full = tiny_llama(vocab=24, hidden=16, layers=2, heads=2, seed=0)
    ids = torch.randint(24, (2, 5), generator=torch.Generator().manual_seed(0))
    expected = full(ids).logits
    with FakeCuda() as fake:
        full.to(fake.device)
        tail = tail_model(full, 1)
        assert {p.device for p in tail.parameters()} == {fake.device}
        h = prefix_hidden(full, ids.to(fake.device), 1)
        assert torch.allclose(tail(inputs_embeds=h).logits.cpu(), expected, atol=1e-5)


def _flip_every_other_pair(svd):
    """An SVD that returns the other sign of every second singular pair (what another LAPACK
    or cuSOLVER may return: the pairs are defined up to a common sign)."""
    def flipped(M, full_matrices=True):
        U, S, Vh = svd(M, full_matrices=full_matrices)
        signs = torch.ones(S.shape[-1], dtype=U.dtype, device=U.device)
        signs[1::2] = -1
        return torch.return_types.linalg_svd((U * signs, S, Vh * signs[:, None]))
    return flipped


@pytest.mark.parametrize("init", ["loftq", "lordq"])
def test_adapters_do_not_depend_on_the_svd_sign_choice(monkeypatch, init):
    W, X = _layer("cpu")

    def adapters():
        if init == "loftq":
            return loftq_init(W, GroupQuantizer(2, 8), 3, n_iter=2)[1:]
        return lordq_init(W, rtn_quantize(W, GroupQuantizer(2, 8)), _stats(X), 3)

    A, B = adapters()
    monkeypatch.setattr(torch.linalg, "svd", _flip_every_other_pair(torch.linalg.svd))
    A2, B2 = adapters()
    assert torch.equal(A, A2) and torch.equal(B, B2)


def test_svd_flip_keeps_the_product_and_fixes_the_sign():
    M = torch.randn(6, 5, generator=torch.Generator().manual_seed(0))
    U, S, Vh = torch.linalg.svd(M, full_matrices=False)
    U2, Vh2 = projq_module.svd_flip(-U, -Vh)
    assert torch.equal(U2, projq_module.svd_flip(U, Vh)[0])
    assert torch.allclose(U2 * S @ Vh2, M, atol=1e-5)
    assert bool((U2.gather(0, U2.abs().argmax(0)[None]) > 0).all())


def test_activation_stats_accumulate_on_the_data_device():
    with FakeCuda() as fake:
        stats = ActivationStats(3)
        stats.update(torch.ones(4, 3).to(fake.device))
        stats.update(torch.ones(2, 3))                      # a CPU batch joins the device sum
        assert stats.G.device == fake.device and stats.N == 6

FOLLOWS_INPUTS = {"ProjQ": "fit(W, stats) computes on the device of W and the statistics"}
