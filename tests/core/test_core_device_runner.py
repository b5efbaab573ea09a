"""`--device`: the runner hands the device to each job without touching its config, and the CLI
validates it and says in --dry-run which parts stay on the CPU."""

import os
from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from icml26.cli import app
from icml26.core import device as core_device
from icml26.core.device import DEVICE_ENV, job_device, uses_device
from icml26.core.example import EXPERIMENT
from icml26.core.experiment import Claim, Experiment, Part, Result
from icml26.core.runner import run_experiment


@dataclass(frozen=True)
class _Cfg:
    size: int = 1


@uses_device
def _torch_part(config, seed):
    return {"device": job_device(), "cublas": os.environ.get("CUBLAS_WORKSPACE_CONFIG", "")}


def _cpu_part(config, seed):
    return {"device": os.environ.get(DEVICE_ENV, "unset")}


def _summary(jobs, config):
    return Result(claims=[Claim.at_least("ran", len(jobs), 1, paper="-")])


PROBE = Experiment(slug="device-probe", title="device probe", parts=[
    Part("torch", _torch_part, _summary, _Cfg(), _Cfg(), seeds=(0,), quick_seeds=(0,)),
    Part("numpy", _cpu_part, _summary, _Cfg(), _Cfg(), seeds=(0,), quick_seeds=(0,)),
])


def _devices(outcome):
    return {p.part: p.jobs[0].metrics for p in outcome.parts}


def test_default_runs_on_the_cpu_and_leaves_the_environment(monkeypatch):
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    out = _devices(run_experiment(PROBE))
    assert out["torch"]["device"] == "cpu" and out["numpy"]["device"] == "unset"
    assert DEVICE_ENV not in os.environ


def test_device_reaches_every_job_and_sets_the_cublas_workspace(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    with core_device._fake_cuda_available():
        out = _devices(run_experiment(PROBE, device="cuda:0"))
    assert out["torch"] == {"device": "cuda:0", "cublas": ":4096:8"}
    assert out["numpy"]["device"] == "cuda:0"          # the env is set; the part ignores it
    assert DEVICE_ENV not in os.environ                # restored after the job


def test_joblib_workers_get_the_device(monkeypatch):
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    out = _devices(run_experiment(PROBE, jobs=2, device="cpu"))
    assert out["torch"]["device"] == "cpu" and out["numpy"]["device"] == "cpu"


def test_device_does_not_change_configs_or_numbers():
    base = run_experiment(EXPERIMENT, quick=True)
    moved = run_experiment(EXPERIMENT, quick=True, device="cpu")
    assert [p.config for p in base.parts] == [p.config for p in moved.parts]
    assert [j.metrics for p in base.parts for j in p.jobs] == \
        [j.metrics for p in moved.parts for j in p.jobs]


runner = CliRunner()


@pytest.mark.parametrize("bad", ["gpu", "cuda:x"])
def test_cli_rejects_a_malformed_device(bad):
    result = runner.invoke(app, ["run", "pointchr", "--dry-run", "--device", bad])
    assert result.exit_code == 2 and "--device must be" in result.output


def test_cli_refuses_cuda_where_there_is_none():
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    result = runner.invoke(app, ["run", "pointchr", "--dry-run", "--device", "cuda"])
    assert result.exit_code == 2 and "CUDA is not available" in result.output


def test_cli_auto_without_cuda_is_the_cpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    result = runner.invoke(app, ["run", "pointchr", "--dry-run", "--device", "auto"])
    assert result.exit_code == 0 and "device" not in result.output.split("dry run")[0].lower() \
        .replace("device-", "")


def test_cli_dry_run_names_the_parts_that_stay_on_the_cpu():
    with core_device._fake_cuda_available():
        result = runner.invoke(app, ["run", "pointchr", "--dry-run", "--device", "cuda"])
    assert result.exit_code == 0, result.output
    lines = [ln.strip() for ln in result.output.splitlines() if ln.strip().startswith("device")]
    assert any(ln == "device cuda:0" for ln in lines)
    assert any("--device does not apply" in ln for ln in lines)   # pointchr's cost slopes
