"""A second device on a CPU-only machine: tensors that say they live on ``cuda:0``, hold CPU
data, and raise wherever real CUDA would (so ``make test`` catches device mixing without a GPU).

::

    from fakecuda import FakeCuda

    with FakeCuda() as fake:
        x = torch.randn(3).to(fake.device)       # a FakeCudaTensor: x.device == cuda:0, x.is_cuda
        x + 1.0, x + torch.tensor(2.0)           # fine: Python and 0-dim CPU scalars are allowed
        x + torch.ones(3)                        # RuntimeError: Expected all tensors to be on the
                                                 # same device ... cuda:0 and cpu (fake cuda)
        x.numpy()                                # TypeError, as for a CUDA tensor
        model.to(fake.device)(x)                 # parameters and buffers become FakeCudaTensors
    fake.rng_draws                               # random ops drawn *on* the device (global RNG)

Design
------
``FakeCudaTensor`` is a real ``torch.Tensor`` subclass sharing the CPU storage of the data, so
every kernel, autograd and the optimizers run unchanged on CPU and give the CPU numbers
bit for bit. Its ``__torch_function__`` (which sees every torch call made from Python on it)
reports ``device == cuda:0`` / ``is_cuda``, refuses ``.numpy()`` and, before running the call,
checks the devices of all tensor arguments with torch's own rules for CUDA:

* a CPU tensor with ``dim > 0`` next to a fake one raises (TensorIterator's "Expected all
  tensors to be on the same device"); a 0-dim CPU tensor is a scalar and is allowed, except
  for operators that check devices themselves (``quantile``'s ``q``, ``cat``/``stack``, the
  index/gather family) and as the *output* of an in-place op;
* indexing: CPU index tensors (and boolean masks) may index a CUDA tensor, not the reverse;
  an advanced-index assignment needs the values on the device unless they are 0-dim;
* transfers (``to``, ``cpu``, ``cuda``, ``copy_``) cross devices freely;
* a CPU ``torch.Generator`` cannot draw onto the device ("Expected a 'cuda' device type for
  generator but found 'cpu'"); draws on the device without a generator use the device's global
  RNG on real CUDA (other numbers than on CPU), so they are recorded in ``FakeCuda.rng_draws``
  for the test to check against the component's documented list.

TorchScript functions (e.g. geoopt's maps) do not call ``__torch_function__``; inside the
block their calls are checked and their outputs kept on the fake device by a wrapper.

``FakeCuda`` (a ``TorchFunctionMode``) turns every ``device="cuda"`` creation and transfer
into a FakeCudaTensor and, inside the block, handles every call with a fake argument itself
(some constructors, e.g. ``sparse_coo_tensor``, do not dispatch to subclasses). Sparse tensors
cannot be re-classed, so the ones on the fake device are tracked by a mark. ``param.data =
fake`` (what ``Module.to()`` does) switches the parameter object itself to the fake class, so
it keeps its identity (tied weights stay tied, optimizers keep their references); deepcopy
keeps the device, pickling/``torch.save`` writes plain CPU tensors. The block also lets
:func:`icml26.core.device.resolve_device` accept ``"cuda"`` and answers CUDA capability
queries as an sm_80 device.

Why not report the device another way: a wrapper subclass (``_make_wrapper_subclass``) with
device ``cuda`` aborts in autograd on a CPU-only build (no CUDA device guard), ``meta`` breaks
``torch.autocast`` (Hugging Face's rotary embeddings), and ``cpu:1`` segfaults in autograd. A
plain subclass whose ``device`` getter is answered in Python has none of these problems.

Limits (real CUDA covers them where ``torch.cuda.is_available()``): only calls made from
Python are checked (what a C++ kernel does internally is not), ``torch.Generator(device=
"cuda")`` cannot be created on a CPU-only build, and numbers are CPU numbers (a
``FakeCuda`` run equals the CPU run exactly; a CUDA run agrees to a tolerance).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import weakref

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map

__all__ = ["FAKE_DEVICE", "FakeCuda", "FakeCudaTensor", "is_fake", "FakeDeviceError"]

FAKE_DEVICE = torch.device("cuda", 0)


class FakeDeviceError(RuntimeError):
    """What real CUDA would raise (a RuntimeError, as torch's own)."""


def is_fake(t) -> bool:
    """Whether ``t`` lives on the fake device (a FakeCudaTensor, or a marked sparse tensor)."""
    if isinstance(t, FakeCudaTensor):
        return True
    ref = _SPARSE.get(id(t))
    return ref is not None and ref() is t


# Sparse tensors cannot be re-classed (no storage): the ones on the fake device are marked here
# (by id, with a weak reference that drops the mark when the tensor dies) and handled by the mode.
_SPARSE: dict = {}


def _mark_sparse(t: torch.Tensor) -> torch.Tensor:
    key = id(t)
    _SPARSE[key] = weakref.ref(t, lambda _ref, key=key: _SPARSE.pop(key, None))
    return t




def _name(func) -> str:
    name = getattr(func, "__name__", None) or str(func)
    return name


def _base_name(name: str) -> str:
    """``__iadd__`` -> ``add``, ``add_`` -> ``add``, ``__radd__`` -> ``add``."""
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
        if name[:1] in "ir" and name[1:] in _DUNDER_OPS:
            name = name[1:]
        return name
    return name[:-1] if name.endswith("_") else name


_DUNDER_OPS = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
               "xor", "lshift", "rshift", "div"}

