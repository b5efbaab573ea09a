"""A TOP training step reads no tensor on the host, as NTP's does not: on an accelerator every
host read (``bool(t)``, ``.item()``, ``.tolist()``) waits for the device, which made TOP's
step 2.2x NTP's with several jobs sharing one GPU."""

import collections

import pytest
import torch
from torch.overrides import TorchFunctionMode

from icml26.top.experiment import IGNORE, build_model, check_token_data, objective_loss
from icml26.top.gpt import GPTConfig, TinyGPT
from icml26.top.token_order import TOPForCausalLM

HOST_READS = {"__bool__", "item", "tolist", "__int__", "__float__", "__index__", "numpy", "nonzero"}


class HostReads(TorchFunctionMode):
    """Counts the tensor-to-host reads made inside the block."""

    def __init__(self):
        super().__init__()
        self.count = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in HOST_READS:
            self.count[name] += 1
        return func(*args, **(kwargs or {}))


def _batch(vocab=12, batch=4, length=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (batch, length), generator=g)
    return ids, ids.clone(), torch.randint(0, vocab, (batch, length), generator=g)


def _reads(model, objective, batch):
    with HostReads() as reads:
        loss, _ = objective_loss(model, objective, *batch)
        loss.backward()
    return sum(reads.count.values())


CONFIG = GPTConfig(vocab_size=12, block_size=16, n_layer=3, n_head=2, n_embd=16)


@pytest.mark.parametrize("objective", ["ntp", "top", "top_shuffled", "top_unrelated", "mtp", "dsmtp"])
def test_the_experiments_training_step_makes_no_host_read(objective):
    assert _reads(build_model(objective, CONFIG), objective, _batch()) == 0


def test_a_validating_model_does_read_so_the_count_can_fail():
    model = TOPForCausalLM(TinyGPT(CONFIG), window=None, ignore_index=IGNORE)   # validate_args=True
    assert _reads(model, "top", _batch()) >= 2


def test_unvalidated_steps_give_the_same_loss():
    batch = _batch()
    checked = TOPForCausalLM(TinyGPT(CONFIG), window=None, ignore_index=IGNORE)
    fast = TOPForCausalLM(TinyGPT(CONFIG), window=None, ignore_index=IGNORE, validate_args=False)
    fast.load_state_dict(checked.state_dict())
    assert torch.equal(objective_loss(checked, "top", *batch)[0], objective_loss(fast, "top", *batch)[0])


def test_the_data_are_checked_once_instead():
    ids, labels, look = _batch()
    check_token_data(12, ids, labels, look)
    with pytest.raises(ValueError, match="lookahead_labels"):
        check_token_data(12, ids, labels, look + 12)


def test_a_padded_attention_mask_is_refused_not_ignored():
    ids = torch.randint(0, 12, (2, 6))
    model = TinyGPT(CONFIG)
    full = model(ids, attention_mask=torch.ones_like(ids)).logits
    assert torch.equal(full, model(ids).logits)
    mask = torch.ones_like(ids)
    mask[0, -2:] = 0
    with pytest.raises(ValueError, match="attention_mask has padding"):
        model(ids, attention_mask=mask)
    with pytest.raises(ValueError, match="attention_mask has padding"):
        build_model("mtp", CONFIG)(ids, attention_mask=mask)


def test_warmup_cosine_scheduler_gives_the_closed_form_lr_at_every_step_and_on_resume():
    """The torch scheduler sets exactly lr_at(step) (the same floats the recorded runs used),
    fresh and when a run resumes at a later step."""
    import torch

    from icml26.top.experiment import WarmupCosineLR, lr_at

    def run(start, steps=60):
        opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], lr=3e-3)
        sched = WarmupCosineLR(opt, total=steps, warmup=7, min_lr=2e-4, start=start)
        seen = []
        for _ in range(start, steps):
            seen.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        return seen

    fresh = run(0)
    assert fresh == [lr_at(s, 60, 3e-3, 7, 2e-4) for s in range(60)]   # bit for bit
    assert run(25) == fresh[25:]
    assert fresh[6] == 3e-3 and fresh[-1] > 2e-4 and fresh[0] < fresh[6]
