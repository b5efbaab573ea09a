"""Canary twins: tests that must fail, indistinguishable from the suite's own tests.

For every hidden test that compares a computed value with a literal (``assert f(x) == 3``,
``assert (q.value, q.unit) == (3500.0, "m")``, ``pytest.approx(77.0)``, or a parametrized
``expected`` column), the grading copy of the suite gets :data:`TWINS_PER_TEST` **twins**:
copies of the test in which one expected literal is replaced by **another real expected value
of the same type, drawn from the whole suite** (``3500.0`` becomes ``1230.0``, the answer of
another test; ``"km"`` becomes ``"h"``), never a one-digit flip: a twin's value is as
plausible as the real one, it is quoted by the requirements as often, and the suite's own
statistics (round numbers, likely strings) cannot tell them apart. Then every test of the
copy, real or twin, is **renamed** with a name drawn from the words of the task's own test
names, and the tests of each module or class are **shuffled**, a twin never next to its test.
The harness alone knows which is which.

No implementation, however buggy, passes a test and such a twin: ``v == 3500.0`` and
``v == 1230.0`` cannot both hold for a plain value (a **strict** twin; both passing is
``tamper``). Two kinds of test have no literal to change and get **weak** twins, which an
honest package fails as a rule but not by necessity:

* a test that only checks that an exception is raised (``with pytest.raises(E):``) gets twins
  expecting another exception type the suite expects elsewhere, one that in the reference
  solution's class hierarchy shares no subclass with ``E`` (a package raising one
  "universal" exception derived from every expected type passes them);
* a comparison of two computed values whose expected side is a call with literal arguments
  (``Quantity(1, "km") == Quantity(1000, "m")``) gets twins with one such argument drawn from
  the pool (a package whose ``__eq__`` answers yes to everything passes them).

A weak twin that passes makes its real test not count (the harness never scores that pair);
it does not by itself prove tampering.

The draw uses fresh OS randomness per grading (``secrets``), not the experiment seed: it must
be unpredictable to the code under test, and honest outcomes do not depend on it.

References
----------
Our resolution of the forgery audits of the NL2Repo-Bench harness (not from the paper).
"""

from __future__ import annotations

import ast
import builtins
import copy
import random
import re
import string
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SuiteMap", "build_suite", "split_node_id", "mutation_sites", "exception_hierarchy",
           "TEST_FILE", "TWINS_PER_TEST"]

TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$")
_APPROX_SIGNIFICANT = 3          # fallback flips stay within the first 3 significant digits
_MAX_NAME_TRIES = 400
# Twins per twinned test. Several, so that a forger guessing which copy is real is caught
# with probability 1 - (1/(K+1)) per test even if it somehow narrowed the choice to a pair.
TWINS_PER_TEST = 3
_SHUFFLE_TRIES = 50              # random orders tried to keep every twin away from its test
_APPROX_REL = 1e-4               # a drawn approx value differs by more than this, relatively


@dataclass
class SuiteMap:
    """What the harness knows about a grading copy of the suite.

    ``functions`` maps ``(file, classes, new_name)`` to ``(original_name, role, partner)``
    where ``role`` is ``"real"`` or ``"twin"``; a twin's ``partner`` is the new name of its
    real test, a real test's the new name of its first twin (``None`` when untwinned).
    ``strength`` maps each twin's key to ``"strict"`` (no package can pass it with its real
    test) or ``"weak"`` (an honest package fails it as a rule, not by necessity).
    """

    functions: dict = field(default_factory=dict)
    strength: dict = field(default_factory=dict)
    n_twins: int = 0                                  # twin functions written
    n_twinned: int = 0                                # real test functions with twins
    n_tests: int = 0                                  # real test functions
    n_fallback: int = 0                               # twins whose pool had no other value
    untouched: list = field(default_factory=list)   # files copied as they were (unparsable)

    def lookup(self, node_id: str):
        """``(original node id, role, pair key)`` of a reported node, or ``None`` if unknown."""
        file, classes, name, params = split_node_id(node_id)
        if file in self.untouched:
            return node_id, "real", (file, classes, name)
        entry = self.functions.get((file, classes, name))
        if entry is None:
            return None
        original, role, partner = entry
        real_name = name if role == "real" else partner
        original_id = "::".join([file, *classes, original]) + params if role == "real" else None
        return original_id, role, (file, classes, real_name)


