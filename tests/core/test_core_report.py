"""The report documents: undefined cells, verdicts, quick caveat, provenance, files."""

import json
import os
import re
import stat
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from icml26.core.experiment import Claim, Experiment, Part, Result  # noqa: E402
from icml26.core.report import (QUICK_CAVEAT, figure_caption, prepare_out_dir,  # noqa: E402
                                write_report)
from icml26.core.runner import run_experiment  # noqa: E402
from icml26.core.stats import format_mean_std, summary_table  # noqa: E402


@dataclass(frozen=True)
class Cfg:
    with_figure: bool = True


def _run(config, seed):
    return {"seed": seed}


def _claims_part(jobs, config):
    table = summary_table([{"method": "a", "x": 1.0, "y": float("nan")},
                           {"method": "a", "x": 2.0, "y": float("nan")},
                           {"method": "b", "x": 3.0, "y": 0.5}], "method", ["x", "y"])
    raw = pd.DataFrame({"method": ["a", "b"], "value": [float("nan"), 1.25],
                        "label": ["nan ± 0.000", "ok"]})
    figures = {}
    if config.with_figure:
        fig, ax = plt.subplots()
        ax.plot([0, 1], [1, 0])
        figures["risk_vs_alpha"] = fig
    claims = [Claim.at_least("passes", 1.0, 0.5, paper="≥ 0.5").quick(),
              Claim.at_least("fails", 0.1, 0.5, paper="≥ 0.5").quick(),
              Claim("unfinished", "mean over 3 seeds", 0.7, "≥ 0.5", True, incomplete=True,
                    quick_meaningful=True),
              Claim.at_least("toy scale", 0.2, 0.5, paper="≥ 0.5")]   # a smoke check
    return Result(tables={"per method": table, "raw": raw}, figures=figures, claims=claims)


def _no_claims_part(jobs, config):
    return Result(tables={"info": pd.DataFrame({"k": [1]})})


TOY = Experiment(slug="toy", title="Toy experiment", parts=[
    Part(name="main", run=_run, summarize=_claims_part, quick=Cfg(), full=Cfg(),
         seeds=(0,), quick_seeds=(0,)),
    Part(name="info", run=_run, summarize=_no_claims_part, quick=Cfg(), full=Cfg(),
         seeds=(0,), quick_seeds=(0,))])


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("rep")
    outcome = run_experiment(TOY, quick=True)
    write_report([outcome], out, command="icml26 run toy --quick --set with_figure=true",
                 invocation={"slug": "toy", "quick": True, "set": {"with_figure": "true"},
                             "exp": [], "seeds": None})
    return out


def _cells(text):
    """Every table cell of a Markdown or HTML document."""
    md = [c.strip() for line in text.splitlines() if line.startswith("|")
          for c in line.strip("|").split(" | ")]
    tags = re.findall(r"<td[^>]*>(.*?)</td>", text, flags=re.S)
    return md + [t.strip() for t in tags]


def test_format_mean_std_undefined_single_and_partial():
    assert format_mean_std([float("nan"), float("nan")]) == "—"
    assert format_mean_std([0.25]) == "0.250"  # no "± 0.000" over one seed
    assert format_mean_std([0.2, 0.4]) == "0.300 ± 0.141"
    assert format_mean_std([0.2, float("nan"), 0.4]) == "0.300 ± 0.141 (2/3 seeds)"


def test_no_nan_cell_in_either_document(report):
    for name in ("README.md", "index.html"):
        cells = _cells((report / name).read_text())
        assert cells, name
        bad = [c for c in cells if re.search(r"\bnan\b", c, flags=re.I)]
        assert not bad, (name, bad)
        assert "—" in cells


