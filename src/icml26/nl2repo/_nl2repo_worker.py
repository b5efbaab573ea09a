"""The package's worker: the only process that imports the code under test.

Runs inside its own sandbox with the test venv's interpreter (``python -I -c "…;
_nl2repo_worker.main()"``) and serves the trusted test process over two inherited pipes
(``$NL2REPO_RPC_IN`` / ``$NL2REPO_RPC_OUT``): imports, attribute access, calls, operators,
iteration, console scripts. Objects stay here; the other side gets plain data or a handle.
Nothing here is trusted: the package can rewrite any of it, and gains nothing by doing so,
because the expected values, the test code and the verdicts live in the other process.
"""

import builtins
import importlib
import io
import operator
import os
import sys
import traceback
import types

try:
    from . import _nl2repo_wire as wire
except ImportError:
    import _nl2repo_wire as wire

_PLAIN_BASES = (str, bytes, bytearray, int, float, complex, tuple, list, dict, set, frozenset)
_OPS = {name: getattr(operator, name) for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor",
    "lshift", "rshift", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "imatmul",
    "iand", "ior", "ixor", "ilshift", "irshift", "neg", "pos", "abs", "invert", "eq", "ne", "lt",
    "le", "gt", "ge", "contains", "getitem", "setitem", "delitem", "index")}
_OPS.update({"len": len, "bool": bool, "hash": hash, "repr": repr, "str": str, "format": format,
             "iter": iter, "next": next, "int": int, "float": float, "complex": complex,
             "round": round, "reversed": reversed, "dir": lambda o: sorted(str(n) for n in dir(o))})
_BUILTINS = {name: obj for name, obj in vars(builtins).items()
             if isinstance(obj, (type, types.BuiltinFunctionType)) and not name.startswith("_")}


def _copy(obj, deep):
    import copy

    return copy.deepcopy(obj) if deep else copy.copy(obj)


