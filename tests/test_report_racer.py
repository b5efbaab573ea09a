"""Issue #26: the racer report (quick run) renders without any `nan` cell.

racer's tables have rows for which a metric is undefined (conformal sets without the
null option are infeasible below the unanswerable share; the PAC bound has no vote
accuracy). Those cells must read "—", never `nan ± 0.000`.
"""

import re

import pytest

from icml26.core.experiment import get_experiment
from icml26.core.report import write_report
from icml26.core.runner import run_experiment


@pytest.fixture(scope="module")
def racer_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("racer_report")
    write_report([run_experiment(get_experiment("racer"), quick=True)], out,
                 command="icml26 run racer --quick")
    return out


def _cells(text):
    md = [c.strip() for line in text.splitlines() if line.startswith("|")
          for c in line.strip().strip("|").split(" | ")]
    return md + [t.strip() for t in re.findall(r"<td[^>]*>(.*?)</td>", text, flags=re.S)]


@pytest.mark.parametrize("name", ["README.md", "index.html"])
def test_racer_report_has_no_nan_cell(racer_report, name):
    cells = _cells((racer_report / name).read_text(encoding="utf-8"))
    assert len(cells) > 100
    assert not [c for c in cells if re.search(r"\bnan\b", c, flags=re.I)]
    assert not [c for c in cells if re.search(r"nan\s*±", c, flags=re.I)]   # an undefined mean reads "—"
    assert "—" in cells  # its undefined cells are there, shown as undefined