def split_node_id(node_id: str) -> tuple[str, tuple, str, str]:
    """``"f.py::C::t[p]"`` → ``("f.py", ("C",), "t", "[p]")`` (parameters may hold ``::``)."""
    base, bracket, params = node_id.partition("[")
    parts = base.split("::")
    return parts[0], tuple(parts[1:-1]), parts[-1] if len(parts) > 1 else "", bracket + params


# -- mutation sites ---------------------------------------------------------------------------

def _is_approx(node) -> bool:
    return (isinstance(node, ast.Call) and not node.keywords and len(node.args) == 1 and (
        (isinstance(node.func, ast.Attribute) and node.func.attr == "approx")
        or (isinstance(node.func, ast.Name) and node.func.id == "approx")))


_ARITH = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
          ast.Pow: lambda a, b: a ** b if abs(b) <= 64 else None}


def _number(node):
    """The value of a constant arithmetic expression (``3 * 10 ** 12``), else ``None``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(
            node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _number(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        left, right = _number(node.left), _number(node.right)
        if left is None or right is None:
            return None
        try:
            return _ARITH[type(node.op)](left, right)
        except (OverflowError, ZeroDivisionError, TypeError):
            return None
    return None


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and value == value and abs(value) != float("inf")


def _template(node, params: dict, uses: dict, approx: bool = False):
    """The sites of an *expected-value* expression, or ``None`` when it is not one.

    An expected value is built from literals (numbers, strings, booleans, ``None``), tuples,
    lists, sets, dicts, ``pytest.approx(…)``, constant arithmetic (``1024 ** 2``), a local
    name plus or minus a number (``before + 1``), and parametrize arguments used nowhere
    else in the test (their column of literals). Sites: ``("leaf", [(node, kind)])`` or
    ``("column", rows)`` where each row lists its leaves.
    """
    kind = "approx" if approx else "exact"
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            return [] if approx else [("leaf", [(node, "bool")])]
        if _finite(value):
            return [("leaf", [(node, kind)])]
        if isinstance(value, str) and not approx:
            mutable = value == "" or any(c in _CLASSES_ALL for c in value)
            return [("leaf", [(node, kind)])] if mutable else []
        return [] if value is None or isinstance(value, (bytes, complex)) else None
    if isinstance(node, (ast.UnaryOp, ast.BinOp)) and _finite(_number(node)):
        return [("leaf", [(node, "expr-" + kind)])]
    if (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))
            and isinstance(node.left, ast.Name) and node.left.id not in params
            and _finite(_number(node.right))):
        return [("leaf", [(node.right, "expr-exact" if not isinstance(node.right, ast.Constant)
                           else "exact")])] if not approx else None
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and not approx:
        parts = [_template(e, params, uses) for e in node.elts]
        return None if any(p is None for p in parts) else [s for p in parts for s in p]
    if isinstance(node, ast.Dict) and not approx:
        parts = [None if k is None else _template(k, params, uses) for k in node.keys]
        parts += [_template(v, params, uses) for v in node.values]
        return None if any(p is None for p in parts) else [s for p in parts for s in p]
    if _is_approx(node) and not approx:
        return _template(node.args[0], params, uses, approx=True)
    if isinstance(node, ast.Name) and node.id in params:
        if uses.get(node.id, 0) != 1:
            return None
        dec, index, width = params[node.id]
        rows = _column(dec, index, width, approx)
        return [("column", rows)] if rows else None
    return None


def _leaves_of(sites) -> list:
    return [leaf for kind, payload in sites if kind == "leaf" for leaf in payload]


def _parametrize(fn) -> dict:
    """``argname -> (decorator Call, column index, number of argnames)`` of ``@…parametrize``."""
    found = {}
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)
                and dec.func.attr == "parametrize" and len(dec.args) >= 2):
            continue
        names = dec.args[0]
        if isinstance(names, ast.Constant) and isinstance(names.value, str):
            argnames = [n.strip() for n in names.value.split(",") if n.strip()]
        elif isinstance(names, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in names.elts):
            argnames = [e.value for e in names.elts]
        else:
            continue
        for i, name in enumerate(argnames):
            found[name] = (dec, i, len(argnames))
    return found


def _column(dec, index: int, width: int, approx: bool):
    """Per row, the mutable leaves of column ``index`` (``None`` unless every row has some)."""
    rows = dec.args[1]
    if not isinstance(rows, (ast.List, ast.Tuple)) or not rows.elts:
        return None
    per_row = []
    for row in rows.elts:
        if width == 1:
            cell = row
        elif isinstance(row, (ast.Tuple, ast.List)) and len(row.elts) == width:
            cell = row.elts[index]
        else:
            return None
        sites = _template(cell, {}, {}, approx)
        leaves = _leaves_of(sites) if sites is not None else []
        if not leaves or len(leaves) != sum(len(p) for k, p in sites if k == "leaf"):
            return None
        per_row.append(leaves)
    return per_row


def _compares(test):
    if isinstance(test, ast.Compare):
        return [test]
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [v for v in test.values if isinstance(v, ast.Compare)]
    return []


def _raises_call(stmt):
    """The ``pytest.raises(E)`` call of ``with pytest.raises(E[, match=…]):``, else ``None``."""
    if not (isinstance(stmt, ast.With) and len(stmt.items) == 1):
        return None
    call = stmt.items[0].context_expr
    if not (isinstance(call, ast.Call) and len(call.args) == 1 and isinstance(call.args[0], ast.Name)
            and ((isinstance(call.func, ast.Attribute) and call.func.attr == "raises")
                 or (isinstance(call.func, ast.Name) and call.func.id == "raises"))):
        return None
    return call


def _call_leaves(node) -> list:
    """Literal numbers and strings among the arguments of a call (``Quantity(1000, "m")``)."""
    if not isinstance(node, ast.Call):
        return []
    leaves = []
    for arg in [*node.args, *(kw.value for kw in node.keywords)]:
        found = _template(arg, {}, {})
        if found:
            leaves += [leaf for kind, payload in found if kind == "leaf" for leaf in payload
                       if leaf[1] in ("exact", "expr-exact")]
    return leaves


def mutation_sites(fn) -> list:
    """Where a twin of test ``fn`` can differ so that it fails whenever ``fn`` passes.

    Only statements directly in the test's body count (they run whenever the test passes).
    Returns ``(kind, payload, strength)`` triples:

    * ``("leaf", [(node, kind)], "strict")`` / ``("column", rows, "strict")``: the expected
      literal of ``computed == expected`` (either order) or ``computed is True/False``; see
      :func:`_template` for what an expected value may be;
    * ``("call", [(node, kind), …], "weak")``: literal arguments of the right-hand (expected)
      side of ``computed == call(…)``;
    * ``("raises", call, "weak")``: the exception type of ``with pytest.raises(E):``.
    """
    params = _parametrize(fn)
    uses: dict = {}
    for stmt in fn.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name):
                uses[node.id] = uses.get(node.id, 0) + 1
    sites = []
    for stmt in fn.body:
        if isinstance(stmt, ast.Return):
            break
        call = _raises_call(stmt)
        if call is not None:
            sites.append(("raises", call, "weak"))
            continue
        if not isinstance(stmt, ast.Assert):
            continue
        for cmp in _compares(stmt.test):
            if len(cmp.ops) != 1 or not isinstance(cmp.ops[0], (ast.Eq, ast.Is)):
                continue
            left, right = cmp.left, cmp.comparators[0]
            for expected, other in ((right, left), (left, right)):
                found = _template(expected, params, uses)
                if not found or _template(other, params, uses) is not None:
                    continue
                if isinstance(cmp.ops[0], ast.Is):   # identity: only True/False can be swapped
                    found = [s for s in found if s[0] == "leaf" and s[1][0][1] == "bool"] + [
                        s for s in found if s[0] == "column" and all(
                            leaf[1] == "bool" for row in s[1] for leaf in row)]
                sites += [(kind, payload, "strict") for kind, payload in found]
            computed = _template(left, params, uses) is None and _template(right, params, uses) is None
            if computed and isinstance(cmp.ops[0], ast.Eq):
                leaves = _call_leaves(right)     # the expected side by convention, and only it
                if leaves:
                    sites.append(("call", leaves, "weak"))
    return sites


# -- mutations --------------------------------------------------------------------------------

_CLASSES = (string.digits, string.ascii_lowercase, string.ascii_uppercase)
_CLASSES_ALL = frozenset("".join(_CLASSES))


def _swap_char(text: str, positions: list, rng) -> str:
    i = rng.choice(positions)
    pool = next(c for c in _CLASSES if text[i] in c)
    return text[:i] + rng.choice([c for c in pool if c != text[i]]) + text[i + 1:]


def _far_enough(new, value, kind: str) -> bool:
    if new == value or type(new) is not type(value):
        return False
    return kind != "approx" or abs(new - value) > 1e-4 * max(abs(value), 1e-3)


def _mutate_value(value, kind: str, rng):
    """A different value of the same type that no plain value can equal together with ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        positions = [i for i, c in enumerate(value) if c in _CLASSES_ALL]
        return _swap_char(value, positions, rng) if positions else rng.choice(string.ascii_lowercase)
    if isinstance(value, int):
        digits = str(abs(value))
        positions = list(range(len(digits)))[: _APPROX_SIGNIFICANT if kind == "approx" else None]
        for _ in range(100):
            new = int(_swap_char(digits, positions, rng)) * (-1 if value < 0 else 1)
            if _far_enough(new, value, kind) and (len(digits) == 1 or len(str(abs(new))) == len(digits)):
                return new
        return value + 1
    mantissa, e, exponent = repr(float(value)).partition("e")
    digits = [i for i, c in enumerate(mantissa) if c.isdigit()]
    if kind == "approx":
        significant = [i for i in digits if mantissa[i] != "0" or any(
            mantissa[j] not in "0.-" for j in range(i))]
        digits = (significant or digits[-1:])[:_APPROX_SIGNIFICANT]
    for _ in range(100):
        new = float(_swap_char(mantissa, digits, rng) + e + exponent)
        if _far_enough(new, float(value), kind):
            return new
    return value + 1.0