class Worker:
    def __init__(self, rfd: int, wfd: int):
        self.reader = wire.Reader(rfd)
        self.wfd = wfd
        self.objects = {}                 # handle -> object (kept alive, so ids stay unique)
        self.ids = {}                     # id(object) -> handle
        self.sent = set()                 # class handles already described
        self.pending = {}                 # class descriptors to send with the next message
        self.base_env = dict(os.environ)

    # -- handles and class descriptors ------------------------------------------------------
    def handle(self, obj) -> int:
        h = self.ids.get(id(obj))
        if h is None or self.objects.get(h) is not obj:
            h = len(self.objects) + 1
            self.objects[h] = obj
            self.ids[id(obj)] = h
        return h

    def class_ref(self, cls) -> int:
        h = self.handle(cls)
        if h not in self.sent:
            self.sent.add(h)
            bases = []
            for base in cls.__bases__:
                if base is object:
                    continue
                if _BUILTINS.get(base.__name__) is base:
                    bases.append(["bt", base.__name__])
                else:
                    bases.append(["ty", self.class_ref(base)])
            self.pending[str(h)] = {
                "name": str(cls.__name__), "qualname": str(getattr(cls, "__qualname__", cls.__name__)),
                "module": str(getattr(cls, "__module__", "")), "bases": bases,
                "callable": any("__call__" in vars(k) for k in cls.__mro__ if k is not object),
                "exception": issubclass(cls, BaseException)}
        return h

    def other(self, value, depth):
        if isinstance(value, BaseException):
            args = [wire.encode(a, self.other, depth + 1) for a in value.args]
            return ["e", self.handle(value), self.class_ref(type(value)), args, _text(value)]
        if isinstance(value, type):
            if _BUILTINS.get(value.__name__) is value:
                return ["bt", value.__name__]
            return ["ty", self.class_ref(value)]
        if isinstance(value, types.BuiltinFunctionType) and _BUILTINS.get(value.__name__) is value:
            return ["bt", value.__name__]
        if isinstance(value, types.ModuleType):
            return ["m", self.handle(value), str(value.__name__)]
        for base in _PLAIN_BASES:
            if isinstance(value, base) and type(value) is not base:
                try:
                    plain = base(value) if base not in (str, int, float) else (
                        str.__str__(value) if base is str else int.__int__(value) if base is int
                        else float.__float__(value))
                    inner = wire.encode(plain, self.other, depth + 1)
                except Exception:
                    break
                return ["hy", self.handle(value), self.class_ref(type(value)), base.__name__, inner]
        return ["h", self.handle(value), self.class_ref(type(value))]

    def encode(self, value):
        return wire.encode(value, self.other)

    def decode(self, data):
        return wire.decode(data, self._decode_other)

    def _decode_other(self, data, depth):
        tag = data[0]
        if tag == "R" and len(data) == 2 and data[1] in self.objects:
            return self.objects[data[1]]
        if tag == "bt" and len(data) == 2 and data[1] in _BUILTINS:
            return _BUILTINS[data[1]]
        if tag == "cb" and len(data) == 2 and type(data[1]) is int:
            return self._callback(data[1])
        if tag == "xe" and len(data) == 4:
            cls = _BUILTINS.get(data[1])
            if not (isinstance(cls, type) and issubclass(cls, BaseException)):
                cls = Exception
            args = [self.decode(a) for a in data[2]] if isinstance(data[2], list) else []
            try:
                return cls(*args)
            except Exception:
                return cls(str(data[3]))
        raise wire.WireError(f"unknown tag {tag!r}")

    # -- calls back into the trusted process (a test's callable passed to the package) --------
    def _callback(self, cid: int):
        def callback(*args, **kwargs):
            self.send({"cb": cid, "args": [self.encode(a) for a in args],
                       "kwargs": {str(k): self.encode(v) for k, v in kwargs.items()}})
            return self.wait_reply()
        return callback

    def wait_reply(self):
        while True:
            message = self.reader.read()
            if message is None:
                os._exit(0)
            if "op" in message:
                self.send(self.serve(message))
            elif "ok" in message:
                return self.decode(message["ok"])
            elif "raise" in message:
                raise self.decode(message["raise"])
            else:
                raise wire.WireError("unexpected message")

    # -- serving -----------------------------------------------------------------------------
    def send(self, message: dict) -> None:
        if self.pending:
            message["classes"] = self.pending
            self.pending = {}
        wire.send(self.wfd, message)

    def _context(self, message: dict) -> None:
        cwd = message.get("cwd")
        if isinstance(cwd, str):
            try:
                os.chdir(cwd)
            except OSError:
                pass
        env = message.get("env")
        if isinstance(env, dict):
            for key, value in (env.get("set") or {}).items():
                os.environ[str(key)] = str(value)
            for key in env.get("unset") or []:
                os.environ.pop(str(key), None)

    def serve(self, message: dict) -> dict:
        out, err = io.TextIOWrapper(io.BytesIO(), write_through=True), io.TextIOWrapper(
            io.BytesIO(), write_through=True)
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        try:
            self._context(message)
            reply = {"ok": self.encode(self.execute(message))}
        except BaseException as exc:          # noqa: BLE001 - every failure of the package crosses
            reply = {"raise": self.encode(exc), "tb": "".join(traceback.format_exception(exc))[-8000:]}
        finally:
            sys.stdout, sys.stderr = saved
        reply["out"] = out.buffer.getvalue().decode("utf-8", "replace")[-(1 << 20):]
        reply["err"] = err.buffer.getvalue().decode("utf-8", "replace")[-(1 << 20):]
        return reply

    def execute(self, message: dict):
        op = message.get("op")
        obj = self.decode(message["obj"]) if "obj" in message else None
        if op == "import":
            module = importlib.import_module(str(message["name"]))
            names = getattr(module, "__all__", None)
            if not (isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names)):
                names = [n for n in dir(module) if not n.startswith("_")]
            return {"module": module, "names": list(names), "package": hasattr(module, "__path__")}
        if op == "getattr":
            return getattr(obj, str(message["name"]))
        if op == "setattr":
            return setattr(obj, str(message["name"]), self.decode(message["value"]))
        if op == "delattr":
            return delattr(obj, str(message["name"]))
        if op == "call":
            args = [self.decode(a) for a in message.get("args", [])]
            kwargs = {str(k): self.decode(v) for k, v in (message.get("kwargs") or {}).items()}
            return obj(*args, **kwargs)
        if op == "op":
            fn = _OPS[str(message["name"])]
            return fn(*[self.decode(a) for a in message.get("args", [])])
        if op == "enter":
            return type(obj).__enter__(obj)
        if op == "exit":
            exc = self.decode(message["exc"])
            return type(obj).__exit__(obj, None if exc is None else type(exc), exc, None)
        if op in ("copy", "deepcopy"):
            return _copy(obj, op == "deepcopy")
        if op == "script":
            return self.script(message)
        raise ValueError(f"unknown operation {op!r}")

    def script(self, message: dict):
        """A console script's entry point, run as ``name argv...``: ``[exit code]``."""
        module, _, attr = str(message["target"]).partition(":")
        fn = importlib.import_module(module)
        for part in attr.split("."):
            fn = getattr(fn, part)
        saved = sys.argv, sys.stdin
        sys.argv = [str(a) for a in message.get("argv", [])]
        sys.stdin = io.TextIOWrapper(io.BytesIO(self.decode(message.get("stdin", ["y", ""])) or b""))
        try:
            code = fn()
        except SystemExit as exc:
            code = exc.code
        except BaseException:                 # noqa: BLE001 - a crash is exit status 1
            traceback.print_exc()
            code = 1
        finally:
            sys.argv, sys.stdin = saved
        if code is None:
            code = 0
        if not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        return [code]

    def loop(self) -> None:
        while True:
            message = self.reader.read()
            if message is None or message.get("op") == "shutdown":
                return
            self.send(self.serve(message))


def _text(exc) -> str:
    try:
        return str(exc)[:20000]
    except Exception:
        return f"<{type(exc).__name__}>"


def main() -> None:
    rfd, wfd = int(os.environ.pop("NL2REPO_RPC_IN")), int(os.environ.pop("NL2REPO_RPC_OUT"))
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]    # the package's names only
    Worker(rfd, wfd).loop()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
