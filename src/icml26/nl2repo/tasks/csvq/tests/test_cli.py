import shutil
import subprocess

import pytest

from csvq.cli import main

CSV = "name,city,age\nann,paris,31\nbob,oslo,25\ncid,paris,\ndee,oslo,40\n"


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "people.csv"
    path.write_text(CSV)
    return str(path)


def run(*args):
    exe = shutil.which("csvq")
    assert exe is not None, "the csvq console script is not installed"
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)


def test_script_where_select(data):
    res = run(data, "--where", "age > 30", "--select", "name")
    assert (res.returncode, res.stdout) == (0, "name\nann\ndee\n")


def test_script_group_by(data):
    res = run(data, "--group-by", "city", "--agg", "n=count(*)", "--agg", "top=max(age)")
    assert res.stdout == "city,n,top\nparis,2,31\noslo,2,40\n"


def test_script_sort_desc_limit(data):
    res = run(data, "--sort", "age", "--desc", "--limit", "2", "--select", "name,age")
    assert res.stdout == "name,age\ndee,40\nann,31\n"


def test_script_bad_expression_exit_code(data):
    res = run(data, "--where", "age >")
    assert res.returncode == 2 and res.stderr.startswith("csvq: error:")


def test_script_missing_file(tmp_path):
    res = run(str(tmp_path / "nope.csv"))
    assert res.returncode == 2


def test_main_returns_zero_and_prints(data, capsys):
    assert main([data, "--select", "city", "--limit", "1"]) == 0
    assert capsys.readouterr().out == "city\nparis\n"


def test_main_mean_output(data, capsys):
    main([data, "--group-by", "city", "--agg", "avg=mean(age)"])
    assert capsys.readouterr().out == "city,avg\nparis,31.0\noslo,32.5\n"
