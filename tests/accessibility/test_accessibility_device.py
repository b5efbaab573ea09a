"""accessibility's torch components on a second device (fake here, CUDA where present)."""

import numpy as np
import pytest
import torch

from devicecheck import DeviceEntry, check_entry, device_cases, forward_backward
from fakecuda import FakeCuda
from icml26.accessibility import (DiagnosticPathway, LayerStats, accessibility_metrics,
                                  build_pathway_cache, capacity_metrics, collect_layer_stats,
                                  fit_pathway, fit_shared_bias, load_pathway_cache, logit_lens,
                                  model_parts, participation_ratio, planted_states, profile,
                                  profile_pass, profile_table, readout_basis,
                                  readout_basis_from_weights, residual_states, rms_normalize,
                                  save_pathway_cache, spectrum)
from icml26.accessibility.data import planted_pathway_cache
from icml26.zoo import tiny_llama


def _model(dev):
    return tiny_llama(vocab=32, hidden=16, layers=2, heads=2, seed=0).to(dev)


def _ids(rows=4, tokens=10, seed=0):
    return torch.randint(0, 32, (rows, tokens), generator=torch.Generator().manual_seed(seed))


def _states(dev):
    return torch.randn(2, 50, 6, dtype=torch.float64,
                       generator=torch.Generator().manual_seed(0)).to(dev)


def _layer_stats(dev):
    a, b = LayerStats(6), LayerStats(6)
    x = _states(dev)
    a.update(x[0], torch.arange(50).ge(3).to(dev))
    b.update(x[1])
    merged = a.copy().merge(b)
    return {"mean": merged.mean(), "cov": merged.cov(), "raw": merged.cov(centered=False),
            "n": merged.n_tokens}


def _metrics(dev):
    cov = torch.cov(_states(dev)[0].T)
    Q, sv = readout_basis_from_weights(torch.randn(9, 6, dtype=torch.float64).to(dev),
                                       torch.rand(6, dtype=torch.float64).to(dev))
    return {"capacity": capacity_metrics(cov), "access": accessibility_metrics(cov, Q, sv, ks=(1, 2)),
            "spectrum": spectrum(cov), "pr": participation_ratio(spectrum(cov)),
            "rms": rms_normalize(_states(dev))}


def _probe(dev):
    model = _model(dev)
    ids = _ids().to(dev)
    mask = torch.ones_like(ids)
    mask[0, -2:] = 0
    states = residual_states(model, ids, attention_mask=mask)
    lens = logit_lens(model, states, torch.roll(ids, -1, 1))
    stats = collect_layer_stats(model, ids, mask, skip=1, batch_size=2)
    Q, sv = readout_basis(model)
    return {"states": states, "lens": lens, "table": profile_table(stats, Q, sv, ks=(2,)).to_dict("list"),
            "profile": profile(model, ids, skip=1, ks=(2,), batch_size=3).to_dict("list"),
            "gamma": model_parts(model).gamma}


def _profile_pass(dev):
    run = profile_pass(_model(dev), _ids(), variants=(("none", 1), ("rms", 0)), budgets=(2, 4),
                       batch_size=3)
    return {"stats": {k: [s.cov() for s in v] for k, v in run.stats.items()}, "lens": run.lens,
            "align": run.align}


def _pathway(bypass, injection="post_norm"):
    def run(dev):
        path = DiagnosticPathway(8, rank=3, bypass=bypass, injection=injection).to(dev)
        final, src = torch.randn(4, 8).to(dev), torch.randn(4, 8).to(dev)
        norm = torch.nn.RMSNorm(8).to(dev) if injection == "pre_norm" else None
        with torch.no_grad():
            path.B.fill_(0.1)                   # a non-zero bypass (B starts at zero)
        return forward_backward(path, final, src, norm)
    return run


def _cache(dev, tmp=None):
    model = _model(dev)
    return build_pathway_cache(model, _ids(3, 12, 0), _ids(2, 12, 1), _ids(2, 12, 2), [1], skip=2,
                               batch_size=2, path=tmp)


