"""The trusted side of the test phase: the package lives in a worker process; only plain
data comes back, and no object of the package's is compared in the trusted process.

The worker is started here with the project's own interpreter (no sandbox needed to check
the object model); the harness runs both sides in sandboxes.
"""

import os
import subprocess
import sys
import textwrap
from collections import namedtuple

import pytest

import icml26.nl2repo as nl2repo
from icml26.nl2repo import _nl2repo_trusted as T
from icml26.nl2repo import _nl2repo_wire as wire

HERE = os.path.dirname(nl2repo.__file__)

PACKAGE = textwrap.dedent('''
    import enum
    import os
    from collections import namedtuple

    Point = namedtuple("Point", "x y")


    class Color(str, enum.Enum):
        RED = "red"


    class Error(ValueError):
        def __init__(self, message, code=7):
            super().__init__(message)
            self.code = code


    class Thing:
        def __init__(self, value):
            self.value = value

        def __eq__(self, other):
            return isinstance(other, Thing) and other.value == self.value

        def __hash__(self):
            return hash(self.value)

        def __add__(self, other):
            return Thing(self.value + (other.value if isinstance(other, Thing) else other))

        __radd__ = __add__

        def __repr__(self):
            return f"Thing({self.value!r})"


    class Magic:
        """Equal to everything, as a forger's return value would be."""

        def __eq__(self, other):
            return True

        __hash__ = object.__hash__


    class Swallow:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return True                     # suppresses whatever was raised


    def point():
        return Point(1, 2)


    def magic():
        return Magic()


    def apply(fn, value):
        return fn(value)


    def apply_quietly(fn, value):
        try:
            return fn(value)
        except BaseException:
            return "swallowed"


    def fail(message):
        raise Error(message, code=3)


    def missing(key):
        return {}[key]


    def shout(text):
        print(text.upper())
        return len(text)


    def interrupt():
        raise KeyboardInterrupt


    def die():
        os._exit(3)
''')


@pytest.fixture
def remote(tmp_path, monkeypatch):
    """The ``fakepkg`` package, imported only in a worker process started by this interpreter."""
    (tmp_path / "fakepkg").mkdir()
    (tmp_path / "fakepkg" / "__init__.py").write_text(PACKAGE)
    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NL2REPO_RPC_IN": str(req_r),
           "NL2REPO_RPC_OUT": str(resp_w)}
    worker = subprocess.Popen([sys.executable, "-I", "-c", f"import sys; sys.path[:0] = [{HERE!r}, {str(tmp_path)!r}]; "
                               "import _nl2repo_worker; _nl2repo_worker.main()"], env=env,
                              pass_fds=(req_r, resp_w))
    os.close(req_r)
    os.close(resp_w)
    monkeypatch.setattr(T, "_CHANNEL", T.Channel(resp_r, req_w))
    monkeypatch.setattr(T, "_ROUTED", frozenset({"fakepkg"}))
    for name in [m for m in sys.modules if m == "fakepkg" or m.startswith("fakepkg.")]:
        monkeypatch.delitem(sys.modules, name)     # another test's package of that name
    finder = T.RemoteFinder()
    sys.meta_path.insert(0, finder)
    try:
        import fakepkg

        assert isinstance(fakepkg, T.RemoteModule)
        yield fakepkg, worker
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop("fakepkg", None)
        worker.kill()
        worker.wait()
        os.close(resp_r)
        os.close(req_w)


def test_the_package_is_never_imported_here(remote):
    pkg, _ = remote
    assert "fakepkg" in sys.modules and isinstance(sys.modules["fakepkg"], T.RemoteModule)
    assert pkg.__file__.endswith("fakepkg/__init__.py")         # the worker's file, not loaded here
    assert not any(getattr(m, "__file__", None) == pkg.__file__ for m in sys.modules.values()
                   if not isinstance(m, T.RemoteModule))


def test_plain_values_cross_by_value(remote):
    pkg, _ = remote
    assert pkg.shout("abc") == 3 and type(pkg.shout("abc")) is int
    assert pkg.apply(len, [1, 2, 3]) == 3                       # a built-in passed by name
    assert pkg.missing.__name__ == "missing"


def test_a_remote_object_never_equals_a_value_of_ours(remote):
    pkg, _ = remote
    magic = pkg.magic()
    assert isinstance(magic, T.RemoteObject) and type(magic).__name__ == "Magic"
    assert (magic == 3) is False and (3 == magic) is False and magic != "x"
    assert magic != pytest.approx(1.0)
    with pytest.raises(TypeError):
        magic < 3                                                      # noqa: B015
    assert (magic == pkg.magic()) is True        # between two objects of its own, its answer