# Operators whose CUDA kernels check the device of every tensor argument, 0-dim ones included.
_STRICT = {"quantile", "nanquantile", "cat", "concat", "concatenate", "stack", "hstack", "vstack",
           "dstack", "index_select", "gather", "scatter", "scatter_add", "scatter_reduce",
           "take_along_dim", "take", "searchsorted", "bucketize", "embedding", "index_add",
           "index_copy", "index_fill", "put", "masked_scatter", "masked_select", "cdist",
           "histc", "bincount", "where"}
# ``where``'s condition must be on the device; its values may be CPU scalars (checked below).
_TRANSFER = {"to", "cpu", "cuda", "copy", "type_as"}
_INDEX = {"getitem", "setitem", "index_put", "_index_put_impl", "index"}
_RANDOM = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
           "normal", "uniform", "bernoulli", "multinomial", "poisson", "random", "exponential",
           "cauchy", "log_normal", "geometric", "dropout", "dropout1d", "dropout2d", "dropout3d",
           "alpha_dropout", "feature_alpha_dropout", "rrelu", "trunc_normal", "xavier_uniform",
           "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse",
           "gumbel_softmax"}
# Calls that take a ``device=`` without creating a tensor on it.
_NOT_FACTORIES = {"_parse_to"}
_NO_DRAW_WHEN_EVAL = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                      "feature_alpha_dropout", "rrelu"}


def _mixing_error(name: str, arg: str) -> FakeDeviceError:
    return FakeDeviceError(
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{FAKE_DEVICE} and cpu! (when checking argument {arg} in method {name}) [fake cuda]")


def _tensors(obj) -> list:
    return [t for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor)]


def _device_of(t) -> torch.device:
    """A tensor's device as a user sees it (marked sparse tensors report CPU to torch itself)."""
    return FAKE_DEVICE if is_fake(t) else t.device


def _transfer(base: str, args, kwargs):
    """``to`` / ``cpu`` / ``cuda`` / ``type_as`` with the fake device as source or target.

    Crossing between CPU and the fake device copies (as a real transfer does); staying put
    returns the tensor itself (as ``to`` does)."""
    src = args[0]
    dtype, memory_format, copy = None, None, False
    if base == "cpu":
        target = torch.device("cpu")
    elif base == "cuda":
        dev = kwargs.get("device", args[1] if len(args) > 1 else None)
        target = torch.device("cuda", dev) if isinstance(dev, int) else torch.device(dev or "cuda")
    elif base == "type_as":
        target, dtype = _device_of(args[1]), args[1].dtype
    else:
        kw = {k: v for k, v in kwargs.items() if k != "copy"}
        copy = bool(kwargs.get("copy", False))
        if len(args) > 1 and isinstance(args[1], torch.Tensor):
            target, dtype = _device_of(args[1]), args[1].dtype   # .to(other): other's device too
        else:
            target, dtype, _, memory_format = torch._C._nn._parse_to(*args[1:], **kw)
        if target is None:
            target = _device_of(src)
    to_fake = _is_fake_device(target)
    if to_fake:
        _check_index(target)
    plain = _unwrap_to_plain(src)
    with torch._C.DisableTorchFunctionSubclass():
        extra = {} if memory_format is None else {"memory_format": memory_format}
        out = plain.to(dtype=dtype or plain.dtype, copy=copy, **extra)
        if out is plain and to_fake != is_fake(src):
            out = out.clone()
    if out is plain:
        return src
    if to_fake:
        return _to_fake(out)
    _SPARSE.pop(id(out), None)
    return out


