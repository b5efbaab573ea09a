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
    with pytest.raises(ValueError, match="source_layer must be one or more distinct cached layers"):
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


# -- the shared frozen bias, resampled training tokens, bootstrap intervals (#38) -----------

def test_a_shared_bias_stays_frozen_and_every_arm_starts_from_it(planted):
    from icml26.accessibility import fit_shared_bias

    shared = fit_shared_bias(planted, steps=40, lr=0.05, batch_size=512)
    b = shared.pathway.bias.detach().clone()
    assert shared.steps_run > 0 and shared.train_ce < shared.train_ce_base     # the bias learned something
    bias_arm = fit_pathway(planted, None, control="bias_only", bias=b, steps=50)
    assert bias_arm.steps_run == 0 and bias_arm.path_ce == pytest.approx(shared.path_ce, abs=1e-6)
    for control in (None, "shuffled"):
        arm = fit_pathway(planted, planted.meta["hidden_layer"], control=control, bias=b, steps=30, lr=0.05,
                          batch_size=512)
        assert torch.equal(arm.pathway.bias, b)                                  # frozen
        assert arm.history[0]["dev_ce"] == pytest.approx(shared.dev_ce, abs=1e-6)  # starts at the shared b
    mid = fit_pathway(planted, planted.meta["hidden_layer"], bias=b, steps=60, lr=0.05, batch_size=512)
    shuffled = fit_pathway(planted, planted.meta["hidden_layer"], control="shuffled", bias=b, steps=60, lr=0.05,
                           batch_size=512)
    assert mid.gain_vs(bias_arm) > 0.3 and abs(shuffled.gain_vs(bias_arm)) < 0.02


def test_train_tokens_restrict_batches_centring_and_train_ce(planted):
    m = planted.meta["hidden_layer"]
    rows = np.arange(0, planted.train.n_tokens, 2)
    r = fit_pathway(planted, m, steps=5, lr=0.05, batch_size=128, train_tokens=rows, train_eval_tokens=10_000)
    src = np.asarray(planted.train.sources[m], dtype=np.float64)[rows].mean(axis=0)
    assert np.allclose(r.pathway.source_mean.numpy(), src, atol=1e-5)
    base = np.asarray(planted.train.base_logits[rows], dtype=np.float64)
    labels = np.asarray(planted.train.labels[rows])
    logz = np.log(np.exp(base - base.max(1, keepdims=True)).sum(1)) + base.max(1)
    assert r.train_ce_base == pytest.approx(float((logz - base[np.arange(rows.size), labels]).mean()), rel=1e-5)
    with pytest.raises(ValueError, match="train_tokens must be distinct rows"):
        fit_pathway(planted, m, steps=1, train_tokens=np.array([0, 0, 1]))
    with pytest.raises(ValueError, match="bias must be a finite vector"):
        fit_pathway(planted, m, steps=1, bias=torch.zeros(3))


def test_per_token_test_ce_averages_to_the_test_ce(planted):
    r = fit_pathway(planted, planted.meta["hidden_layer"], steps=5, lr=0.05, batch_size=128)
    assert r.token_ce.shape == (planted.test.n_tokens,)
    assert float(r.token_ce.mean()) == pytest.approx(r.path_ce, rel=1e-6)
    assert "token_ce" not in r.to_dict() and len(r.to_dict(token_ce=True)["token_ce"]) == planted.test.n_tokens


def test_bootstrap_gain_against_a_direct_computation():
    from icml26.accessibility import bootstrap_gain

    rng = np.random.default_rng(0)
    ref, new = rng.normal(2.0, 0.5, 400), rng.normal(1.9, 0.5, 400)
    out = bootstrap_gain(ref, new, n_boot=4000, seed=1)
    diff = ref - new
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    assert out["gain"] == pytest.approx(diff.mean())
    assert out["low"] == pytest.approx(diff.mean() - 1.96 * se, abs=0.25 * se)
    assert out["high"] == pytest.approx(diff.mean() + 1.96 * se, abs=0.25 * se)
    with pytest.raises(ValueError, match="one length"):
        bootstrap_gain(ref, new[:10])
    with pytest.raises(ValueError, match="finite"):
        bootstrap_gain(np.array([np.nan]), np.array([1.0]))


