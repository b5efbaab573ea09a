"""E2-smollm2: the tail-of-blocks machinery against the full model, quantization and
compensation fed cached hidden states against direct computation, bad inputs, and a quick run of
the part on a tiny random stand-in (seconds)."""

import dataclasses
import types

import pytest
import torch

from icml26.core.claims import evaluate
from icml26.core.experiment import get_experiment
from icml26.core.runner import run_part
from icml26.projq import GroupQuantizer, gptq_quantize, lordq_init
from icml26.projq.e2_smollm2 import (SmolE2Config, choose_tail, e2_smollm2_tasks, run_e2_smollm2,
                                     summarize_e2_smollm2, tail_for)
from icml26.projq.experiment import E2S_QUICK
from icml26.projq.model import quantize_model
from icml26.projq.quant import ActivationStats
from icml26.projq.tail import finetune_tail, prefix_hidden, rows_ce, tail_linears, tail_model
from icml26.zoo import tiny_llama
from icml26.zoo.lm_eval import next_token_ce


@pytest.fixture
def full():
    return tiny_llama(vocab=50, hidden=32, layers=3, heads=4, kv_heads=2, intermediate=64, seed=0,
                      tie_embeddings=True)


def _ids(rows=4, tokens=12, seed=0, vocab=50):
    return torch.randint(vocab, (rows, tokens), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_tail_logits_equal_full_model(full, k):
    ids = _ids()
    tail = tail_model(full, k)
    assert len(tail.model.layers) == k
    h = prefix_hidden(full, ids, 3 - k, batch_size=3)
    assert h.shape == (4, 12, 32)
    torch.testing.assert_close(tail(inputs_embeds=h).logits, full(ids).logits, atol=1e-5, rtol=1e-5)
    # the copy is independent: changing the tail leaves the full model alone
    with torch.no_grad():
        tail.model.layers[0].mlp.down_proj.weight.zero_()
    assert full.model.layers[3 - k].mlp.down_proj.weight.abs().sum() > 0


def test_prefix_of_block_zero_is_the_embedding(full):
    ids = _ids()
    torch.testing.assert_close(prefix_hidden(full, ids, 0), full.model.embed_tokens(ids))


def test_rows_ce_matches_the_zoo_ce_of_the_full_model(full):
    ids = _ids(rows=5)
    per_row = rows_ce(tail_model(full, 2), prefix_hidden(full, ids, 1), ids, batch_size=2)
    assert per_row.shape == (5,)
    assert float(per_row.mean()) == pytest.approx(next_token_ce(full, ids), abs=1e-5)
    # direct computation of one row
    with torch.no_grad():
        logits = full(ids[:1]).logits[0, :-1]
    direct = torch.nn.functional.cross_entropy(logits, ids[0, 1:])
    assert float(per_row[0]) == pytest.approx(float(direct), abs=1e-5)


def test_quantize_and_compensate_on_cached_states_equal_direct_computation(full):
    """GPTQ + EoRA of the tail's layers, fed the cached prefix states, equals GPTQ(W, (2/N)XᵀX) and
    the whitened-SVD adapter computed directly from the inputs X the full model feeds that layer."""
    ids = _ids(rows=6, tokens=16, seed=1)
    tail = tail_model(full, 1)
    report = quantize_model(tail, None, method="gptq_eora", bits=2, group_size=16, rank=4,
                            modules=tail_linears(tail), calib_embeds=prefix_hidden(full, ids, 2))
    assert report.calibration_tokens == 6 * 16
    for name in ("self_attn.q_proj", "mlp.down_proj"):
        layer = full.model.layers[2].get_submodule(name)
        captured = []
        handle = layer.register_forward_pre_hook(lambda _m, args: captured.append(args[0].reshape(-1, args[0].shape[-1])))
        with torch.no_grad():
            full(ids)
        handle.remove()
        X = torch.cat(captured)
        stats = ActivationStats.from_tensor(X)
        W = layer.weight.detach()
        W_hat = gptq_quantize(W, (2.0 / X.shape[0]) * (X.double().T @ X.double()), GroupQuantizer(2, 16))
        got = tail.get_submodule(f"model.layers.0.{name}").weight
        torch.testing.assert_close(got, W_hat, atol=1e-5, rtol=1e-5)
        A, B = lordq_init(W, W_hat, stats, rank=4, random_state=0)
        entry = report.layers[f"model.layers.0.{name}"]
        torch.testing.assert_close(entry.B @ entry.A, B @ A, atol=1e-4, rtol=1e-4)


def test_finetune_tail_is_seeded_and_learns(full):
    ids = _ids(rows=8, tokens=10, seed=2)
    h = prefix_hidden(full, ids, 2)

    def run(seed):
        tail = tail_model(full, 1)
        for name, p in tail.named_parameters():
            p.requires_grad_(name.startswith("model.layers."))
        before = float(rows_ce(tail, h, ids).mean())
        losses = finetune_tail(tail, h, ids, steps=12, batch=4, lr=1e-2, seed=seed)
        return before, losses, float(rows_ce(tail, h, ids).mean())

    before, losses, after = run(0)
    assert len(losses) == 12 and after < before
    assert run(0)[1] == losses
    assert run(1)[1] != losses


def test_bad_inputs(full):
    ids = _ids()
    h = prefix_hidden(full, ids, 1)
    tail = tail_model(full, 2)
    with pytest.raises(ValueError, match="k"):
        tail_model(full, 0)
    with pytest.raises(ValueError, match="k"):
        tail_model(full, 4)
    with pytest.raises(TypeError):
        tail_model(torch.nn.Linear(2, 2), 1)
    with pytest.raises(ValueError, match="block"):
        prefix_hidden(full, ids, 3)
    with pytest.raises(ValueError, match="input_ids"):
        prefix_hidden(full, ids.float(), 1)
    with pytest.raises(ValueError, match="disagree"):
        rows_ce(tail, h[:, :5], ids)
    with pytest.raises(ValueError, match="hidden"):
        rows_ce(tail, ids, ids)
    with pytest.raises(ValueError, match=">= 1 row of >= 2 tokens"):
        rows_ce(tail, h[:, :1], ids[:, :1])
    with pytest.raises(ValueError, match="steps"):
        finetune_tail(tail, h, ids, steps=0, batch=2, lr=1e-3)
    with pytest.raises(ValueError, match="lr"):
        finetune_tail(tail, h, ids, steps=1, batch=2, lr=0.0)
    with pytest.raises(ValueError, match="batch"):
        finetune_tail(tail, h, ids, steps=1, batch=5, lr=1e-3)
    frozen = tail_model(full, 2)
    for p in frozen.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="trainable"):
        finetune_tail(frozen, h, ids, steps=1, batch=2, lr=1e-3)
    names = tail_linears(tail)
    with pytest.raises(ValueError, match="not both"):
        quantize_model(tail, ids, method="gptq", bits=2, group_size=16, rank=4, modules=names, calib_embeds=h)
    with pytest.raises(ValueError, match="calib_ids is required"):
        quantize_model(tail, None, method="gptq", bits=2, group_size=16, rank=4, modules=names)
    with pytest.raises(ValueError, match="3-D float"):
        quantize_model(tail, None, method="gptq", bits=2, group_size=16, rank=4, modules=names,
                       calib_embeds=ids.unsqueeze(-1))
    bad = h.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        quantize_model(tail, None, method="gptq", bits=2, group_size=16, rank=4, modules=names, calib_embeds=bad)
    with pytest.raises(ValueError, match="model"):
        run_e2_smollm2(dataclasses.replace(E2S_QUICK, model="gpt2"), 0, {"method": "gptq", "bits": 2})
    with pytest.raises(ValueError, match="tail_blocks"):
        run_e2_smollm2(dataclasses.replace(E2S_QUICK, tail_blocks=5), 0, {"method": "gptq", "bits": 2})


