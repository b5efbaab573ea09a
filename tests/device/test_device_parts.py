"""Every part of a torch experiment says where it runs under ``--device``: it builds its models
on ``job_device()`` (``@uses_device``) or stays on the CPU with a reason (``@cpu_only``)."""

import inspect
import sys

import pytest

from icml26.core.catalog import method_folders
from icml26.core.device import device_note, part_uses_device
from icml26.core.experiment import get_experiment


def _parts():
    for slug in method_folders():
        for part in get_experiment(slug).parts:
            yield pytest.param(slug, part, id=f"{slug}-{part.name}")


@pytest.mark.parametrize("slug, part", list(_parts()))
def test_torch_parts_declare_their_device(slug, part):
    module = sys.modules[part.run.__module__]
    source = inspect.getsource(part.run)
    if "torch" not in vars(module) and "torch" not in source:
        return                                         # a numpy/scikit-learn part
    reason = getattr(part.run, "cpu_only", None)
    assert part_uses_device(part) or (reason and reason.strip()), \
        f"{slug} part {part.name!r} ({part.run.__name__}) runs torch but is neither @uses_device " \
        f"nor @cpu_only(reason)"


@pytest.mark.parametrize("slug, part", [p for p in _parts() if part_uses_device(p.values[1])])
def test_device_parts_read_the_job_device(slug, part):
    module_source = inspect.getsource(sys.modules[part.run.__module__])
    assert "job_device()" in module_source, f"{slug}.{part.run.__name__} never calls job_device()"
    assert device_note(part, "cuda:0") == "device cuda:0"