def test_incomplete_is_its_own_verdict_everywhere(report):
    data = json.loads((report / "results.json").read_text())
    verdicts = [c["verdict"] for c in data["experiments"][0]["parts"][0]["claims"]]
    assert verdicts == ["PASS", "FAIL", "INCOMPLETE", "FAIL"]
    md = (report / "README.md").read_text()
    assert "| unfinished | mean over 3 seeds | 0.7 | ≥ 0.5 | INCOMPLETE |" in md
    assert "claims meaningful at any scale: 1/3 passed, 1 failed, 1 incomplete" in md
    html = (report / "index.html").read_text()
    assert '<tr class="incomplete"><td>unfinished</td>' in html


def test_summary_names_the_claims_that_did_not_pass(report):
    md = (report / "README.md").read_text()
    assert "- toy: fails (FAIL)" in md and "- toy: unfinished (INCOMPLETE)" in md
    assert "- toy: passes" not in md
    assert "- toy: toy scale" not in md          # a smoke check is not a failure to list


def test_quick_claims_without_a_quick_scale_bar_are_smoke_checks(report):
    md = (report / "README.md").read_text()
    assert "| toy scale | ≥ 0.5 | 0.2 | ≥ 0.5 | SMOKE (bar not met) |" in md
    assert "| recorded full run | this quick run |" in md
    assert "ran end to end (smoke check, numbers at toy scale)" in md
    html = (report / "index.html").read_text()
    assert '<tr class="smoke"><td>toy scale</td>' in html


def test_quick_caveat_in_both_documents(report):
    assert QUICK_CAVEAT in (report / "README.md").read_text()
    assert "class='caveat'" in (report / "index.html").read_text()
    assert "smoke check" in QUICK_CAVEAT


def test_report_records_what_was_run(report):
    data = json.loads((report / "results.json").read_text())
    assert data["command"] == "icml26 run toy --quick --set with_figure=true"
    assert data["invocation"]["set"] == {"with_figure": "true"}
    assert data["machine"]["cpu_count"] == os.cpu_count()
    assert data["versions"]["numpy"] and "matplotlib" in data["versions"]
    html = (report / "index.html").read_text()
    assert "What was run" in html and "icml26 run toy --quick --set with_figure=true" in html
    assert "cores" in html and "numpy" in html


def test_html_layout(report):
    html = (report / "index.html").read_text()
    assert html.count("<div class='scroll'><table>") == html.count("<table>")
    assert "<td class='num'>1.25</td>" in html  # numbers right-aligned
    assert "<a href='#toy'>toy</a>" in html and "id='toy'" in html  # summary links
    assert "Figure 1. Risk vs alpha (toy, part main)" in html  # words, not identifiers
    info = html.split("id='toy-info'")[1]
    assert "<th>claim</th>" not in info  # a part without claims has no claims table


def test_report_files_are_0644(report):
    for name in ("README.md", "index.html", "results.json"):
        mode = stat.S_IMODE(os.stat(report / name).st_mode)
        assert mode == 0o666 & ~_umask(), (name, oct(mode))


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_reused_out_folder_drops_stale_figures(tmp_path):
    write_report([run_experiment(TOY, quick=True)], tmp_path)
    png = tmp_path / "toy__main__risk_vs_alpha.png"
    assert png.is_file()
    write_report([run_experiment(TOY, quick=True, overrides={"with_figure": "false"})], tmp_path)
    assert not png.exists()
    assert "risk_vs_alpha" not in (tmp_path / "index.html").read_text()


def test_figures_are_closed_after_summarize_and_still_saved(tmp_path):
    plt.close("all")
    outcome = run_experiment(TOY, quick=True)
    assert plt.get_fignums() == []
    write_report([outcome], tmp_path)
    assert (tmp_path / "toy__main__risk_vs_alpha.png").stat().st_size > 0


def test_unwritable_out_is_refused_with_its_name():
    with pytest.raises(OSError, match="/dev/null/x"):
        prepare_out_dir("/dev/null/x")


def test_figure_caption_is_words():
    assert figure_caption("e1_risk_vs_alpha", "racer", "A") == "E1 risk vs alpha (racer, part A)"
