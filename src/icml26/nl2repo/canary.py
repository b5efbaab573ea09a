"""Canary twins: tests that must fail, indistinguishable from the suite's own tests.

For every hidden test that compares a computed value with a literal (``assert f(x) == 3``,
``assert (q.value, q.unit) == (3500.0, "m")``, ``pytest.approx(77.0)``, or a parametrized
``expected`` column), the grading copy of the suite gets a **twin**: the same test with one
literal perturbed (one digit or letter changed, the type kept). Then every test of the copy,
real or twin, is **renamed** with a name drawn from the words of the task's own test names,
and each twin sits right before or right after its real test, at random. The harness alone
knows which is which.

No implementation, however buggy, passes both a test and its twin: ``v == 3500.0`` and
``v == 3700.0`` cannot both hold for a plain value. A package that forges outcomes in the
pytest process (patched reports, "equal-to-everything" return values, rewritten test
functions) must either make both pass -- and is caught -- or tell, for each pair, which
literal is right, which is knowing the answer. Tests that only check that an exception is
raised get no twin: a package that raises that exception passes them without forging.

The draw uses fresh OS randomness per grading (``secrets``), not the experiment seed: it must
be unpredictable to the code under test, and honest outcomes do not depend on it.

References
----------
Our resolution of the forgery audit of the NL2Repo-Bench harness (not from the paper).
"""

from __future__ import annotations

import ast
import copy
import random
import re
import string
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SuiteMap", "build_suite", "split_node_id", "mutation_sites", "TEST_FILE"]

TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$")
_APPROX_SIGNIFICANT = 3          # approx literals change within their first 3 significant digits
_MAX_NAME_TRIES = 200


@dataclass
class SuiteMap:
    """What the harness knows about a grading copy of the suite.

    ``functions`` maps ``(file, classes, new_name)`` to ``(original_name, role, partner)``
    where ``role`` is ``"real"`` or ``"twin"`` and ``partner`` the new name of the other
    member of the pair (``None`` for an untwinned test).
    """

    functions: dict = field(default_factory=dict)
    n_twins: int = 0
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


def mutation_sites(fn) -> list:
    """Where a twin of test ``fn`` can differ so that it must fail whenever ``fn`` passes.

    Only asserts directly in the test's body count (they run whenever the test passes), of
    the form ``computed == expected`` (either order), or ``computed is True/False``; see
    :func:`_template` for what an expected value may be.
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
                sites += found
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


def _mutate_leaf(node, kind: str, rng) -> None:
    if not kind.startswith("expr-"):
        node.value = _mutate_value(node.value, kind, rng)
        return
    base = kind[len("expr-"):]
    before = _number(node)
    constants = [n for n in ast.walk(node) if isinstance(n, ast.Constant)]
    for _ in range(100):
        target = rng.choice(constants)
        old = target.value
        target.value = _mutate_value(old, base, rng)
        after = _number(node)
        if after is not None and _finite(after) and after != before and (
                base != "approx" or abs(after - before) > 1e-4 * max(abs(before), 1e-3)):
            return
        target.value = old
    raise ValueError("no mutation changes this expression")


def _mutate(fn, rng) -> bool:
    """Perturb one site of ``fn`` in place; False when it has none."""
    sites = mutation_sites(fn)
    if not sites:
        return False
    # Prefer literals whose value appears nowhere else in the test (a twin's literal must not be
    # given away by an unchanged copy of itself, e.g. in the call's arguments).
    counts: dict = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Constant):
            counts[repr(node.value)] = counts.get(repr(node.value), 0) + 1

    def unique(site):
        node = site[1][0][0]
        return site[0] == "column" or not isinstance(node, ast.Constant) or counts.get(repr(node.value), 0) == 1

    kind, payload = rng.choice([s for s in sites if unique(s)] or sites)
    try:
        if kind == "leaf":
            _mutate_leaf(*payload[0], rng)
        else:
            for leaves in payload:
                _mutate_leaf(*rng.choice(leaves), rng)
    except ValueError:
        return False
    return True


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
            k = self.rng.choice(self.lengths) + attempt // 50
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


def _rewrite(tree, rel: str, in_manifest, suite: SuiteMap, rng) -> None:
    originals = [s.name for _, owner in _scopes(tree) for s in owner.body if _is_test(s)]
    names = _Names(originals, _module_names(tree), rng)
    renamed_module_level = {}
    for classes, owner in _scopes(tree):
        body = []
        for stmt in owner.body:
            if not _is_test(stmt):
                body.append(stmt)
                continue
            original = stmt.name
            stmt.name = names.draw()
            if not classes:
                renamed_module_level[original] = stmt.name
            twin = copy.deepcopy(stmt)
            if in_manifest("::".join([rel, *classes, original])) and _mutate(twin, rng):
                twin.name = names.draw()
                suite.functions[(rel, classes, stmt.name)] = (original, "real", twin.name)
                suite.functions[(rel, classes, twin.name)] = (original, "twin", stmt.name)
                suite.n_twins += 1
                body += [stmt, twin] if rng.random() < 0.5 else [twin, stmt]
            else:
                suite.functions[(rel, classes, stmt.name)] = (original, "real", None)
                body.append(stmt)
        owner.body = body
    for node in ast.walk(tree):   # module-level references to a renamed test (aliases)
        if isinstance(node, ast.Name) and node.id in renamed_module_level and isinstance(node.ctx, ast.Load):
            node.id = renamed_module_level[node.id]


def build_suite(src: Path, dst: Path, manifest_tests, rng: random.Random | None = None) -> SuiteMap:
    """Copy the test tree ``src`` to ``dst`` with every test renamed and twins added.

    Parameters
    ----------
    src, dst : Path
        The hidden tests, and the grading copy to write (must not exist).
    manifest_tests : iterable of str
        Node IDs of the frozen manifest; only tests with a manifest node get a twin.
    rng : random.Random, optional
        Default: ``random.SystemRandom()`` (unpredictable to the code under test).

    Returns
    -------
    SuiteMap
    """
    import shutil

    rng = rng or random.SystemRandom()
    wanted = {n.partition("[")[0] for n in manifest_tests}
    suite = SuiteMap()
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    for path in sorted(dst.rglob("*.py")):
        if not TEST_FILE.match(path.name):
            continue
        rel = path.relative_to(dst).as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            suite.untouched.append(rel)
            continue
        _rewrite(tree, rel, wanted.__contains__, suite, rng)
        path.write_text(ast.unparse(ast.fix_missing_locations(tree)) + "\n", encoding="utf-8")
    return suite