def _cache_entry(dev):
    cache = _cache(dev)
    return {"train": vars(cache.train), "test": vars(cache.test), "W": cache.unembedding,
            "gamma": cache.gamma}


def _fit(control=None, injection="post_norm"):
    def run(dev):
        cache = planted_pathway_cache(d=8, vocab=16, n_train=256, n_dev=64, n_test=64, seed=0)
        shared = fit_shared_bias(cache, steps=5, lr=0.05, batch_size=64, device=dev)
        res = fit_pathway(cache, cache.meta["hidden_layer"], rank=2, steps=6, lr=0.05,
                          batch_size=64, eval_every=3, control=control, injection=injection,
                          bias=shared.pathway.bias, seed=0, device=dev)
        result = res.to_dict(token_ce=True)
        result.pop("seconds")
        return {"result": result, "bias": shared.pathway.bias,
                "A": res.pathway.A}
    return run


ENTRIES = [
    DeviceEntry("accessibility.LayerStats", _layer_stats),
    DeviceEntry("accessibility.capacity_metrics", _metrics,
                covers=("accessibility.accessibility_metrics", "accessibility.spectrum",
                        "accessibility.participation_ratio", "accessibility.rms_normalize",
                        "accessibility.readout_basis_from_weights")),
    DeviceEntry("accessibility.profile", _probe, outputs="any",
                covers=("accessibility.residual_states", "accessibility.logit_lens",
                        "accessibility.collect_layer_stats", "accessibility.profile_table",
                        "accessibility.readout_basis", "accessibility.model_parts",
                        "accessibility.ModelParts")),
    DeviceEntry("accessibility.profile_pass", _profile_pass),
    DeviceEntry("accessibility.DiagnosticPathway", _pathway(True)),
    DeviceEntry("accessibility.DiagnosticPathway bias-only", _pathway(False)),
    DeviceEntry("accessibility.DiagnosticPathway pre-norm", _pathway(True, "pre_norm")),
    DeviceEntry("accessibility.build_pathway_cache", _cache_entry, outputs="cpu",
                covers=("accessibility.PathwayCache",)),
    DeviceEntry("accessibility.fit_pathway", _fit(), outputs="any",
                covers=("accessibility.fit_shared_bias", "accessibility.PathwayResult")),
    DeviceEntry("accessibility.fit_pathway shuffled, pre-norm", _fit("shuffled", "pre_norm"),
                outputs="any"),
]

NO_DEVICE = {
    "bootstrap_gain": "numpy bootstrap over per-token CE arrays",
    "save_pathway_cache": "writes numpy arrays and the CPU readout to disk",
    "load_pathway_cache": "memory-maps numpy arrays; the readout loads on the CPU",
    "PlantedStates": "a container of CPU tensors built by planted_states",
    "planted_states": "seeded synthetic CPU states; move them with .to(device)",
}


@pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
def test_device(entry, kind):
    check_entry(entry, kind)


def test_fit_pathway_device_validated():
    cache = planted_pathway_cache(d=8, vocab=16, n_train=64, n_dev=32, n_test=32, seed=0)
    with pytest.raises(ValueError, match="device must be"):
        fit_pathway(cache, cache.meta["hidden_layer"], steps=1, device="tpu")


def test_pathway_cache_from_a_device_model_saves_and_loads(tmp_path):
    with FakeCuda():
        cache = _cache("cuda")
    assert cache.unembedding.device.type == "cpu"
    save_pathway_cache(cache, tmp_path / "c")
    loaded = load_pathway_cache(tmp_path / "c")
    np.testing.assert_array_equal(loaded.train.base_logits, cache.train.base_logits)


def test_layer_stats_moments_stay_on_the_data_device():
    with FakeCuda() as fake:
        s = LayerStats(3).update(torch.randn(5, 3, dtype=torch.float64).to(fake.device))
        s.update(torch.randn(4, 3, dtype=torch.float64))          # a CPU batch is moved there
        assert s.cov().device == fake.device and s.n_tokens == 9