def test_objects_operators_and_identity(remote):
    pkg, _ = remote
    a, b = pkg.Thing(2), pkg.Thing(2)
    assert isinstance(a, pkg.Thing) and type(a) is pkg.Thing
    assert a == b and a is not b and hash(a) == hash(b)
    c = a + 3
    assert c.value == 5 and (3 + a).value == 5 and repr(c) == "Thing(5)"
    a.value = 9
    assert a.value == 9 and pkg.Thing(9) == a
    assert {a: 1}[pkg.Thing(9)] == 1


def test_hybrids_are_values_here(remote):
    pkg, _ = remote
    p = pkg.point()
    assert p == (1, 2) and p.x == 1 and isinstance(p, tuple) and type(p).__name__ == "Point"
    assert pkg.Color.RED == "red" and isinstance(pkg.Color.RED, str)


def test_exceptions_cross_as_types_bases_and_messages(remote):
    pkg, _ = remote
    with pytest.raises(pkg.Error, match="bad") as info:
        pkg.fail("bad input")
    assert isinstance(info.value, ValueError) and info.value.code == 3
    assert str(info.value) == "bad input" and issubclass(pkg.Error, ValueError)
    with pytest.raises(KeyError):
        pkg.missing("k")
    with pytest.raises(Exception) as info:            # never a KeyboardInterrupt here
        pkg.interrupt()
    assert isinstance(info.value, T.RemoteInterrupt) and not isinstance(info.value, KeyboardInterrupt)


def test_callbacks_run_here_and_output_is_forwarded(remote, capsys):
    pkg, _ = remote
    assert pkg.apply(lambda v: v * 2, 21) == 42
    assert pkg.shout("hi") == 2 and capsys.readouterr().out == "HI\n"


def test_the_package_cannot_swallow_the_tests_own_failures(remote):
    pkg, _ = remote
    with pytest.raises(AssertionError):
        with pkg.Swallow():
            assert 1 == 2
    with pytest.raises(ZeroDivisionError) as info:
        pkg.apply(lambda v: 1 / v, 0)
    assert "raised in the package's worker process" in "".join(info.value.__notes__)

    def failing(v):
        assert v == 1

    with pytest.raises(AssertionError):               # the package catches it there: still fails here
        pkg.apply_quietly(failing, 2)
    assert pkg.apply_quietly(lambda v: 1 / v, 0) == "swallowed"      # an ordinary exception: its call
    with pkg.Swallow():
        raise ValueError("the package may swallow its own kind")


def test_unpassable_values_are_refused(remote):
    pkg, _ = remote

    class Ours:
        pass

    with pytest.raises(TypeError, match="cannot be passed"):
        pkg.apply(len, Ours())


def test_a_dead_worker_fails_the_test_and_every_later_one(remote):
    pkg, worker = remote
    with pytest.raises(T.WorkerGone):
        pkg.die()
    assert worker.wait(timeout=10) == 3
    with pytest.raises(T.WorkerGone):
        pkg.shout("x")


@pytest.mark.parametrize("reply", [b"not json\n", b'{"ok": ["h", 1, 999]}\n', b'{"ok": ["zz"]}\n',
                                   b'{"raise": ["i", 3]}\n', b'{"ok": ["l", ' * 2000 + b'\n',
                                   b'{"classes": {"1": {"bases": [["ty", 1]]}}, "ok": ["h", 1, 1]}\n'])
def test_garbage_from_the_worker_is_a_dead_worker(reply):
    """Whatever the worker writes, the trusted side rebuilds only plain data or refuses."""
    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    channel = T.Channel(resp_r, req_w)
    os.write(resp_w, reply)
    os.close(resp_w)
    try:
        with pytest.raises(T.WorkerGone):
            channel.request("getattr", obj=["R", 1], name="x")
    finally:
        for fd in (req_r, req_w, resp_r):
            os.close(fd)


def test_wire_round_trips_plain_data():
    import datetime
    import decimal
    import fractions
    import pathlib

    values = [None, True, 3, -2 ** 70, 1.5, float("inf"), "s", b"\x00b", bytearray(b"x"), 2j, [1, (2, {3})],
              {1: "a", (1, 2): frozenset({4})}, range(1, 9, 2), pathlib.PurePosixPath("/a/b"),
              decimal.Decimal("1.10"), fractions.Fraction(1, 3), datetime.date(2020, 1, 2),
              datetime.datetime(2020, 1, 2, 3, 4, tzinfo=datetime.timezone.utc), datetime.timedelta(hours=2)]

    def other(value, depth):
        raise AssertionError(f"not plain: {value!r}")

    for value in values:
        back = wire.decode(wire.encode(value, other), other)
        assert back == value and type(back) is type(value)
    nt = namedtuple("NT", "a")(1)
    with pytest.raises(AssertionError, match="not plain"):
        wire.encode(nt, other)               # a tuple subclass is not plain data