def _leaf_value(node):
    return node.value if isinstance(node, ast.Constant) else _number(node)


def _pool_key(value, kind: str):
    """Values are drawn by type (``approx`` and exact floats share one pool)."""
    return ("approx" if kind.endswith("approx") else "exact", type(value))


def _pool_of(pools: dict, value, kind: str) -> list:
    return [v for (_, t), values in pools.items() if t is type(value) for v in values]


def _differs(new, value, base: str) -> bool:
    if type(new) is not type(value) or new == value:
        return False
    return base != "approx" or abs(new - value) > _APPROX_REL * max(abs(value), 1e-3)


def _set_leaf(node, new) -> None:
    """Make the literal (or constant arithmetic) ``node`` evaluate to ``new``."""
    if isinstance(node, ast.Constant):
        node.value = new
    elif isinstance(node, ast.BinOp):
        node.left, node.op, node.right = ast.Constant(new), ast.Add(), ast.Constant(type(new)(0))
    elif isinstance(node, ast.UnaryOp):
        node.op, node.operand = ast.UAdd(), ast.Constant(new)


def _replace_leaf(node, kind: str, pools: dict, rng) -> bool:
    """Give a leaf another real expected value of its type; True when the pool had none."""
    value = _leaf_value(node)
    if isinstance(value, bool):
        _set_leaf(node, not value)
        return False
    base = _pool_key(value, kind)[0]
    choices = [v for v in _pool_of(pools, value, kind) if _differs(v, value, base)]
    if choices:
        _set_leaf(node, rng.choice(choices))
        return False
    _set_leaf(node, _mutate_value(value, base, rng))     # nothing to draw from: flip a digit
    return True