@pytest.mark.parametrize("batch", [7, 4096])
def test_test_split_evaluation_matches_a_direct_computation(batch):
    """CE, base CE, KL(p‖q), flip rate and per-token CE of the in-place evaluation (two reused
    buffers, issue #38) against float64 log-softmaxes of the full logits."""
    from icml26.accessibility import pathway as P

    cache = planted_pathway_cache(seed=0)
    path = P.DiagnosticPathway(cache.d_model, rank=4, seed=3)
    with torch.no_grad():
        path.B.normal_()
        path.bias.normal_()
    arm = P._Arm(cache.split("test"), (cache.meta["hidden_layer"],), path.source_mean, None)
    out = P._evaluate(P._Readout(cache, "cpu"), path, arm, compare=True, batch=batch)
    with torch.no_grad():
        q = torch.from_numpy(np.asarray(cache.test.base_logits, dtype=np.float64))
        W = cache.unembedding.double()
        z = q + (arm.x.double() @ path.A.double().T) @ (W @ path.B.double()).T + W @ path.bias.double()
        lp, lq = z.log_softmax(1), q.log_softmax(1)
        y = arm.labels[:, None]
        token_ce = -lp.gather(1, y).squeeze(1)
        want = [float(token_ce.mean()), float(-lq.gather(1, y).mean()),
                float((lp.exp() * (lp - lq)).sum(1).mean()), float((lp.argmax(1) != lq.argmax(1)).double().mean())]
    np.testing.assert_allclose([out["ce"], out["base_ce"], out["kl"], out["flip_rate"]], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["token_ce"], token_ce.numpy(), rtol=1e-5, atol=1e-5)
    assert want[2] > 0.1 and 0 < want[3] < 1   # a real change, so the test can fail


def test_incremental_arm_separates_information_from_capacity():
    """[h^L; h^m] beats h^L at the same rank only when h^m carries token information: its shuffled
    twin (same parameters) does not."""
    from icml26.accessibility import fit_pathway, fit_shared_bias

    cache = planted_pathway_cache(seed=0)
    L, m = max(cache.layers), cache.meta["hidden_layer"]
    bias = fit_shared_bias(cache, steps=40, lr=0.05).pathway.bias
    kw = dict(steps=60, lr=0.05, bias=bias)
    last = fit_pathway(cache, L, **kw)
    inc = fit_pathway(cache, (L, m), **kw)
    twin = fit_pathway(cache, (L, m), control="shuffled", **kw)
    assert inc.pathway.A.shape == (8, 2 * cache.d_model) and inc.source_layer == [L, m]
    assert last.path_ce - inc.path_ce > 0.3
    assert twin.path_ce > last.path_ce - 0.02
    with pytest.raises(ValueError, match="distinct cached layers"):
        fit_pathway(cache, (L, L), **kw)


def test_multi_source_pathway_normalises_each_block():
    path = DiagnosticPathway(4, rank=2, n_sources=2)
    x = torch.cat([torch.ones(3, 4), 100 * torch.ones(3, 4)], dim=1)
    assert torch.allclose(path.source_features(x), torch.ones(3, 8))
    with pytest.raises(ValueError, match="source_states"):
        path(torch.zeros(3, 4), torch.zeros(3, 4))


def test_fit_leaves_the_global_generators_alone():
    from icml26.accessibility import fit_pathway, fit_shared_bias

    cache = planted_pathway_cache(n_train=256, n_dev=128, n_test=128, seed=0)
    torch_state, np_state = torch.get_rng_state(), np.random.get_state()[1].copy()
    bias = fit_shared_bias(cache, steps=5, lr=0.05).pathway.bias
    fit_pathway(cache, cache.meta["hidden_layer"], steps=5, lr=0.05, bias=bias, control="shuffled")
    assert torch.equal(torch_state, torch.get_rng_state())
    assert np.array_equal(np_state, np.random.get_state()[1])


# -- #50 cost work: fused softmax, stored base statistics, frozen readout shift, patience -------

def test_softmax_lse_against_a_direct_computation():
    from icml26.accessibility.pathway import _softmax_lse

    g = torch.Generator().manual_seed(0)
    z = torch.randn(6, 50, generator=g) * torch.tensor([1.0, 5.0, 30.0, 100.0, 300.0, 1.0])[:, None]
    z[5, 7] = -float("inf")   # a masked logit: probability 0, the rest unchanged
    out = torch.full_like(z, float("nan"))
    lse = _softmax_lse(z.clone(), out)
    ref = z.double().logsumexp(1)
    assert torch.allclose(lse.double(), ref, rtol=1e-6, atol=1e-5)
    assert torch.allclose(out.double(), (z.double() - ref[:, None]).exp(), atol=1e-7)
    assert float(out[5, 7]) == 0.0


