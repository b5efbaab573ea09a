"""The device resolver, the job's device, seeded RNG blocks, and torch as a dependency range."""

import json
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import torch

from icml26.core import device as core_device
from icml26.core.device import (DEVICE_ENV, check_device_spec, deterministic_cuda_env, job_device,
                                resolve_device, seeded_rng, to_numpy)

ROOT = Path(__file__).resolve().parents[2]
EXACT_PIN = re.compile(r"^torch\s*(\[[^\]]*\])?\s*===?\s*[\w.+]+\s*(;.*)?$")


def _torch_requirements(requirements) -> list[str]:
    return [r for r in requirements or [] if re.match(r"^torch\b(?![\w-])", r.strip())]


def test_pyproject_depends_on_a_torch_range_not_a_pin():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    torch_deps = _torch_requirements(deps)
    assert torch_deps, "torch must be a dependency"
    assert not any(EXACT_PIN.match(r) for r in torch_deps), torch_deps
    assert any(">=" in r for r in torch_deps), torch_deps


def test_constraints_pin_the_cpu_build():
    lines = [ln.strip() for ln in (ROOT / "constraints.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert any(EXACT_PIN.match(ln) for ln in lines), lines


def test_installed_metadata_has_no_exact_torch_pin():
    dist = metadata.distribution("icml26")
    origin = json.loads(dist.read_text("direct_url.json") or "{}").get("url", "")
    if origin.startswith("file://") and Path(origin[7:]).resolve() != ROOT:
        pytest.skip(f"icml26 is installed from {origin}, not this checkout; reinstall to check")
    torch_reqs = _torch_requirements(dist.requires)
    assert torch_reqs, "the installed icml26 must require torch"
    assert not any(EXACT_PIN.match(r) for r in torch_reqs), \
        f"an exact torch pin in the installed metadata replaces a user's CUDA build: {torch_reqs}"


def test_exact_pin_pattern_matches_pins_only():
    assert EXACT_PIN.match("torch==2.13.0") and EXACT_PIN.match("torch===2.4")
    assert not EXACT_PIN.match("torch>=2.4,<3") and not EXACT_PIN.match("torchvision==0.1")


def test_resolve_device_cpu_and_torch_device():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert resolve_device(" CPU ") == torch.device("cpu")


def test_resolve_device_auto_follows_cuda_availability():
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == want


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_resolve_device_cuda_without_cuda_names_the_argument():
    with pytest.raises(ValueError, match=r"device='cuda'.*CUDA is not available"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match=r"gpu='cuda:1'"):
        resolve_device("cuda:1", name="gpu")


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "cpu:1", "", "cuda:-1"])
def test_resolve_device_rejects_malformed(bad):
    with pytest.raises(ValueError, match=r"device must be 'cpu', 'cuda', 'cuda:N' or 'auto'"):
        resolve_device(bad)


@pytest.mark.parametrize("bad", [0, 1.5, None])
def test_resolve_device_rejects_non_strings(bad):
    with pytest.raises(TypeError, match="device must be a string"):
        resolve_device(bad)


def test_resolve_device_fake_cuda_gets_an_index():
    with core_device._fake_cuda_available():
        assert resolve_device("cuda") == torch.device("cuda", 0)
        assert resolve_device("auto") == torch.device("cuda", 0)
        with pytest.raises(ValueError, match="no such CUDA device"):
            resolve_device("cuda:1")


def test_check_device_spec_does_not_need_torch_semantics():
    assert check_device_spec("Cuda:2") == "cuda:2"
    with pytest.raises(ValueError, match="--device must be"):
        check_device_spec("tpu", "--device")


def test_job_device_reads_the_environment(monkeypatch):
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    assert job_device() == "cpu"
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    assert job_device() == "cpu"
    monkeypatch.setenv(DEVICE_ENV, "nonsense")
    with pytest.raises(ValueError, match=DEVICE_ENV):
        job_device()


def test_deterministic_cuda_env_sets_cublas_workspace_once(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    deterministic_cuda_env()
    import os
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    deterministic_cuda_env()
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"


def test_seeded_rng_is_reproducible_and_restores_the_global_rng():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    with seeded_rng(0):
        a = torch.rand(2)
    with seeded_rng(0):
        b = torch.rand(2)
    assert torch.equal(a, b)
    assert torch.equal(torch.rand(3), expected)


def test_seeded_rng_leaves_cuda_generators_alone(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "manual_seed_all", lambda seed: calls.append(seed))
    monkeypatch.setattr(torch.cuda, "manual_seed", lambda seed: calls.append(seed))
    with seeded_rng(5):
        torch.rand(1)
    assert calls == []


def test_to_numpy_detaches_and_copies_to_cpu():
    t = torch.ones(2, requires_grad=True) * 2
    arr = to_numpy(t)
    assert arr.tolist() == [2.0, 2.0]
