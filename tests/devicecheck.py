"""Every public torch component, run on a second device and compared with the CPU (#51).

Each method lists its components once (``tests/<slug>/test_<slug>_device.py``)::

    from devicecheck import DeviceEntry, device_cases, check_entry

    ENTRIES = [
        DeviceEntry("pointchr.quantile_gate",
                    lambda dev: quantile_gate(torch.linspace(0, 1, 101, device=dev))),
    ]
    NO_DEVICE = {"make_fine_detail_dataset": "builds numpy data; no tensor work"}

    @pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
    def test_device(entry, kind):
        check_entry(entry, kind)

``run(device)`` builds the component with tiny inputs *on* ``device`` (modules built on the
CPU, then ``.to(device)``; inputs made there or moved there; estimators given
``device=device``) and returns what a user gets back (tensors, arrays, numbers, nested
dicts/lists). :func:`check_entry` runs it on the CPU and then

* ``"fake"`` (always): under :class:`fakecuda.FakeCuda`: any device mixing raises; the outputs
  must equal the CPU outputs exactly (the fake device computes on the CPU), tensors must come
  back on the device (``outputs="device"``) and numpy must stay numpy; the random ops that drew
  on the device from its global generator must be exactly ``rng_draws`` (documented: real
  CUDA's generator gives other numbers there);
* ``"cuda"`` (where ``torch.cuda.is_available()``): for real, compared with the CPU within
  ``rtol``/``atol`` (TF32 off); entries with ``rng_draws`` compare shapes only.

``tests/device/test_device_registry.py`` fails when a public torch component (an
``nn.Module``, an estimator taking ``device=``, or a function or class of a torch-importing
module in a method's ``__all__``) has no entry and no reason in ``NO_DEVICE``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch

from fakecuda import FakeCuda, is_fake
from icml26.core.device import seeded_rng

__all__ = ["DeviceEntry", "device_cases", "check_entry", "forward_backward", "load_registry",
           "cuda_available"]

TESTS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class DeviceEntry:
    """One public torch component run on a device.

    Parameters
    ----------
    name : str
        ``"<slug>.<public name>"``, optionally followed by a variant in words
        (``"pointchr.PointNet2Lite with CHR"``).
    run : callable
        ``run(device) -> outputs``.
    covers : tuple of str
        Further public names (``"<slug>.<name>"``) this entry exercises.
    rng_draws : tuple of str
        Random ops that draw on the device from its global generator, documented (e.g.
        ``("dropout",)`` for a module trained with dropout).
    outputs : {"device", "cpu", "any"}
        Where the returned tensors must live.
    rtol, atol : float
        Tolerance of the real-CUDA comparison.
    note : str
        Why a CUDA run differs beyond tolerance, where it does by design.
    """

    name: str
    run: Callable[[torch.device], Any]
    covers: tuple = ()
    rng_draws: tuple = ()
    outputs: str = "device"
    rtol: float = 1e-4
    atol: float = 1e-5
    note: str = ""

    @property
    def component(self) -> str:
        return self.name.split()[0]

    def names(self) -> set:
        return {self.component, *self.covers}


def cuda_available() -> bool:
    return torch.cuda.is_available()


def device_cases(entries) -> list:
    """``(entry, kind)`` pytest params: ``fake`` always, ``cuda`` skipped without a GPU."""
    cases = []
    for e in entries:
        cases.append(pytest.param(e, "fake", id=f"{e.name}-fake"))
        cases.append(pytest.param(e, "cuda", id=f"{e.name}-cuda", marks=pytest.mark.skipif(
            not cuda_available(), reason="no CUDA device: the fake device covers device mixing")))
    return cases


def forward_backward(module: torch.nn.Module, *inputs, reduce=None) -> dict:
    """Outputs of ``module(*inputs)`` and the gradients of every parameter after backward of
    the sum of every float output that has a gradient (or of ``reduce(outputs)``)."""
    from torch.utils._pytree import tree_flatten

    out = module(*inputs)
    if reduce is not None:
        loss = reduce(out)
    else:
        leaves = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)
                  and t.is_floating_point() and t.requires_grad]
        loss = sum(t.float().sum() for t in leaves)
    loss.backward()
    grads = {n: p.grad for n, p in module.named_parameters() if p.grad is not None}
    return {"out": out, "loss": loss, "grads": grads}


def _assert_same(ref, out, device, *, exact: bool, outputs: str, rtol: float, atol: float,
                 path: str = "out") -> None:
    if isinstance(ref, torch.nn.Module):
        assert isinstance(out, torch.nn.Module), f"{path}: expected a module"
        for name, p in out.named_parameters():
            if outputs == "device":
                assert p.device == device, f"{path}.{name} on {p.device}, expected {device}"
        _assert_same(dict(ref.state_dict()), dict(out.state_dict()), device, exact=exact,
                     outputs=outputs, rtol=rtol, atol=atol, path=path + ".state_dict")
        return
    if isinstance(ref, torch.Tensor):
        assert isinstance(out, torch.Tensor), f"{path}: expected a tensor, got {type(out)}"
        if outputs == "device":
            assert out.device == device, f"{path} on {out.device}, expected {device}"
        elif outputs == "cpu":
            assert out.device.type == "cpu" and not is_fake(out), f"{path} on {out.device}"
        assert out.dtype == ref.dtype, f"{path}: dtype {out.dtype} != {ref.dtype}"
        assert out.shape == ref.shape, f"{path}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
        got, want = out.detach().cpu(), ref.detach()
        if exact:
            assert torch.equal(got.nan_to_num(0.123), want.nan_to_num(0.123)), \
                f"{path}: differs from the CPU by {_maxdiff(got, want)}"
        elif got.is_floating_point() or got.is_complex():
            torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True,
                                       msg=lambda m: f"{path}: {m}")
        else:
            assert torch.equal(got, want), f"{path}: integer outputs differ"
        return
    if isinstance(ref, np.ndarray):
        assert isinstance(out, np.ndarray), f"{path}: numpy must stay numpy, got {type(out)}"
        assert out.shape == ref.shape and out.dtype == ref.dtype, f"{path}: shape/dtype differ"
        if exact:
            np.testing.assert_array_equal(out, ref, err_msg=path)
        elif out.dtype.kind in "fc":
            np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol, err_msg=path)
        else:
            np.testing.assert_array_equal(out, ref, err_msg=path)
        return
    if isinstance(ref, dict):
        assert isinstance(out, dict) and set(out) == set(ref), f"{path}: keys differ"
        for k in ref:
            _assert_same(ref[k], out[k], device, exact=exact, outputs=outputs, rtol=rtol,
                         atol=atol, path=f"{path}[{k!r}]")
        return
    if isinstance(ref, (list, tuple)):
        assert isinstance(out, (list, tuple)) and len(out) == len(ref), f"{path}: length differs"
        for i, (a, b) in enumerate(zip(ref, out)):
            _assert_same(a, b, device, exact=exact, outputs=outputs, rtol=rtol, atol=atol,
                         path=f"{path}[{i}]")
        return
    if dataclasses.is_dataclass(ref) and not isinstance(ref, type):
        assert type(out) is type(ref), f"{path}: type {type(out)} != {type(ref)}"
        for f in dataclasses.fields(ref):
            _assert_same(getattr(ref, f.name), getattr(out, f.name), device, exact=exact,
                         outputs=outputs, rtol=rtol, atol=atol, path=f"{path}.{f.name}")
        return
    if hasattr(ref, "keys") and hasattr(ref, "__getitem__"):          # ModelOutput and kin
        _assert_same(dict(ref.items()), dict(out.items()), device, exact=exact, outputs=outputs,
                     rtol=rtol, atol=atol, path=path)
        return
    if isinstance(ref, (float, np.floating)) and not isinstance(ref, bool):
        assert isinstance(out, (float, int, np.number)), f"{path}: expected a number"
        if exact:
            assert (math.isnan(ref) and math.isnan(out)) or out == ref, f"{path}: {out} != {ref}"
        else:
            assert math.isclose(out, ref, rel_tol=rtol, abs_tol=atol) or \
                (math.isnan(ref) and math.isnan(out)), f"{path}: {out} != {ref}"
        return
    if isinstance(ref, (int, str, bool, type(None), np.integer, np.bool_)):
        assert out == ref, f"{path}: {out!r} != {ref!r}"
        return
    assert type(out) is type(ref), f"{path}: type {type(out)} != {type(ref)}"


def _maxdiff(a, b) -> str:
    if a.is_floating_point():
        return f"max |diff| {float((a - b).abs().nan_to_num(0).max()):.3g}"
    return "integer mismatch"


def check_entry(entry: DeviceEntry, kind: str) -> None:
    """Run ``entry`` on the CPU and on ``kind`` (``"fake"`` or ``"cuda"``) and compare."""
    with seeded_rng(0):
        ref = entry.run(torch.device("cpu"))
    if kind == "fake":
        with FakeCuda() as fake:
            with seeded_rng(0):
                out = entry.run(fake.device)
            draws = sorted(set(fake.rng_draws))
        assert draws == sorted(set(entry.rng_draws)), \
            f"random ops drawn on the device from its global generator: {draws}; documented: " \
            f"{sorted(set(entry.rng_draws))}"
        _assert_same(ref, out, fake.device, exact=True, outputs=entry.outputs, rtol=0, atol=0)
        return
    device = torch.device("cuda", torch.cuda.current_device())
    tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        with seeded_rng(0, device):
            out = entry.run(device)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
    if entry.rng_draws or entry.note:
        ref, out = _shapes(ref), _shapes(out)
    _assert_same(ref, out, device, exact=False, outputs=entry.outputs, rtol=entry.rtol,
                 atol=entry.atol)


def _shapes(obj):
    """Tensors replaced by their shapes (for runs whose numbers differ by design)."""
    if isinstance(obj, torch.Tensor):
        return tuple(obj.shape)
    if isinstance(obj, np.ndarray):
        return obj.shape
    if isinstance(obj, dict):
        return {k: _shapes(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_shapes(v) for v in obj]
    if isinstance(obj, float):
        return "float"
    return obj


def load_registry() -> dict:
    """``{slug: (ENTRIES, NO_DEVICE, FOLLOWS_INPUTS)}`` from every
    ``tests/<slug>/test_<slug>_device.py``. ``FOLLOWS_INPUTS`` names estimators that take no
    ``device=`` because they compute where their tensor inputs (or given model) live."""
    out = {}
    for path in sorted(TESTS.glob("*/test_*_device.py")):
        slug = path.parent.name
        spec = importlib.util.spec_from_file_location(f"_device_registry_{slug}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out[slug] = (list(getattr(module, "ENTRIES", [])), dict(getattr(module, "NO_DEVICE", {})),
                     dict(getattr(module, "FOLLOWS_INPUTS", {})))
    return out