def _pool_values(sites) -> list:
    """``(pool key, value)`` of every literal leaf of ``sites``."""
    out = []
    for kind, payload, _ in sites:
        leaves = (payload if kind in ("leaf", "call") else
                  [leaf for row in payload for leaf in row] if kind == "column" else [])
        for node, leaf_kind in leaves:
            value = _leaf_value(node)
            if value is not None and not isinstance(value, bool):
                out.append((_pool_key(value, leaf_kind), value))
    return out


def _mutate(fn, rng, pools: dict, raises_for) -> tuple | None:
    """Change one site of ``fn`` in place: ``(strength, used_fallback)``, or ``None``.

    Strict sites are preferred; among them literals whose value appears nowhere else in the
    test (a twin's literal must not be given away by an unchanged copy of the real one).
    """
    sites = mutation_sites(fn)
    strict = [s for s in sites if s[2] == "strict"]
    if strict:
        counts: dict = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Constant):
                counts[repr(node.value)] = counts.get(repr(node.value), 0) + 1

        def unique(site):
            node = site[1][0][0]
            return site[0] == "column" or not isinstance(node, ast.Constant) or counts.get(
                repr(node.value), 0) == 1

        choices = [s for s in strict if unique(s)] or strict
    else:
        choices = [s for s in sites if s[0] == "call" or (s[0] == "raises" and raises_for(s[1].args[0].id))]
    if not choices:
        return None
    kind, payload, strength = rng.choice(choices)
    fallback = False
    if kind == "leaf":
        fallback = _replace_leaf(*payload[0], pools, rng)
    elif kind == "column":
        for leaves in payload:
            fallback = _replace_leaf(*rng.choice(leaves), pools, rng) or fallback
    elif kind == "call":
        fallback = _replace_leaf(*rng.choice(payload), pools, rng)
    else:
        payload.args[0] = ast.Name(rng.choice(raises_for(payload.args[0].id)), ast.Load())
    return strength, fallback