def _is_fake_device(dev) -> bool:
    return dev is not None and torch.device(dev).type == "cuda"


def _to_fake(t):
    if not isinstance(t, torch.Tensor) or is_fake(t):
        return t
    with torch._C.DisableTorchFunctionSubclass():
        strided = t.layout == torch.strided
    return t.as_subclass(FakeCudaTensor) if strided else _mark_sparse(t)


def _wrap(obj):
    return tree_map(_to_fake, obj)


def _unwrap_to_plain(t):
    with torch._C.DisableTorchFunctionSubclass():
        return t.as_subclass(torch.Tensor) if isinstance(t, FakeCudaTensor) else t


def _record_draw(name: str, args, kwargs) -> None:
    for fake in FakeCuda._active:
        fake.rng_draws.append(name)


def _check_generator(name: str, kwargs, on_device: bool) -> bool:
    """Raise when a CPU generator is asked to draw onto the device; True when a generator
    (on the right device) draws."""
    gen = kwargs.get("generator")
    if gen is None:
        return False
    if on_device and gen.device.type == "cpu":
        raise FakeDeviceError(f"Expected a 'cuda' device type for generator but found 'cpu' "
                              f"(in {name}) [fake cuda]")
    return True


def _check(func, name: str, args, kwargs) -> None:
    """Raise where real CUDA would for this call (see the module docstring)."""
    __tracebackhide__ = True
    if name in _NO_CHECK:
        return
    base = _base_name(name)
    if base in _TRANSFER:
        return
    inplace = (name.endswith("_") and not name.startswith("__")) or \
        (name.startswith("__i") and name[3:-2] in _DUNDER_OPS) or name == "__setitem__"
    if base in _INDEX or name in ("__getitem__", "__setitem__"):
        self = args[0]
        key = args[1] if len(args) > 1 else kwargs.get("indices")
        key_tensors = _tensors(key)
        if not is_fake(self) and any(is_fake(t) for t in key_tensors):
            raise FakeDeviceError("indices should be either on cpu or on the same device as the "
                                  "indexed tensor (cpu) [fake cuda]")
        if name == "__setitem__" or base in ("index_put", "_index_put_impl"):
            values = args[2] if len(args) > 2 else kwargs.get("values")
            if isinstance(values, torch.Tensor) and not is_fake(values) and values.dim() > 0 \
                    and is_fake(self) and (key_tensors or base != "setitem"):
                raise FakeDeviceError(f"expected device {FAKE_DEVICE} but got device cpu for "
                                      f"value tensor [fake cuda]")
            if is_fake(values) and not is_fake(self) and (key_tensors or base != "setitem"):
                raise _mixing_error(name, "values")      # a slice assignment is a copy: allowed
        return
    flat = _tensors((args, kwargs))
    if not any(is_fake(t) for t in flat):
        return
    if inplace and args and isinstance(args[0], torch.Tensor) and not is_fake(args[0]):
        raise FakeDeviceError(f"Expected out tensor to have device {FAKE_DEVICE}, but got cpu "
                              f"instead (in {name}) [fake cuda]")
    out = kwargs.get("out")
    if isinstance(out, torch.Tensor) and not is_fake(out):
        raise _mixing_error(name, "out")
    strict = base in _STRICT
    for i, t in enumerate(flat):
        if is_fake(t):
            continue
        if t.dim() > 0 or strict:
            if base == "where" and t.dim() == 0 and not (args and t is args[0]):
                continue      # where(cond, x, y): CPU scalars allowed as x / y
            raise _mixing_error(name, f"#{i}")


_SET_DATA = torch.Tensor.data.__set__
_GET_DEVICE = torch.Tensor.device.__get__
_GET_IS_CUDA = torch.Tensor.is_cuda.__get__
_GET_IS_CPU = torch.Tensor.is_cpu.__get__
_GET_GRAD = torch.Tensor.grad.__get__
_SET_GRAD = torch.Tensor.grad.__set__
# Calls that compare tensors' metadata only (no kernel runs, no device check in torch).
_NO_CHECK = {"_has_compatible_shallow_copy_type", "is_same_size", "is_set_to", "__hash__",
             "_is_view", "data_ptr", "untyped_storage", "__len__",
             "__bool__", "__float__", "__int__", "__index__", "item", "tolist", "size", "dim",
             "numel", "element_size", "stride", "storage_offset", "is_contiguous", "requires_grad_",
             "register_hook", "retain_grad", "backward"}