def test_quick_part_runs_on_the_tiny_stand_in():
    experiment = get_experiment("projq")
    assert "E2-smollm2" not in [p.name for p in experiment.select()]          # opt-in
    outcome = run_part(experiment, "E2-smollm2", quick=True)
    assert not outcome.failed_jobs, [j.error for j in outcome.failed_jobs]
    claims = {c.id: c for c in outcome.result.claims}
    assert {"E2-smollm2/power_b2_doc", "E2-smollm2/power_b2_topics", "E2-smollm2/comp_b2_doc",
            "E2-smollm2/comp_b2_topics", "E2-smollm2/tuned_b2"} <= set(claims)
    table = outcome.result.tables["E2-smollm2 cross-entropy"]
    assert set(table.method) == {"rtn", "gptq", "gptq_eora", "loftq", "projq"}
    # same seed => same numbers
    task = {"method": "projq", "bits": 2}
    first, again = run_e2_smollm2(E2S_QUICK, 0, task), run_e2_smollm2(E2S_QUICK, 0, task)
    timing = [k for k in first if k.endswith("cpu_seconds")]
    assert {k: v for k, v in first.items() if k not in timing} == {k: v for k, v in again.items() if k not in timing}


def test_tail_per_bit_width_follows_the_dev_rule():
    assert choose_tail({"gptq": {2: (0.80, 0.89)}, "rtn": {2: (2.2, 2.7)}}) == 2
    # 3 bits: the 2- and 4-block tails stay under the 0.3-nat dev bar on one source at least
    assert choose_tail({"gptq": {2: (0.18, 0.16), 4: (0.23, 0.21), 6: (0.31, 0.30)}}) == 6
    assert choose_tail({"gptq": {2: (0.1, 0.1)}}) is None
    config = SmolE2Config()
    assert tail_for(config, 2) == 2 and tail_for(config, 3) == dict(config.tail_by_bits)[3]
    tasks = e2_smollm2_tasks(config)
    assert {t["tail"] for t in tasks if t["method"] == "fp"} == {tail_for(config, b) for b in config.bits}
    assert all(t["tail"] == tail_for(config, t["bits"]) for t in tasks if t["method"] != "fp")


