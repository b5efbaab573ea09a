"""Every public torch component has a device test (or a written reason why it needs none).

A public torch component is a name in a method's ``__all__`` that is an ``nn.Module``
subclass, a class taking ``device=``, or any function or class defined in a module that
imports torch or whose own source uses torch. Each must be covered by an entry of ``tests/<slug>/test_<slug>_device.py``
(``ENTRIES``) or listed with its reason in that file's ``NO_DEVICE``.
"""

import importlib
import inspect
import sys
from pathlib import Path

import pytest
import torch

from devicecheck import load_registry

SRC = Path(__file__).resolve().parents[2] / "src" / "icml26"
METHODS = sorted(p.name for p in SRC.iterdir()
                 if (p / "__init__.py").exists() and p.name not in ("core", "__pycache__"))


def _uses_torch(obj) -> bool:
    """Defined in a module that imports torch, or imports/uses torch in its own source."""
    home = sys.modules.get(obj.__module__)
    if home is not None and "torch" in vars(home):
        return True
    try:
        source = _without_docstrings(inspect.getsource(obj))
    except (OSError, TypeError):
        return False
    return "import torch" in source or "torch." in source


def _without_docstrings(source: str) -> str:
    """The code of ``source`` without its docstrings (a docstring example that builds torch
    tensors does not make an exception class a torch component)."""
    import ast
    import textwrap

    tree = ast.parse(textwrap.dedent(source))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and body and isinstance(body[0], ast.Expr)
                and isinstance(getattr(body[0], "value", None), ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def _takes_device(obj) -> bool:
    try:
        return "device" in inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return False


def torch_components(slug: str) -> set:
    """The public torch components of method ``slug`` as ``"<slug>.<name>"``."""
    module = importlib.import_module(f"icml26.{slug}")
    found = set()
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if (inspect.isclass(obj) and issubclass(obj, torch.nn.Module)) or \
                (inspect.isclass(obj) and _takes_device(obj)) or _uses_torch(obj):
            found.add(f"{slug}.{name}")
    return found


REGISTRY = load_registry()


@pytest.mark.parametrize("slug", METHODS)
def test_every_public_torch_component_has_a_device_entry(slug):
    required = torch_components(slug)
    entries, no_device, _ = REGISTRY.get(slug, ([], {}, {}))
    covered = set().union(*(e.names() for e in entries)) if entries else set()
    exempt = {f"{slug}.{name}" for name in no_device}
    missing = sorted(required - covered - exempt)
    assert not missing, (f"public torch components of {slug} without a device test: {missing}; "
                         f"add a DeviceEntry to tests/{slug}/test_{slug}_device.py (or a reason "
                         f"in its NO_DEVICE)")


@pytest.mark.parametrize("slug", sorted(REGISTRY))
def test_registry_names_exist(slug):
    module = importlib.import_module(f"icml26.{slug}")
    entries, no_device, follows = REGISTRY[slug]
    public = {f"{slug}.{n}" for n in getattr(module, "__all__", [])}
    named = set().union(*(e.names() for e in entries)) if entries else set()
    stale = sorted(named - public) + sorted(f"{slug}.{n}" for n in {**no_device, **follows}
                                            if f"{slug}.{n}" not in public)
    assert not stale, f"device entries naming no public component of {slug}: {stale}"
    assert all(reason.strip() for reason in {**no_device, **follows}.values()), \
        "every NO_DEVICE / FOLLOWS_INPUTS entry needs a reason"
    assert not (named & {f"{slug}.{n}" for n in no_device}), "covered and exempted at once"


def test_torch_estimators_take_device():
    """Every class in ``__all__`` whose fit trains a torch model takes ``device=`` (or is listed
    in FOLLOWS_INPUTS: it computes where its tensor inputs live)."""
    missing = []
    for slug in METHODS:
        entries, no_device, follows = REGISTRY.get(slug, ([], {}, {}))
        for name in getattr(importlib.import_module(f"icml26.{slug}"), "__all__", []):
            obj = getattr(importlib.import_module(f"icml26.{slug}"), name)
            if inspect.isclass(obj) and hasattr(obj, "fit") and \
                    f"{slug}.{name}" in torch_components(slug) and \
                    not issubclass(obj, torch.nn.Module) and not _takes_device(obj) and \
                    name not in no_device and name not in follows:
                missing.append(f"{slug}.{name}")
    assert not missing, f"torch-backed estimators without device=: {missing}"
