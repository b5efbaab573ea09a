"""The diagnostic pathway: hand-written gradients vs autograd, AdamW vs torch, planted recovery,
controls, cache round trip, bad inputs."""

import numpy as np
import pytest
import torch

from icml26.accessibility import (DiagnosticPathway, build_pathway_cache, fit_pathway, load_pathway_cache,
                                  save_pathway_cache)
from icml26.accessibility.data import planted_pathway_cache
from icml26.accessibility.pathway import _AdamW, _post_norm_step


def test_post_norm_gradients_match_autograd():
    g = torch.Generator().manual_seed(0)
    V, d, n, r = 30, 8, 20, 3
    W = torch.randn(V, d, generator=g)
    base = torch.randn(n, V, generator=g)
    x = torch.randn(n, d, generator=g)
    y = torch.randint(V, (n,), generator=g)
    path = DiagnosticPathway(d, rank=r, seed=1)
    with torch.no_grad():
        path.B.normal_(generator=g)
        path.bias.normal_(generator=g)
    loss = _post_norm_step(W, path, base.clone(), y, x)
    manual = {k: p.grad.clone() for k, p in path.named_parameters()}
    ref = DiagnosticPathway(d, rank=r, seed=1)
    ref.load_state_dict(path.state_dict())
    # the module's own forward, read out through W (source features already centred: source_mean = 0,
    # rms-normalisation bypassed by feeding x through A directly)
    z = base + (ref.bias + (x @ ref.A.T) @ ref.B.T) @ W.T
    auto = torch.nn.functional.cross_entropy(z, y)
    auto.backward()
    assert loss == pytest.approx(float(auto.detach()), rel=1e-6)
    for name, p in ref.named_parameters():
        assert torch.allclose(manual[name], p.grad, atol=1e-6), name


def test_adamw_matches_torch():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(5, 3, generator=g, requires_grad=True)
    b = a.detach().clone().requires_grad_(True)
    mine, ref = _AdamW([a], lr=0.01, weight_decay=0.1), torch.optim.AdamW([b], lr=0.01, weight_decay=0.1)
    for step in range(5):
        grad = torch.randn(5, 3, generator=g)
        a.grad, b.grad = grad.clone(), grad.clone()
        mine.step()
        ref.step()
    assert torch.allclose(a, b, atol=1e-7)


def test_zero_initialised_pathway_changes_nothing():
    path = DiagnosticPathway(6, rank=2)
    h, s = torch.randn(4, 6), torch.randn(4, 6)
    assert torch.equal(path(h, s), h)
    norm = torch.nn.RMSNorm(6)
    pre = DiagnosticPathway(6, rank=2, injection="pre_norm")
    assert torch.allclose(pre(h, s, norm=norm), norm(h))
    with pytest.raises(ValueError, match="needs the model's final norm"):
        pre(h, s)
    assert DiagnosticPathway(6, rank=10).A.shape == (10, 6)  # rank >= d allowed ("full")


@pytest.fixture(scope="module")
def planted():
    return planted_pathway_cache(seed=0)


@pytest.fixture(scope="module")
def arms(planted):
    m = planted.meta["hidden_layer"]
    kw = dict(steps=60, lr=0.05, batch_size=512)
    out = {"bias": fit_pathway(planted, None, control="bias_only", **kw),
           "mid": fit_pathway(planted, m, **kw),
           "last": fit_pathway(planted, planted.n_layers, **kw),
           "shuffled": fit_pathway(planted, m, control="shuffled", **kw)}
    for r in out.values():
        r.gain_vs(out["bias"])
    return out


def test_planted_hidden_feature_is_recovered_only_from_its_layer(arms):
    assert arms["mid"].gain_vs_bias > 0.3
    assert arms["mid"].gain_vs_bias > 3 * max(arms["last"].gain_vs_bias, arms["shuffled"].gain_vs_bias, 0.05)
    assert arms["shuffled"].gain_vs_bias < 0.05
    for r in arms.values():
        assert r.dev_delta_ce >= 0.0 and r.delta_ce > -0.01
        assert r.history[0]["step"] == 0
    assert arms["mid"].kl > 0 and 0 < arms["mid"].flip_rate < 1


def test_without_early_stopping_shuffled_states_are_memorised():
    small = planted_pathway_cache(n_train=256, n_dev=256, n_test=256, d=32, vocab=64, seed=1)
    r = fit_pathway(small, small.meta["hidden_layer"], control="shuffled", rank=32, steps=150, lr=0.05,
                    batch_size=256, early_stop=False)
    assert r.train_ce_base - r.train_ce > 0.3
    assert r.steps_run == 150 and r.best_step == 150


def test_pre_norm_injection_recovers_the_feature(planted):
    r = fit_pathway(planted, planted.meta["hidden_layer"], injection="pre_norm", steps=40, lr=0.05, batch_size=512)
    assert r.delta_ce > 0.3


def test_cache_from_a_tiny_llama_round_trips(tmp_path):
    from icml26.zoo import tiny_llama

    model = tiny_llama(vocab=30, hidden=16, layers=2, heads=2, seed=0)
    ids = torch.randint(30, (5, 12), generator=torch.Generator().manual_seed(0))
    cache = build_pathway_cache(model, ids[:3], ids[3:4], ids[4:], [1, 2], skip=2, batch_size=2,
                                path=tmp_path / "c")
    assert isinstance(cache.train.base_logits, np.memmap)
    assert cache.train.n_tokens == 3 * (12 - 2 - 1)
    logits = model(ids[:1]).logits[0, 2:-1].detach()
    assert np.allclose(cache.train.base_logits[:9], logits.numpy(), atol=1e-5)
    assert np.array_equal(cache.train.labels[:9], ids[0, 3:].numpy())
    save_pathway_cache(cache, tmp_path / "copy")
    again = load_pathway_cache(tmp_path / "copy")
    assert np.array_equal(np.asarray(again.test.base_logits), np.asarray(cache.test.base_logits))
    assert again.layers == [1, 2] and not list(tmp_path.glob(".*"))  # no temporary folder left
    r = fit_pathway(again, 1, steps=3, batch_size=8, eval_every=1)
    assert r.dev_delta_ce >= 0


def test_bad_inputs(planted):
    with pytest.raises(ValueError, match="source_layer must be one of the cached layers"):
        fit_pathway(planted, 99)
    with pytest.raises(ValueError, match="control must be one of"):
        fit_pathway(planted, 3, control="random")
    with pytest.raises(ValueError, match="lr must be in"):
        fit_pathway(planted, 3, lr=0.0)
    with pytest.raises(TypeError, match="cache must be a PathwayCache"):
        fit_pathway({}, 3)
    with pytest.raises(ValueError, match="injection must be one of"):
        DiagnosticPathway(4, injection="middle")
    with pytest.raises(FileNotFoundError, match="not a pathway cache"):
        load_pathway_cache("/nonexistent/folder")
