"""Figures go through matplotlib's object API: importing a method never switches a user's
backend or loads pyplot."""

import json
import subprocess
import sys

from icml26.core.catalog import method_folders
from icml26.core.figures import subplots


def test_subplots_makes_a_figure_pyplot_does_not_track():
    fig, axes = subplots(1, 2, figsize=(3, 2), sharey=True)
    assert len(axes) == 2 and fig.get_figwidth() == 3
    assert fig.canvas.manager is None  # not registered with pyplot's figure manager


def test_importing_a_method_keeps_the_backend_and_loads_no_pyplot():
    # one fresh interpreter imports every method in turn (a planted offender is caught:
    # the first check runs after `matplotlib.use` would have switched the backend)
    code = ("import importlib, json, matplotlib, sys\nmatplotlib.use('pdf')\nbad = {}\n"
            f"for slug in {method_folders()!r}:\n"
            "    importlib.import_module(f'icml26.{slug}.experiment')\n"
            "    if matplotlib.get_backend() != 'pdf':\n"
            "        bad[slug] = 'backend ' + matplotlib.get_backend(); matplotlib.use('pdf')\n"
            "    if 'matplotlib.pyplot' in sys.modules:\n"
            "        bad[slug] = 'pyplot'; del sys.modules['matplotlib.pyplot']\n"
            "print(json.dumps(bad))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {}
