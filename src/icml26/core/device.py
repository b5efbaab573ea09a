"""Where torch work runs: one resolver for every ``device=`` argument, and the job's device.

* :func:`resolve_device` turns what a user passes (``"cpu"``, ``"cuda"``, ``"cuda:1"``,
  ``"auto"``, a ``torch.device``) into a ``torch.device``, with a clear error naming the
  argument when it is malformed or not available (skorch's convention: estimators take
  ``device="cpu"`` and resolve it in ``fit``).
* :func:`job_device` is the device ``icml26 run SLUG --device ...`` chose for the running job
  (the runner sets ``ICML26_DEVICE`` per job; a part's config is never changed, so recorded
  ledgers stay current). Default ``"cpu"``. A part whose ``run`` is decorated with
  :func:`uses_device` builds its torch models there.
* :func:`seeded_rng` seeds torch's CPU generator (and the one CUDA generator a block draws
  on) for a block and restores them after, so a seeded build never moves the caller's RNG.
* :func:`to_numpy` is the one way a tensor leaves torch: detached, on the CPU, as numpy.

Nothing here imports torch at module import time (``icml26 list`` stays fast).
"""

from __future__ import annotations

import contextlib
import os
import re

__all__ = ["DEVICE_ENV", "DEVICE_CHOICES", "resolve_device", "check_device_spec", "job_device",
           "uses_device", "cpu_only", "part_uses_device", "device_note", "device_cache_key",
           "seeded_rng", "to_numpy", "deterministic_cuda_env",
           "CUBLAS_WORKSPACE"]

DEVICE_ENV = "ICML26_DEVICE"
DEVICE_CHOICES = "'cpu', 'cuda', 'cuda:N' or 'auto'"
# cuBLAS needs a fixed workspace to be deterministic (torch's "Reproducibility" notes); the
# runner sets it when a job runs on CUDA and deterministic algorithms may be turned on.
CUBLAS_WORKSPACE = ":4096:8"

_SPEC = re.compile(r"^(cpu|cuda|auto|mps)(:\d+)?$")
_FAKE_CUDA = [False]          # set by the tests' fake second device (tests/fakecuda.py)


def check_device_spec(device, name: str = "device") -> str:
    """Validate a device string without importing torch; return it stripped and lower-cased.

    Raises ``ValueError`` naming ``name`` unless it reads ``cpu``, ``cuda``, ``cuda:N``,
    ``mps`` or ``auto``. Whether the device exists is :func:`resolve_device`'s job.

    Examples
    --------
    >>> check_device_spec("CUDA:1")
    'cuda:1'
    """
    if not isinstance(device, str):
        raise TypeError(f"{name} must be a string ({DEVICE_CHOICES}), got "
                        f"{type(device).__name__}")
    text = device.strip().lower()
    match = _SPEC.match(text)
    if not match or (match.group(2) and match.group(1) not in ("cuda",)):
        raise ValueError(f"{name} must be {DEVICE_CHOICES}, got {device!r}")
    return text


def _cuda_count() -> int:
    import torch

    if _FAKE_CUDA[0]:
        return 1
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _cuda_current() -> int:
    import torch

    return 0 if _FAKE_CUDA[0] else torch.cuda.current_device()


def resolve_device(device="cpu", name: str = "device"):
    """The ``torch.device`` that ``device`` names, checked to exist.

    Parameters
    ----------
    device : str or torch.device
        ``"cpu"``, ``"cuda"`` (the current CUDA device), ``"cuda:N"``, ``"mps"`` or ``"auto"``
        (CUDA when ``torch.cuda.is_available()``, else CPU).
    name : str
        The argument's name in error messages.

    Returns
    -------
    torch.device
        With an explicit index for CUDA (``cuda:0``), so it compares equal to a tensor's
        ``.device``.

    Raises
    ------
    TypeError
        ``device`` is neither a string nor a ``torch.device``.
    ValueError
        Malformed, or CUDA/MPS is not available, or the CUDA index does not exist.

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("auto").type in ("cpu", "cuda")
    True
    """
    import torch

    if isinstance(device, torch.device):
        text = str(device)
    elif isinstance(device, str):
        text = device
    else:
        raise TypeError(f"{name} must be a string ({DEVICE_CHOICES}) or a torch.device, got "
                        f"{type(device).__name__}")
    text = check_device_spec(text, name)
    if text == "auto":
        text = "cuda" if _cuda_count() > 0 else "cpu"
    dev = torch.device(text)
    if dev.type == "cuda":
        count = _cuda_count()
        if count == 0:
            raise ValueError(f"{name}={device!r}: CUDA is not available "
                             f"(torch.cuda.is_available() is False); use 'cpu' or 'auto'")
        index = _cuda_current() if dev.index is None else dev.index
        if index >= count:
            raise ValueError(f"{name}={device!r}: no such CUDA device ({count} visible)")
        return torch.device("cuda", index)
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{name}={device!r}: MPS is not available; use 'cpu' or 'auto'")
    return dev