def _set_data(args) -> None:
    """``t.data = value`` (what ``Module.to()`` does to a parameter): ``t`` keeps its identity
    (so tied weights stay tied and optimizers keep their references) and takes the value's
    device, by switching its class between the plain and the fake variant."""
    self, value = args
    with torch._C.DisableTorchFunctionSubclass():
        _SET_DATA(self, value)
    if is_fake(value) and not is_fake(self):
        self.__class__ = _fake_class(type(self))
    elif not is_fake(value) and is_fake(self):
        self.__class__ = _PLAIN_OF.get(type(self), torch.Tensor)


_FAKE_OF: dict = {}
_PLAIN_OF: dict = {}


def _fake_class(cls):
    if cls is torch.Tensor:
        return FakeCudaTensor
    if cls not in _FAKE_OF:
        fake = type(f"FakeCuda{cls.__name__}", (FakeCudaTensor, cls), {})
        _FAKE_OF[cls], _PLAIN_OF[fake] = fake, cls
    return _FAKE_OF[cls]


class FakeCudaTensor(torch.Tensor):
    """CPU data that reports ``cuda:0`` and raises where CUDA would (see the module docs)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        __tracebackhide__ = True
        return _handle(func, args, kwargs or {})

    def __reduce_ex__(self, protocol):
        """Saved (``torch.save``, pickle) as a plain CPU tensor: loads with ``weights_only``."""
        with torch._C.DisableTorchFunctionSubclass():
            plain = torch.Tensor._make_subclass(torch.Tensor, self.detach(), self.requires_grad)
            return plain.__reduce_ex__(protocol)

    def __deepcopy__(self, memo):
        """A copy on the fake device, of the same class (parameters stay parameters)."""
        if id(self) in memo:
            return memo[id(self)]
        with torch._C.DisableTorchFunctionSubclass():
            data = self.detach().clone()
            grad = self.grad
        new = torch.Tensor._make_subclass(type(self), data, self.requires_grad)
        memo[id(self)] = new
        if grad is not None:
            with torch._C.DisableTorchFunctionSubclass():
                new.grad = _to_fake(copy.deepcopy(grad, memo))
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new


def _handle(func, args, kwargs):
    """One torch call with a fake tensor among its arguments (see the module docs)."""
    __tracebackhide__ = True
    name = _name(func)
    if func == _GET_DEVICE:
        return FAKE_DEVICE
    if func == _SET_DATA:
        return _set_data(args)
    if func == _GET_IS_CUDA:
        return True
    if func == _GET_IS_CPU:
        return False
    if name == "get_device":
        return FAKE_DEVICE.index
    if name in ("numpy", "__array__"):
        raise TypeError(f"can't convert {FAKE_DEVICE} device type tensor to numpy. Use "
                        f"Tensor.cpu() to copy the tensor to host memory first. [fake cuda]")
    if name in ("__repr__", "__str__", "__format__"):
        with torch._C.DisableTorchFunctionSubclass():
            return f"{func(*args, **kwargs)} [fake {FAKE_DEVICE}]"
    if func == _GET_GRAD:
        self = args[0]
        with torch._C.DisableTorchFunctionSubclass():
            grad = self.grad
            if grad is not None and not is_fake(grad):
                grad = grad.as_subclass(FakeCudaTensor)
                self.grad = grad
        return grad
    if func == _SET_GRAD:
        self, value = args
        if value is not None and is_fake(self) != is_fake(value):
            raise FakeDeviceError("assigned grad has data located on a different device "
                                  "[fake cuda]")
    base = _base_name(name)
    if base in _TRANSFER and base != "copy":
        return _transfer(base, args, kwargs)
    _check(func, name, args, kwargs)
    on_device = _output_on_device(base, args, kwargs)
    if _is_fake_device(kwargs.get("device")) and name not in _NOT_FACTORIES:
        _check_index(kwargs["device"])
        kwargs = dict(kwargs, device="cpu")              # computed on the CPU, wrapped below
    if base in _RANDOM and on_device:
        drew = _check_generator(name, kwargs, on_device)
        if not drew and _draws(base, args, kwargs):
            _record_draw(base, args, kwargs)
    with torch._C.DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
    if func in _NOWRAP or not on_device:
        return ret
    if base == "copy" or (name.endswith("_") and not name.startswith("__")):
        if args and ret is args[0]:
            return ret
    return _wrap(ret)


def _output_on_device(base: str, args, kwargs) -> bool:
    """Whether a call's tensor outputs live on the (fake) device."""
    if "device" in kwargs and kwargs["device"] is not None:
        return _is_fake_device(kwargs["device"])
    if base == "copy":
        return is_fake(args[0])
    return any(is_fake(t) for t in _tensors((args, kwargs)))