def test_base_summary_is_computed_once_stored_and_read_back(tmp_path):
    from icml26.accessibility.pathway import PathwaySplit
    from icml26.zoo import tiny_llama

    model = tiny_llama(vocab=30, hidden=16, layers=2, heads=2, seed=0)
    ids = torch.randint(30, (5, 12), generator=torch.Generator().manual_seed(1))
    cache = build_pathway_cache(model, ids[:3], ids[3:4], ids[4:], [1], skip=2, batch_size=2, path=tmp_path / "c")
    q = torch.from_numpy(np.array(cache.train.base_logits)).double()
    y = torch.from_numpy(np.asarray(cache.train.labels))
    assert cache.train.base_stats is not None and (tmp_path / "c" / "train_base_lse.npy").is_file()
    stored = cache.train.base_summary()                  # written at build time, read back
    np.testing.assert_allclose(stored["lse"], q.logsumexp(1).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(stored["argmax"], q.argmax(1).numpy())
    np.testing.assert_allclose(stored["label_logit"], q.gather(1, y[:, None]).squeeze(1).numpy(), rtol=1e-6)
    # a cache written before the statistics were stored computes the same numbers on first use
    split = cache.train
    old = PathwaySplit(split.base_logits, split.labels, split.final_normed, split.final_states, split.sources)
    lazy = old.base_summary(batch=4)                     # batches of 4: the result must not depend on it
    for key in stored:
        np.testing.assert_array_equal(np.asarray(lazy[key]), np.asarray(stored[key]), err_msg=key)
    assert old.base_summary() is lazy
    for name in ("lse", "argmax", "label_logit"):
        (tmp_path / "c" / f"test_base_{name}.npy").unlink()
    again = load_pathway_cache(tmp_path / "c")
    assert again.test.base_stats is None and again.train.base_stats is not None
    a = fit_pathway(again, 1, steps=4, lr=0.05, batch_size=8, eval_every=2, early_stop=False, seed=3)
    b = fit_pathway(cache, 1, steps=4, lr=0.05, batch_size=8, eval_every=2, early_stop=False, seed=3)
    assert a.kl == pytest.approx(b.kl, rel=1e-6) and a.base_ce == pytest.approx(b.base_ce, rel=1e-6)
    assert a.flip_rate == b.flip_rate and a.kl > 0


def test_a_frozen_readout_shift_and_a_scratch_buffer_give_the_same_step():
    g = torch.Generator().manual_seed(2)
    V, d, n, r = 40, 8, 16, 3
    W, base = torch.randn(V, d, generator=g), torch.randn(n, V, generator=g)
    x, y = torch.randn(n, d, generator=g), torch.randint(V, (n,), generator=g)
    path = DiagnosticPathway(d, rank=r, seed=1)
    with torch.no_grad():
        path.B.normal_(generator=g)
        path.bias.normal_(generator=g)
    path.bias.requires_grad_(False)
    plain = _post_norm_step(W, path, base.clone(), y, x)
    grads = [p.grad.clone() for p in (path.A, path.B)]
    scratch = torch.full((n, V), float("nan"))
    again = _post_norm_step(W, path, base.clone(), y, x, scratch=scratch, c=W @ path.bias)
    assert again == pytest.approx(plain, rel=1e-7)
    assert all(torch.allclose(a, p.grad, atol=1e-7) for a, p in zip(grads, (path.A, path.B)))
    wrong = _post_norm_step(W, path, base.clone(), y, x, c=torch.zeros(V))   # the shift is used
    assert abs(wrong - plain) > 1e-3


def test_the_shipped_patience_keeps_every_recorded_checkpoint():
    """The arms' patience (3) against the dev histories recorded at patience 5
    (benchmarks/accessibility_patience.py): every early-stopped arm keeps its checkpoint."""
    import json
    from pathlib import Path

    from icml26.accessibility.experiment import PathwayConfig

    path = Path(__file__).resolve().parents[2] / "ledger" / "accessibility" / "patience_replay.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    shipped = [r for r in rows if r["patience"] == PathwayConfig().patience]
    assert len(shipped) == 25 and len({(r["arm"], r["seed"]) for r in shipped}) == 25
    assert all(r["same_checkpoint"] for r in shipped)
    assert sum(r["steps_run"] for r in shipped) < sum(r["recorded_steps_run"] for r in shipped)


def test_the_patience_replay_rule():
    import importlib.util
    from pathlib import Path

    file = Path(__file__).resolve().parents[2] / "benchmarks" / "accessibility_patience.py"
    spec = importlib.util.spec_from_file_location("accessibility_patience", file)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    hist = [{"step": 10 * i, "dev_ce": v} for i, v in enumerate([2.0, 1.9, 1.95, 1.96, 1.85, 1.99, 2.0, 2.1])]
    assert mod.replay(hist, 2) == (10, 30)     # stops before the late improvement at step 40
    assert mod.replay(hist, 3) == (40, 70)
    assert mod.replay(hist, 5) == (40, 70)     # ran out of history
