"""The fake second device itself: it raises on the patterns real CUDA refuses and accepts
the ones CUDA accepts (torch's rules: 0-dim CPU scalars, CPU index tensors, transfers)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from devicecheck import DeviceEntry, check_entry, forward_backward
from fakecuda import FAKE_DEVICE, FakeCuda, FakeDeviceError, is_fake
from icml26.core.device import resolve_device


@pytest.fixture
def fake():
    with FakeCuda() as mode:
        yield mode


def _x(fake):
    return torch.arange(3.0).to(fake.device)


# --- what real CUDA refuses ---------------------------------------------------------------

@pytest.mark.parametrize("make_bad", [
    lambda x: x + torch.ones(3),
    lambda x: torch.ones(3) * x,
    lambda x: torch.cat([x, torch.ones(2)]),
    lambda x: torch.stack([x, torch.ones(3)]),
    lambda x: torch.quantile(x, torch.tensor([0.5])),
    lambda x: torch.quantile(x, torch.tensor(0.5)),           # quantile checks 0-dim q too
    lambda x: torch.ones(3)[x.long()],                        # device indices into a CPU tensor
    lambda x: F.cross_entropy(x[None], torch.tensor([1])),
    lambda x: F.linear(x, torch.ones(2, 3)),
    lambda x: torch.where(torch.tensor([True, False, True]), x, 0.0),
    lambda x: x.index_select(0, torch.tensor([0])),
    lambda x: torch.zeros(3, dtype=x.dtype).add_(x),          # a CPU accumulator
    lambda x: torch.rand(3, device=x.device, generator=torch.Generator().manual_seed(0)),
], ids=["add", "rmul", "cat", "stack", "quantile", "quantile-0d-q", "cpu[cuda-index]",
        "cross_entropy-cpu-target", "linear-cpu-weight", "where-cpu-cond", "index_select",
        "cpu-accumulator", "cpu-generator-on-device"])
def test_fake_raises_where_cuda_raises(fake, make_bad):
    with pytest.raises(FakeDeviceError):
        make_bad(_x(fake))


def test_fake_refuses_numpy_like_cuda(fake):
    x = _x(fake)
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        x.numpy()
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        np.asarray(x)


def test_fake_refuses_advanced_index_assignment_from_cpu_values(fake):
    x = _x(fake)
    with pytest.raises(FakeDeviceError, match="for value tensor"):
        x[torch.tensor([0, 1])] = torch.ones(2)


def test_fake_refuses_cpu_grad_on_device_parameter(fake):
    p = torch.nn.Parameter(torch.ones(2)).to(fake.device)
    with pytest.raises(FakeDeviceError, match="different device"):
        p.grad = torch.zeros(2)


# --- what real CUDA accepts ---------------------------------------------------------------

@pytest.mark.parametrize("make_ok", [
    lambda x: x + 1.0,
    lambda x: x * torch.tensor(2.0),                          # a 0-dim CPU scalar
    lambda x: torch.where(x > 0, x, torch.tensor(0.0)),
    lambda x: x[torch.tensor([0, 2])],                        # CPU indices into a CUDA tensor
    lambda x: x[torch.tensor([True, False, True])],
    lambda x: x.clamp(min=torch.tensor(0.5)),
    lambda x: x.cpu() + torch.ones(3),
    lambda x: torch.quantile(x, torch.tensor([0.5], device=x.device)),
    lambda x: torch.zeros_like(x) + x,
    lambda x: x.new_zeros(3) + x,
    lambda x: torch.zeros(3, device=x.device).copy_(torch.ones(3)),
    lambda x: torch.ones(3).copy_(x),
    lambda x: x.to(torch.float64) * 2,
    lambda x: x.masked_fill(x > 1, torch.tensor(0.0)),
], ids=["python-scalar", "0d-cpu", "where-0d", "cpu-index", "cpu-mask", "clamp-0d", "cpu-copy",
        "quantile-on-device", "zeros_like", "new_zeros", "copy-in", "copy-out", "dtype",
        "masked_fill-0d"])
def test_fake_accepts_what_cuda_accepts(fake, make_ok):
    make_ok(_x(fake))


def test_fake_slice_assignment_from_cpu_is_a_copy(fake):
    x = _x(fake)
    x[0:2] = torch.ones(2)
    assert x.tolist() == [1.0, 1.0, 2.0] and is_fake(x)


def test_fake_tensors_report_cuda_and_keep_cpu_numbers(fake):
    x = torch.arange(4.0).to(fake.device)
    assert x.device == FAKE_DEVICE and x.is_cuda and not x.is_cpu
    assert torch.device("cuda:0") == x.device
    y = (x * 2).sum()
    assert y.device == FAKE_DEVICE and y.item() == 12.0
    assert x.cpu().device.type == "cpu" and not is_fake(x.cpu())


def test_fake_transfers_copy_like_a_real_device(fake):
    a = torch.zeros(2)
    b = a.to(fake.device)
    b += 1
    assert a.tolist() == [0.0, 0.0]
    c = b.cpu()
    c += 1
    assert b.tolist() == [1.0, 1.0]
    assert b.to(fake.device) is b


def test_fake_factories_with_device_create_fake_tensors(fake):
    for t in (torch.zeros(2, device="cuda"), torch.arange(3, device=fake.device),
              torch.tensor([1.0, 2.0], device="cuda:0"), torch.full((2,), 3.0, device="cuda"),
              torch.eye(2, device="cuda"), torch.as_tensor(np.ones(2), device="cuda")):
        assert is_fake(t) and t.device == FAKE_DEVICE


def test_fake_moves_module_parameters_and_trains(fake):
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    ref = torch.nn.Linear(3, 2)
    ref.load_state_dict(lin.state_dict())
    lin.to(fake.device)
    assert all(is_fake(p) and isinstance(p, torch.nn.Parameter) for p in lin.parameters())
    opt = torch.optim.Adam(lin.parameters(), lr=0.1)
    opt_ref = torch.optim.Adam(ref.parameters(), lr=0.1)
    x = torch.randn(4, 3)
    for model, optim, inp in ((lin, opt, x.to(fake.device)), (ref, opt_ref, x)):
        model(inp).pow(2).sum().backward()
        optim.step()
    assert is_fake(lin.weight.grad)
    assert torch.equal(lin.weight.detach().cpu(), ref.weight.detach())


def test_fake_records_global_rng_draws_on_the_device(fake):
    x = _x(fake)
    torch.randn(2, device=x.device)
    F.dropout(x, 0.5, training=True)
    F.dropout(x, 0.5, training=False)                  # no draw in eval
    torch.randn(2, generator=torch.Generator().manual_seed(0)).to(x.device)   # drawn on the CPU
    assert fake.rng_draws == ["randn", "dropout"]


def test_fake_lets_the_resolver_accept_cuda(fake):
    assert resolve_device("cuda") == FAKE_DEVICE


def test_fake_runs_a_hugging_face_model_forward_backward_and_generate(fake):
    from icml26.zoo import tiny_llama

    model = tiny_llama(vocab=32, hidden=16, layers=1, heads=2, seed=0)
    ids = torch.randint(0, 32, (1, 5), generator=torch.Generator().manual_seed(0))
    ref = model(ids).logits.detach()
    model.to(fake.device)
    out = model(ids.to(fake.device))
    assert out.logits.device == FAKE_DEVICE and torch.equal(out.logits.detach().cpu(), ref)
    out.logits.sum().backward()
    gen = model.generate(ids.to(fake.device), attention_mask=torch.ones_like(ids).to(fake.device),
                         max_new_tokens=2, do_sample=False, pad_token_id=0)
    assert gen.device == FAKE_DEVICE


def test_outside_the_block_cuda_is_not_faked():
    if torch.cuda.is_available():
        pytest.skip("real CUDA here")
    with pytest.raises((AssertionError, RuntimeError)):
        torch.zeros(2, device="cuda")


# --- check_entry catches a device bug and passes a device-clean component ---------------

class _CpuBuffer(torch.nn.Module):
    """The bug pattern LDAMLoss had: a tensor attribute that `.to()` does not move."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.scale = torch.ones(3)

    def forward(self, x):
        return self.lin(x) * self.scale