def _draws(base: str, args, kwargs) -> bool:
    if base in _NO_DRAW_WHEN_EVAL:
        training = kwargs.get("training", args[2] if len(args) > 2 else True)
        p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
        return bool(training) and float(p) > 0
    return True


@functools.lru_cache(1)
def _nowrap():
    from torch.overrides import get_default_nowrap_functions
    return get_default_nowrap_functions()


_NOWRAP = _nowrap()


class FakeCuda(TorchFunctionMode):
    """The block in which ``device="cuda"`` means the fake device (see the module docs).

    Attributes
    ----------
    device : torch.device
        ``cuda:0``: pass it wherever a component takes a device.
    rng_draws : list of str
        The random ops that drew on the device from its global generator, in order.
    """

    _active: list = []
    device = FAKE_DEVICE

    def __init__(self):
        super().__init__()
        self.rng_draws: list = []
        self._stack = contextlib.ExitStack()

    def __enter__(self):
        self.rng_draws = []
        try:
            from icml26.core import device as core_device
            self._stack.enter_context(core_device._fake_cuda_available())
        except ImportError:  # pragma: no cover - the helper also works without icml26
            pass
        # libraries that see a CUDA tensor may ask the runtime about the device (transformers'
        # hub kernels ask its compute capability): answer as a plain sm_80 GPU would
        for name, value in (("get_device_capability", lambda device=None: (8, 0)),
                            ("get_device_name", lambda device=None: "fake cuda (CPU)")):
            self._stack.callback(setattr, torch.cuda, name, getattr(torch.cuda, name))
            setattr(torch.cuda, name, value)
        script_call = torch._C.ScriptFunction.__call__
        torch._C.ScriptFunction.__call__ = _script_call(script_call)
        self._stack.callback(setattr, torch._C.ScriptFunction, "__call__", script_call)
        FakeCuda._active.append(self)
        self._stack.callback(FakeCuda._active.remove, self)
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            self._stack.close()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        __tracebackhide__ = True
        kwargs = kwargs or {}
        name = _name(func)
        base = _base_name(name)
        if func == _SET_DATA:
            return _set_data(args)
        if base in _TRANSFER and base != "copy" and args and isinstance(args[0], torch.Tensor):
            return _transfer(base, args, kwargs)
        if any(is_fake(t) for t in _tensors((args, kwargs))):
            # directly, not through the subclass: some constructors (sparse_coo_tensor) parse
            # their tensors without dispatching to a subclass, and marked sparse tensors are plain
            return _handle(func, args, kwargs)
        device = kwargs.get("device")
        if device is not None and _is_fake_device(device) and name not in _NOT_FACTORIES:
            _check_index(device)
            kwargs = dict(kwargs, device="cpu")
            if base in _RANDOM:
                if not _check_generator(name, kwargs, True):
                    _record_draw(base, args, kwargs)
            with torch._C.DisableTorchFunctionSubclass():
                ret = func(*args, **kwargs)
            return _wrap(ret)
        return func(*args, **kwargs)


def _script_call(call):
    """TorchScript functions (geoopt's maps) bypass ``__torch_function__``: check their
    arguments here and keep their outputs on the fake device."""
    @functools.wraps(call)
    def wrapper(self, *args, **kwargs):
        __tracebackhide__ = True
        if not any(is_fake(t) for t in _tensors((args, kwargs))):
            return call(self, *args, **kwargs)
        _check(self, f"script:{self.name}", args, kwargs)
        with torch._C.DisableTorchFunctionSubclass():
            return _wrap(call(self, *args, **kwargs))
    return wrapper


def _check_index(device) -> None:
    index = torch.device(device).index
    if index not in (None, 0):
        raise FakeDeviceError(f"the fake device is cuda:0 only, got {device}")