def _fake_jobs(delta, bits=2, tail=2):
    """Job results where b-bit quantization raises CE by ``delta`` (no model needed)."""
    fp = [2.0, 2.2, 1.8, 2.1, 2.05, 1.95]
    jobs = []
    for seed in (0, 1, 2):
        for method, b, extra in (("rtn", bits, delta + 0.1), ("gptq", bits, delta), ("gptq_eora", bits, delta / 2),
                                 ("projq", bits, delta / 3), ("fp", 16, 0.0)):
            comp = [v + extra + 0.01 * k * delta for k, v in enumerate(fp)]
            jobs.append(types.SimpleNamespace(metrics={
                "method": method, "bits": b, "seed": seed, "fp_doc_rows": fp, "fp_topics_rows": fp,
                "comp_doc_rows": comp, "comp_topics_rows": comp, "tail": tail,
                "tuned_topics_rows": [v - 0.5 + extra / 4 + 0.001 * seed + 0.002 * k for k, v in enumerate(fp)],
                "quantize_cpu_seconds": 1.0, "finetune_cpu_seconds": 1.0, "first_block": 28}))
    return jobs


@pytest.mark.parametrize("delta, powered", [(0.6, True), (0.1, False)])
def test_power_control_gates_the_comparison_claims(delta, powered):
    """A planted power control below the bar turns every comparison INCOMPLETE (the gate can flip)."""
    config = SmolE2Config(bits=(2,), methods=("rtn", "gptq", "gptq_eora", "projq"), tail_by_bits=())
    result = summarize_e2_smollm2(_fake_jobs(delta), config)
    specs = get_experiment("projq").part("E2-smollm2").claim_specs
    claims = {c.id: c for c in evaluate(specs, result.measurements)}
    control = claims["E2-smollm2/power_b2_doc"]
    assert control.measured == pytest.approx(delta + 0.025 * delta)
    assert (control.verdict == "PASS") == powered
    comp = claims["E2-smollm2/comp_b2_doc"]
    assert comp.measured == pytest.approx(delta / 3 - delta / 2)
    assert result.measurements["comp_lora0_b2_doc"] == pytest.approx(delta / 2)
    tuned = claims["E2-smollm2/tuned_b2"]
    assert tuned.measured == pytest.approx((delta / 3 - delta / 2) / 4)
    for claim in (comp, tuned):
        assert claim.verdict == ("PASS" if powered else "INCOMPLETE"), claim
    # 3-bit claims: no 3-bit jobs, so they are incomplete, never passed
    assert claims["E2-smollm2/comp_b3_doc"].verdict == "INCOMPLETE"


def test_a_negative_control_that_meets_the_bar_makes_the_claim_not_earned():
    config = SmolE2Config(bits=(2,), methods=("rtn", "gptq", "gptq_eora", "projq"), tail_by_bits=())
    result = summarize_e2_smollm2(_fake_jobs(0.6), config)
    result.measurements["comp_lora0_b2_doc"] = -0.05      # planted: no compensation at all "wins" too
    specs = get_experiment("projq").part("E2-smollm2").claim_specs
    claims = {c.id: c for c in evaluate(specs, result.measurements)}
    assert claims["E2-smollm2/comp_b2_doc"].verdict == "NOT EARNED"


@pytest.mark.parametrize("method", ["gptq_eora", "loftq", "rtn"])
def test_cached_compensation_ce_equals_the_peft_model_at_initialisation(method):
    """The compensation CE stored with the quantized weights (Ŵ + BA merged) is the CE of the PEFT
    model that fine-tuning starts from."""
    from icml26.projq.e2_smollm2 import load_model, quantized_tail, reference
    from icml26.projq.model import LayerReport, QuantizedModelReport, to_peft_lora

    config = E2S_QUICK
    model, tokenizer, fingerprint = load_model(config)
    ref = reference(config, model, tokenizer, fingerprint)
    tail = tail_model(model, config.tail_blocks)
    q = quantized_tail(config, tail, ref, method, 2, fingerprint)
    named = dict(tail.named_modules())
    layers = {}
    with torch.no_grad():
        for n in tail_linears(tail):
            named[n].weight.copy_(q[f"{n}.W_hat"])
            layers[n] = LayerReport(n, tuple(named[n].weight.shape), q.get(f"{n}.A"), q.get(f"{n}.B"))
    peft_model = to_peft_lora(tail, QuantizedModelReport(method, 2, config.group_size, config.rank, config.rank,
                                                         layers), lora_alpha=config.lora_alpha)
    torch.testing.assert_close(rows_ce(peft_model, ref["eval_doc_h"], ref["eval_doc_ids"]), q["comp_eval_doc"],
                               atol=1e-5, rtol=1e-5)