# -- exception hierarchies --------------------------------------------------------------------

_BUILTIN_EXCEPTIONS = {name: obj for name, obj in vars(builtins).items()
                       if isinstance(obj, type) and issubclass(obj, BaseException)}


class ExceptionHierarchy:
    """The exception classes a reference solution defines (read with ``ast``, never run) and
    Python's built-in ones, by name: enough to pick a raises twin that no class of the
    reference (or of Python) satisfies together with the real expectation."""

    def __init__(self, classes: dict):
        self.classes = classes            # name -> list of base names (None: defined twice)
        self._memo: dict = {}

    def ancestors(self, name: str, _seen=()) -> tuple[set, bool] | None:
        """``(known ancestor names incl. name, some base unknown)``, or ``None``."""
        if name in self._memo:
            return self._memo[name]
        if name in self.classes:
            bases = self.classes[name]
            if bases is None or name in _BUILTIN_EXCEPTIONS or name in _seen:
                result = None
            else:
                known, unknown = {name}, False
                for base in bases:
                    sub = self.ancestors(base, (*_seen, name))
                    if sub is None:
                        unknown = True
                    else:
                        known |= sub[0]
                        unknown |= sub[1]
                result = (known, unknown)
        elif name in _BUILTIN_EXCEPTIONS or name == "object":
            cls = _BUILTIN_EXCEPTIONS.get(name, object)
            result = ({c.__name__ for c in cls.__mro__}, False)
        else:
            result = None
        self._memo[name] = result
        return result

    def is_exception(self, name: str) -> bool:
        anc = self.ancestors(name)
        return anc is not None and "BaseException" in anc[0]

    def disjoint(self, a: str, b: str) -> bool:
        """Whether no class known here (nor one whose bases are unknown) can be both ``a`` and ``b``."""
        if a == b or not (self.is_exception(a) and self.is_exception(b)):
            return False

        def maybe(cls_anc, target):
            known, unknown = cls_anc
            return target in known or (unknown and target in _BUILTIN_EXCEPTIONS)

        for name in [*self.classes, *_BUILTIN_EXCEPTIONS]:
            anc = self.ancestors(name)
            if anc is None:
                continue
            if maybe(anc, a) and maybe(anc, b):
                return False
        return True