class _GoodBuffer(_CpuBuffer):
    def __init__(self):
        super().__init__()
        del self.scale
        self.register_buffer("scale", torch.ones(3))


def _run(cls):
    return lambda dev: forward_backward(cls().to(dev), torch.randn(2, 3).to(dev))


def test_check_entry_fails_on_a_plain_tensor_attribute():
    with pytest.raises(FakeDeviceError):
        check_entry(DeviceEntry("demo.CpuBuffer", _run(_CpuBuffer)), "fake")


def test_check_entry_passes_a_buffer():
    check_entry(DeviceEntry("demo.GoodBuffer", _run(_GoodBuffer)), "fake")


def test_check_entry_fails_on_an_undocumented_device_draw():
    def run(dev):
        return torch.randn(3, device=dev)
    with pytest.raises(AssertionError, match="drawn on the device"):
        check_entry(DeviceEntry("demo.draw", run), "fake")
    check_entry(DeviceEntry("demo.draw", lambda dev: torch.randn(3, device=dev).shape,
                            rng_draws=("randn",)), "fake")


def test_check_entry_fails_when_numpy_does_not_stay_numpy():
    def run(dev):
        out = torch.ones(2, device=dev)
        return out if dev.type != "cpu" else out.numpy()
    with pytest.raises(AssertionError, match="numpy must stay numpy"):
        check_entry(DeviceEntry("demo.numpy", run), "fake")


