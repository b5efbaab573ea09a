"""nl2repo: harness overhead vs number of tests (spec §6 "Scaling check").

Two measurements:
1. JUnit parse + manifest scoring alone on synthetic reports with |M| in 1e3..64e3
   (in-process; O(|M|) expected, slope ≈ 1).
2. Full grading of generated oracle suites with |M| ∈ {50, 200, 800, 3200}: overhead =
   total − pytest's own reported duration (dominated by the constant venv + install cost,
   so the slope is well below 1; bar ≤ 1.15). Each test has three canary twins, so pytest runs
   4 |M| tests, each calling the package in its worker process (one round trip over the
   pipes): pytest's own duration is reported with its slope too (linear: ≈ 1).

Run: ``python benchmarks/nl2repo_bench.py`` (prints the numbers) or with pytest-benchmark.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from icml26.core.stats import loglog_slope
from icml26.nl2repo.harness import mangle_node_id, parse_junit

SIZES_PARSE = (1000, 4000, 16000, 64000)
SIZES_GRADE = (50, 200, 800, 3200)


def _write_junit(path: Path, n: int) -> list[str]:
    ids = [f"test_core.py::test_value[{i}]" for i in range(n)]
    cases = "".join(f'<testcase classname="test_core" name="test_value[{i}]" time="0.001"/>'
                    for i in range(n))
    path.write_text(f'<testsuites><testsuite time="{n * 0.001}">{cases}</testsuite></testsuites>')
    return ids


def parse_and_score(path: Path, ids: list[str]) -> float:
    parsed, _, _, _ = parse_junit(path)
    mangled = {mangle_node_id(n): n for n in ids}
    passed = sum(1 for k, o in parsed.items() if k in mangled and o == "passed")
    return passed / len(ids)


def test_parse_and_score_64k(benchmark, tmp_path):
    ids = _write_junit(tmp_path / "r.xml", 64000)
    assert benchmark(parse_and_score, tmp_path / "r.xml", ids) == 1.0


def parse_scaling(repeats: int = 3) -> tuple[list[float], float]:
    times = []
    with tempfile.TemporaryDirectory() as d:
        for n in SIZES_PARSE:
            ids = _write_junit(Path(d) / f"{n}.xml", n)
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                assert parse_and_score(Path(d) / f"{n}.xml", ids) == 1.0
                best = min(best, time.perf_counter() - t0)
            times.append(best)
    return times, loglog_slope(SIZES_PARSE, times)


def grade_scaling(sandbox: str = "auto") -> tuple[list[dict], float]:
    from icml26.nl2repo import grade
    from icml26.nl2repo.data import make_scaling_task

    rows = []
    for n in SIZES_GRADE:
        root = Path(tempfile.mkdtemp(prefix="nl2repo-bench-"))
        try:
            task = make_scaling_task(n, root / "task")
            rep = grade(task, task.reference_dir, sandbox=sandbox)
            rows.append({"n": n, "total_s": rep.total_s, "pytest_s": rep.pytest_s,
                         "overhead_s": rep.total_s - rep.pytest_s, "score": rep.score})
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return rows, loglog_slope([r["n"] for r in rows], [r["overhead_s"] for r in rows])


def pairwise_slopes(rows, key: str) -> list[float]:
    """log-log slope between consecutive sizes (a superlinear tail shows up here, not in the fit)."""
    return [loglog_slope([a["n"], b["n"]], [a[key], b[key]]) for a, b in zip(rows, rows[1:])]


if __name__ == "__main__":
    times, slope = parse_scaling()
    for n, t in zip(SIZES_PARSE, times):
        print(f"parse+score |M|={n:>6}: {t * 1e3:8.2f} ms")
    print(f"parse+score log-log slope: {slope:.3f}")
    rows, slope = grade_scaling()
    for r in rows:
        print(f"grade |M|={r['n']:>5}: total {r['total_s']:6.2f} s, pytest {r['pytest_s']:6.2f} s, "
              f"overhead {r['overhead_s']:6.2f} s, score {r['score']:.3f}")
    print(f"harness overhead log-log slope: {slope:.3f} (bar ≤ 1.15); between sizes: "
          + ", ".join(f"{x:.2f}" for x in pairwise_slopes(rows, "overhead_s")))
    print(f"pytest's own duration (4 |M| tests, one worker round trip each) log-log slope: "
          f"{loglog_slope([r['n'] for r in rows], [r['pytest_s'] for r in rows]):.3f}; between sizes: "
          + ", ".join(f"{x:.2f}" for x in pairwise_slopes(rows, "pytest_s")))