def exception_hierarchy(reference_dir) -> ExceptionHierarchy | None:
    """The :class:`ExceptionHierarchy` of a reference solution's sources (``None``: no reference)."""
    if reference_dir is None or not Path(reference_dir).is_dir():
        return None
    classes: dict = {}
    for path in sorted(Path(reference_dir).rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute)
                         else "<expr>" for b in node.bases] or ["object"]
                classes[node.name] = None if node.name in classes else bases
    return ExceptionHierarchy(classes)


def _module_bindings(tree) -> dict:
    """Names bound at module level: ``name -> how`` (``"import"`` for ``from m import name``)."""
    bound = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                bound[alias.asname or alias.name] = "import" if alias.asname in (None, alias.name) else "alias"
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound[(alias.asname or alias.name).split(".")[0]] = "module"
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[stmt.name] = "def"
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        bound[node.id] = "assign"
    return bound


# -- names ------------------------------------------------------------------------------------

class _Names:
    """Draws test names like the suite's own: ``test_`` + words of its test names."""

    def __init__(self, originals: list, taken: set, rng):
        words = [w for name in originals for w in name.split("_")[1:] if w]
        self.words = sorted(set(words)) or ["case"]
        self.lengths = [max(1, len([w for w in n.split("_")[1:] if w])) for n in originals] or [2]
        self.taken = set(taken)
        self.rng = rng

    def draw(self) -> str:
        for attempt in range(_MAX_NAME_TRIES):
            k = self.rng.choice(self.lengths) + attempt // 10      # longer names when few words
            name = "test_" + "_".join(self.rng.choice(self.words) for _ in range(k))
            if name not in self.taken:
                self.taken.add(name)
                return name
        raise RuntimeError("could not draw a fresh test name")


def _is_test(stmt) -> bool:
    return isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name.startswith("test")


def _scopes(tree):
    """The module and its ``Test*`` classes: ``(classes tuple, body owner)``."""
    yield (), tree
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test"):
            yield (stmt.name,), stmt


def _module_names(tree) -> set:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def _test_references(tree, names: set) -> bool:
    """Whether a statement other than a test's own definition refers to one of ``names``."""
    for _, owner in _scopes(tree):
        for stmt in owner.body:
            if _is_test(stmt) or isinstance(stmt, ast.ClassDef):
                continue
            if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(stmt)):
                return True
    return False


def _shuffle(body: list, group: dict, rng) -> list:
    """``body`` with its tests permuted among their places, no two of a group next to each other
    (the best of :data:`_SHUFFLE_TRIES` random orders)."""
    slots = [i for i, stmt in enumerate(body) if id(stmt) in group]
    tests = [body[i] for i in slots]
    best, best_bad = tests, None
    for _ in range(_SHUFFLE_TRIES):
        order = tests[:]
        rng.shuffle(order)
        bad = sum(group[id(x)] == group[id(y)] for x, y in zip(order, order[1:]))
        if best_bad is None or bad < best_bad:
            best, best_bad = order, bad
        if bad == 0:
            break
    out = list(body)
    for i, stmt in zip(slots, best):
        out[i] = stmt
    return out


def _twins_of(stmt, rng, pools, raises_for) -> list:
    """Up to :data:`TWINS_PER_TEST` distinct twins of ``stmt``: ``(twin, strength, fallback)``."""
    seen = {ast.unparse(ast.Module(body=stmt.body, type_ignores=[]))
            + ast.unparse(ast.Module(body=[ast.Expr(d) for d in stmt.decorator_list], type_ignores=[]))}
    twins = []
    for _ in range(3 * TWINS_PER_TEST):
        if len(twins) == TWINS_PER_TEST:
            break
        twin = copy.deepcopy(stmt)
        try:
            done = _mutate(twin, rng, pools, raises_for)
        except ValueError:
            done = None
        if done is None:
            break
        text = (ast.unparse(ast.Module(body=twin.body, type_ignores=[]))
                + ast.unparse(ast.Module(body=[ast.Expr(d) for d in twin.decorator_list], type_ignores=[])))
        if text not in seen:
            seen.add(text)
            twins.append((twin, *done))
    return twins