def test_check_entry_fails_when_outputs_stay_on_the_cpu():
    with pytest.raises(AssertionError, match="expected cuda:0"):
        check_entry(DeviceEntry("demo.cpu", lambda dev: torch.ones(2)), "fake")


def test_fake_keeps_tied_weights_tied_and_parameter_identity(fake):
    emb = torch.nn.Embedding(5, 3)
    head = torch.nn.Linear(3, 5, bias=False)
    head.weight = emb.weight
    model = torch.nn.ModuleDict({"emb": emb, "head": head})
    before = emb.weight
    model.to(fake.device)
    assert model["head"].weight is model["emb"].weight is before
    assert is_fake(before) and isinstance(before, torch.nn.Parameter)
    model.cpu()
    assert not is_fake(before) and before.device.type == "cpu"


def test_fake_module_to_with_keywords(fake):
    lin = torch.nn.Linear(2, 2)
    lin.to(device=fake.device, dtype=torch.float64)
    assert lin.weight.device == FAKE_DEVICE and lin.weight.dtype == torch.float64


def test_fake_slice_assignment_into_cpu_is_a_copy_but_index_put_is_not(fake):
    x = _x(fake)
    cpu = torch.zeros(4)
    cpu[1:4] = x
    assert cpu.tolist() == [0.0, 0.0, 1.0, 2.0]
    with pytest.raises(FakeDeviceError):
        cpu[torch.tensor([0, 1, 2])] = x


def test_fake_sparse_tensors_are_tracked(fake):
    idx = torch.tensor([[0, 1], [1, 0]], device="cuda")
    adj = torch.sparse_coo_tensor(idx, torch.ones(2, device="cuda"), (2, 2)).coalesce()
    csr = adj.to_sparse_csr()
    assert adj.device == FAKE_DEVICE and csr.device == FAKE_DEVICE and is_fake(csr)
    out = csr @ torch.ones(2, 3, device="cuda")
    assert is_fake(out) and out.sum().item() == 6.0
    with pytest.raises(FakeDeviceError):
        csr @ torch.ones(2, 3)
    cpu_adj = torch.sparse_coo_tensor(torch.tensor([[0], [1]]), torch.ones(1), (2, 2))
    moved = cpu_adj.to(fake.device)
    assert moved.device == FAKE_DEVICE and moved.cpu().device.type == "cpu"
    with pytest.raises(FakeDeviceError):
        cpu_adj.to_sparse_csr() @ torch.ones(2, 3, device="cuda")


def test_fake_deepcopy_keeps_the_device_and_the_class(fake):
    import copy

    lin = torch.nn.Linear(2, 2).to(fake.device)
    twin = copy.deepcopy(lin)
    assert is_fake(twin.weight) and isinstance(twin.weight, torch.nn.Parameter)
    assert twin.weight is not lin.weight and torch.equal(twin.weight.cpu(), lin.weight.cpu())
    state = copy.deepcopy(lin.state_dict())
    assert all(is_fake(v) for v in state.values())


def test_fake_tensors_save_and_load_with_weights_only(fake, tmp_path):
    lin = torch.nn.Linear(2, 2).to(fake.device)
    torch.save(lin.state_dict(), tmp_path / "w.pt")
    state = torch.load(tmp_path / "w.pt", weights_only=True)
    assert torch.equal(state["weight"], lin.weight.detach().cpu())
    fresh = torch.nn.Linear(2, 2).to(fake.device)
    fresh.load_state_dict(state)
    assert is_fake(fresh.weight) and torch.equal(fresh.weight.cpu(), lin.weight.cpu())