def job_device() -> str:
    """The device of the running job: ``$ICML26_DEVICE`` resolved (default ``"cpu"``).

    ``icml26 run SLUG --device cuda`` sets it for every job; experiment code passes it to
    the models and estimators it builds (``device=job_device()``).

    Examples
    --------
    >>> job_device() in ("cpu", "cuda:0") or job_device().startswith("cuda")
    True
    """
    return str(resolve_device(os.environ.get(DEVICE_ENV, "cpu") or "cpu", DEVICE_ENV))


def device_cache_key() -> dict:
    """What a cache key adds for the running job's device: nothing on the CPU (so the keys of CPU
    runs, and recorded results, are unchanged), ``{"device": "cuda"}`` on another device type
    (its kernels and generators give other numbers, which must not be served to a CPU run)."""
    kind = job_device().split(":")[0]
    return {} if kind == "cpu" else {"device": kind}


def uses_device(run):
    """Mark a part's ``run`` function as honouring ``icml26 run --device``: it builds its torch
    models and estimators on :func:`job_device`. ``--dry-run`` says which parts do not.

    Examples
    --------
    >>> @uses_device
    ... def run(config, seed):
    ...     return {"device": job_device()}
    >>> run.uses_device
    True
    """
    run.uses_device = True
    return run


def cpu_only(reason: str):
    """Mark a part's ``run`` as staying on the CPU whatever ``--device`` says, with the reason
    ``--dry-run`` prints (e.g. "a CPU-seconds measurement")."""
    def mark(run):
        run.cpu_only = str(reason)
        return run
    return mark


def part_uses_device(part) -> bool:
    """Whether a :class:`~icml26.core.experiment.Part`'s ``run`` honours ``--device``."""
    return bool(getattr(part.run, "uses_device", False))


def device_note(part, device: str) -> str:
    """Where a part runs under ``--device device``, in words (for ``--dry-run``)."""
    if part_uses_device(part):
        return f"device {device}"
    reason = getattr(part.run, "cpu_only", None) or "this part runs no torch model on the device"
    return f"device cpu ({reason}; --device does not apply)"


def deterministic_cuda_env() -> None:
    """Set ``CUBLAS_WORKSPACE_CONFIG`` (unless set) so deterministic algorithms can run on CUDA.

    Must run before the process's first cuBLAS call; the runner calls it for every CUDA job.
    """
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)


@contextlib.contextmanager
def seeded_rng(seed: int, device="cpu"):
    """Seed torch's CPU generator, and ``device``'s own generator when it is a CUDA device,
    for the block; restore both afterwards (the caller's RNG never moves).

    Unlike ``torch.manual_seed`` inside ``fork_rng(devices=[])``, no other CUDA generator is
    reseeded (``torch.manual_seed`` reseeds every CUDA device and ``fork_rng(devices=[])``
    restores none of them).

    Examples
    --------
    >>> import torch
    >>> with seeded_rng(0):
    ...     a = torch.rand(2)
    >>> with seeded_rng(0):
    ...     b = torch.rand(2)
    >>> bool((a == b).all())
    True
    """
    import torch

    dev = torch.device(device)
    cuda = []
    if dev.type == "cuda" and torch.cuda.is_available():
        cuda = [torch.cuda.current_device() if dev.index is None else dev.index]
    with torch.random.fork_rng(devices=cuda):
        torch.default_generator.manual_seed(int(seed))
        for index in cuda:
            with torch.cuda.device(index):
                torch.cuda.manual_seed(int(seed))
        yield


def to_numpy(tensor):
    """``tensor`` as a numpy array: detached and copied to the CPU first when needed."""
    return tensor.detach().cpu().numpy()


@contextlib.contextmanager
def _fake_cuda_available():
    """For the tests' fake second device only: let :func:`resolve_device` accept ``cuda:0``."""
    old = _FAKE_CUDA[0]
    _FAKE_CUDA[0] = True
    try:
        yield
    finally:
        _FAKE_CUDA[0] = old