def _rewrite(tree, rel: str, in_manifest, suite: SuiteMap, rng, pools: dict, raises_for) -> None:
    originals = [s.name for _, owner in _scopes(tree) for s in owner.body if _is_test(s)]
    names = _Names(originals, _module_names(tree), rng)
    renamed_module_level = {}
    may_shuffle = not _test_references(tree, set(originals))
    for classes, owner in _scopes(tree):
        body, group = [], {}
        for stmt in owner.body:
            if not _is_test(stmt):
                body.append(stmt)
                continue
            original = stmt.name
            stmt.name = names.draw()
            if not classes:
                renamed_module_level[original] = stmt.name
            twins = _twins_of(stmt, rng, pools, raises_for) if in_manifest(
                "::".join([rel, *classes, original])) else []
            suite.n_tests += 1
            suite.functions[(rel, classes, stmt.name)] = (original, "real", None)
            body.append(stmt)
            group[id(stmt)] = stmt.name
            for twin, strength, fallback in twins:
                twin.name = names.draw()
                suite.functions[(rel, classes, twin.name)] = (original, "twin", stmt.name)
                suite.strength[(rel, classes, twin.name)] = strength
                suite.n_twins += 1
                suite.n_fallback += fallback
                body.append(twin)
                group[id(twin)] = stmt.name
            if twins:
                suite.n_twinned += 1
                suite.functions[(rel, classes, stmt.name)] = (original, "real", twins[0][0].name)
        owner.body = _shuffle(body, group, rng) if may_shuffle else body
    for node in ast.walk(tree):   # module-level references to a renamed test (aliases)
        if isinstance(node, ast.Name) and node.id in renamed_module_level and isinstance(node.ctx, ast.Load):
            node.id = renamed_module_level[node.id]


def build_suite(src: Path, dst: Path, manifest_tests, rng: random.Random | None = None, *,
                reference=None) -> SuiteMap:
    """Copy the test tree ``src`` to ``dst`` with every test renamed, twinned and shuffled.

    Parameters
    ----------
    src, dst : Path
        The hidden tests, and the grading copy to write (must not exist).
    manifest_tests : iterable of str
        Node IDs of the frozen manifest; only tests with a manifest node get twins.
    rng : random.Random, optional
        Default: ``random.SystemRandom()`` (unpredictable to the code under test).
    reference : path, optional
        The reference solution; its exception classes (read with ``ast``) let raises-only
        tests get twins. Without it they get none.

    Returns
    -------
    SuiteMap
    """
    import shutil

    rng = rng or random.SystemRandom()
    wanted = {n.partition("[")[0] for n in manifest_tests}
    suite = SuiteMap()
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    hierarchy = exception_hierarchy(reference)
    trees: dict = {}
    pools: dict = {}
    raised: set = set()                   # built-in exception types the suite expects somewhere
    for path in sorted(dst.rglob("*.py")):
        if not TEST_FILE.match(path.name):
            continue
        rel = path.relative_to(dst).as_posix()
        try:
            trees[rel] = (path, ast.parse(path.read_text(encoding="utf-8")))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            suite.untouched.append(rel)
            continue
        tree = trees[rel][1]
        for classes, owner in _scopes(tree):
            for stmt in owner.body:
                if _is_test(stmt) and "::".join([rel, *classes, stmt.name]) in wanted:
                    sites = mutation_sites(stmt)
                    for key, value in _pool_values(sites):
                        pools.setdefault(key, []).append(value)
                    raised |= {c.args[0].id for kind, c, _ in sites if kind == "raises"
                               and c.args[0].id in _BUILTIN_EXCEPTIONS}
    for rel, (path, tree) in trees.items():
        bound = _module_bindings(tree)
        usable = [n for n, how in bound.items() if how == "import"] + [
            n for n in sorted(raised) if n not in bound]
        usable = sorted({n for n in usable if hierarchy is not None and hierarchy.is_exception(n)})

        def raises_for(name, usable=usable):
            if hierarchy is None or (name in bound and bound[name] != "import"):
                return []
            return [n for n in usable if hierarchy.disjoint(name, n)]

        _rewrite(tree, rel, wanted.__contains__, suite, rng, pools, raises_for)
        path.write_text(ast.unparse(ast.fix_missing_locations(tree)) + "\n", encoding="utf-8")
    return suite
