"""TOPForCausalLM at inference: generate with the NTP head, save/load with the TOP head."""

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from icml26.top import GPTConfig, TinyGPT, TOPForCausalLM

V = 32


def tiny_llama(seed=0):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, pad_token_id=0)
    return TOPForCausalLM(LlamaForCausalLM(cfg), window=4, top_weight=0.5, positions="labelled")


def manual_greedy(lm, ids, n):
    for _ in range(n):
        ids = torch.cat([ids, lm(ids).logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ids


def test_generate_uses_the_hf_generate_and_matches_greedy_decoding():
    lm = tiny_llama().eval()
    ids = torch.randint(1, V, (2, 5), generator=torch.Generator().manual_seed(1))
    out = lm.generate(ids, max_new_tokens=4, do_sample=False, attention_mask=torch.ones_like(ids))
    assert out.shape == (2, 9) and torch.equal(out[:, :5], ids)
    with torch.no_grad():
        assert torch.equal(out, manual_greedy(lm, ids, 4))


def test_generate_without_hf_generate_is_greedy_and_checks_its_options():
    torch.manual_seed(0)
    lm = TOPForCausalLM(TinyGPT(GPTConfig(vocab_size=9, block_size=10, n_layer=1, n_head=2, n_embd=8)))
    lm.train()
    ids = torch.randint(0, 9, (3, 4))
    out = lm.generate(ids, max_new_tokens=5)
    with torch.no_grad():
        assert torch.equal(out, manual_greedy(lm.eval(), ids, 5))
    lm.train()
    lm.generate(ids, max_new_tokens=1)
    assert lm.training  # restores the mode it found
    with pytest.raises(TypeError, match="only max_new_tokens"):
        lm.generate(ids, do_sample=True)
    with pytest.raises(ValueError, match="block_size"):
        lm.generate(ids, max_new_tokens=7)
    with pytest.raises(ValueError, match="max_new_tokens"):
        lm.generate(ids, max_new_tokens=-1)


def test_save_pretrained_round_trip_keeps_both_heads_and_settings(tmp_path):
    lm = tiny_llama()
    with torch.no_grad():
        lm.top_head.proj.weight.add_(1.0)  # a head that differs from any fresh init
    lm.save_pretrained(tmp_path)
    loaded = TOPForCausalLM.from_pretrained(tmp_path)
    ids = torch.randint(0, V, (2, 6))
    a, b = lm(ids, return_top_logits=True), loaded(ids, return_top_logits=True)
    assert torch.equal(a.logits, b.logits) and torch.equal(a.top_logits, b.top_logits)
    assert (loaded.loss_fn.window, loaded.loss_fn.top_weight, loaded.loss_fn.positions) == (4, 0.5, "labelled")
    look = torch.randint(0, V, (2, 4))
    assert torch.equal(lm(ids, labels=ids, lookahead_labels=look).loss,
                       loaded(ids, labels=ids, lookahead_labels=look).loss)
    plain = AutoModelForCausalLM.from_pretrained(tmp_path)  # the same LM without the TOP head
    assert torch.equal(plain(ids).logits, a.logits)


def test_state_dict_round_trip_for_any_model():
    config = GPTConfig(vocab_size=9, block_size=8, n_layer=1, n_head=2, n_embd=8)
    torch.manual_seed(0)
    a = TOPForCausalLM(TinyGPT(config))
    torch.manual_seed(1)
    b = TOPForCausalLM(TinyGPT(config))
    ids = torch.randint(0, 9, (2, 5))
    assert not torch.equal(a(ids, return_top_logits=True).top_logits, b(ids, return_top_logits=True).top_logits)
    b.load_state_dict(a.state_dict())
    assert torch.equal(a(ids, return_top_logits=True).top_logits, b(ids, return_top_logits=True).top_logits)


def test_save_and_load_refuse_what_they_cannot_handle(tmp_path):
    lm = TOPForCausalLM(TinyGPT(GPTConfig(vocab_size=9, block_size=8, n_layer=1, n_head=2, n_embd=8)))
    with pytest.raises(TypeError, match="state_dict"):
        lm.save_pretrained(tmp_path / "tiny")
    with pytest.raises(FileNotFoundError, match="top_config.json"):
        TOPForCausalLM.from_pretrained(tmp_path)
