"""Benchmarks for the RB-PEM reproduction: COCO ``bbob-noisy``, the Rao–Blackwell
mechanism generator, and a noisy hyper-parameter-optimization task on sklearn digits.

- :func:`run_on_bbob_noisy` runs any optimizer on one ``bbob-noisy`` problem from the
  installed ``coco-experiment`` package (``cocoex``) under a COCO observer and returns the
  final best *noise-free* ``f − f_opt`` that the observer logs (3rd column of the
  ``.dat`` file). Nothing is re-implemented and nothing is downloaded.
- :func:`mechanism_candidate_sets` is the synthetic generator of the mechanism check:
  ``F(x) = ½‖x‖²``, ``m ~ 2·N(0, I)``, ``y_i ~ 0.5·N(0, I)``, additive ``N(0, 1)`` noise;
  ground truth (oracle PEM weights) by Monte Carlo over fresh noise draws.
- :class:`NoisyLogRegHPO` is the paper's 5-D SGD-hyper-parameter task: one short SGD epoch
  of binary logistic regression (digit 0 vs rest) with random mini-batches and mean-1
  lognormal per-step gradient multipliers; returns validation log-loss.

References
----------
N. Hansen et al. *COCO: a platform for comparing continuous optimizers in a black-box
setting.* Optim. Methods Softw. 36(1), 2021 (bbob-noisy: Hansen, Finck, Ros, Auger 2009).
S. Wang, Z. Lu. *Depth over Fidelity in Fixed-Budget Noisy Evolution Strategies.* ICML 2026.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from icml26.core.validation import check_int

__all__ = ["HIGH_MISRANKING_FUNCTIONS", "TARGET_PRECISION", "run_on_bbob_noisy",
           "read_final_noise_free", "mechanism_candidate_sets", "NoisyLogRegHPO",
           "HPO_BOUNDS", "HPO_X0"]

HIGH_MISRANKING_FUNCTIONS = (108, 110, 111, 113, 114, 116, 117, 119, 120, 122, 123, 125, 126,
                             128, 129)
"""The paper's high-misranking slice of bbob-noisy (function ids, chosen by RD on ES samples)."""

TARGET_PRECISION = 1e-8
"""COCO's final target: ``f − f_opt ≤ 1e-8`` counts as solved."""


@contextlib.contextmanager
def _inside(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def read_final_noise_free(folder: Path) -> float:
    """Final best noise-free ``f − f_opt`` from the single run logged under ``folder``."""
    files = sorted(Path(folder).rglob("*.dat"))
    if not files:
        raise FileNotFoundError(f"no COCO .dat file under {folder}")
    last = None
    for line in files[0].read_text().splitlines():
        if line.strip() and not line.startswith("%"):
            last = line
    if last is None:
        raise ValueError(f"COCO .dat file {files[0]} holds no data line")
    return float(last.split()[2])


def run_on_bbob_noisy(optimize: Callable, function_id: int, instance: int, dimension: int,
                      budget: int) -> dict:
    """Run ``optimize(problem, budget)`` on one observed bbob-noisy problem.

    Parameters
    ----------
    optimize : callable
        ``optimize(fun, x0, bounds, budget) -> anything``; ``fun`` is the COCO problem
        (one noisy oracle call per invocation), ``x0`` its initial solution and
        ``bounds = (lb, ub)``.
    function_id : int
        101..130.
    instance : int
        COCO instance (1..15).
    dimension : int
    budget : int

    Returns
    -------
    dict
        ``delta_f`` (final best noise-free ``f − f_opt`` from the COCO observer),
        ``evaluations`` (calls COCO counted), ``solved`` (``delta_f ≤ 1e-8``) and
        ``output`` (what ``optimize`` returned).
    """
    import cocoex

    function_id = check_int(function_id, "function_id", min_value=101, max_value=130)
    instance = check_int(instance, "instance", min_value=1)
    dimension = check_int(dimension, "dimension", min_value=2)
    cocoex.log_level("warning")
    workdir = Path(tempfile.mkdtemp(prefix="icml26-pem-coco-"))
    try:
        with _inside(workdir):
            suite = cocoex.Suite("bbob-noisy", "", f"dimensions:{dimension} "
                                 f"function_indices:{function_id - 100} "
                                 f"instance_indices:{instance}")
            observer = cocoex.Observer("bbob-noisy", "result_folder: run")
            problem = next(iter(suite))
            problem.observe_with(observer)
            bounds = (np.asarray(problem.lower_bounds, float), np.asarray(problem.upper_bounds, float))
            x0 = np.clip(np.asarray(problem.initial_solution, float), *bounds)
            output = optimize(problem, x0, bounds, budget)
            evaluations = int(problem.evaluations)
            problem.free()
            del observer, suite
            delta_f = read_final_noise_free(workdir / "exdata")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return {"delta_f": delta_f, "evaluations": evaluations,
            "solved": bool(delta_f <= TARGET_PRECISION), "output": output}


def mechanism_candidate_sets(n_sets: int, *, dimension: int = 40, popsize: int = 16,
                             mean_scale: float = 2.0, step_scale: float = 0.5, rng=None):
    """Candidate sets for the Rao–Blackwell mechanism check on ``F(x) = ½‖x‖²``.

    Returns
    -------
    means : ndarray of shape (n_sets, dimension)
        ``m ~ mean_scale·N(0, I)``.
    steps : ndarray of shape (n_sets, popsize, dimension)
        ``y_i ~ step_scale·N(0, I)``; candidates are ``x_i = m + y_i`` (σ = 1).
    values : ndarray of shape (n_sets, popsize)
        Noise-free ``F(x_i)``; an observation adds independent ``N(0, 1)`` noise.
    """
    n_sets = check_int(n_sets, "n_sets", min_value=1)
    rng = np.random.default_rng(rng)
    means = mean_scale * rng.standard_normal((n_sets, dimension))
    steps = step_scale * rng.standard_normal((n_sets, popsize, dimension))
    values = 0.5 * np.sum((means[:, None, :] + steps) ** 2, axis=2)
    return means, steps, values


HPO_BOUNDS = (np.array([-4.0, -6.0, -3.0, 2.0, -3.0]), np.array([-0.5, -2.0, 3.0, 8.0, 0.0]))
"""Box of the HPO task: log10 lr, log10 weight decay, momentum logit, log2 batch, log10 init scale."""

HPO_X0 = np.array([-2.0, -4.0, 0.0, 5.0, -1.0])
"""Initial point of the HPO task (lr 1e-2, wd 1e-4, momentum ≈ 0.5, batch 32, init 0.1)."""


@dataclass
class NoisyLogRegHPO:
    """Noisy 5-D HPO objective: validation log-loss after one SGD epoch (digit 0 vs rest).

    Each call trains binary logistic regression on a fixed train split (per ``seed``) with
    random mini-batch order, random initial weights ``N(0, init_scale²)`` and per-step
    gradient multipliers ``exp(σ·ξ − σ²/2)``, ``ξ ~ N(0, 1)`` (mean 1, ``σ = 1``), and
    returns the mean validation log-loss. ``x = (log10 lr, log10 weight decay, momentum
    logit (momentum = 0.99·sigmoid), log2 batch size (rounded), log10 init scale)`` inside :data:`HPO_BOUNDS`.

    Parameters
    ----------
    seed : int
        Fixes the train/validation split and the stream of training noise.
    noise_sigma : float
        Lognormal gradient-noise σ (1.0).
    val_fraction : float

    Examples
    --------
    >>> task = NoisyLogRegHPO(seed=0)
    >>> 0.0 < task([-1.0, -4.0, 0.0, 5.0, -2.0]) < 5.0
    True
    """

    seed: int = 0
    noise_sigma: float = 1.0
    val_fraction: float = 0.3

    def __post_init__(self):
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        data = load_digits()
        X = data.data / 16.0
        X = np.column_stack([X, np.ones(len(X))])        # bias feature
        y = (data.target == 0).astype(float)
        self._Xtr, self._Xva, self._ytr, self._yva = train_test_split(
            X, y, test_size=self.val_fraction, random_state=int(self.seed), stratify=y)
        self._rng = np.random.default_rng([int(self.seed), 1])

    def __call__(self, x, rng=None) -> float:
        rng = self._rng if rng is None else rng
        x = np.clip(np.asarray(x, dtype=float), *HPO_BOUNDS)
        lr, wd = 10.0 ** x[0], 10.0 ** x[1]
        momentum = 0.99 / (1.0 + math.exp(-x[2]))        # as the official HPO runner
        batch = 2 ** int(round(x[3]))
        init = 10.0 ** x[4]
        n, d = self._Xtr.shape
        w = init * rng.standard_normal(d)
        velocity = np.zeros(d)
        order = rng.permutation(n)
        for start in range(0, n, batch):
            idx = order[start:start + batch]
            Xb, yb = self._Xtr[idx], self._ytr[idx]
            p = 0.5 * (1.0 + np.tanh(0.5 * np.clip(Xb @ w, -500, 500)))   # stable sigmoid
            grad = Xb.T @ (p - yb) / len(idx) + wd * w
            grad *= math.exp(self.noise_sigma * rng.standard_normal() - 0.5 * self.noise_sigma ** 2)
            velocity = momentum * velocity - lr * grad
            w = w + velocity
            if not np.all(np.isfinite(w)):
                break
        z = np.clip(self._Xva @ np.nan_to_num(w, nan=0.0, posinf=1e6, neginf=-1e6), -500, 500)
        # log-loss with logits: log(1 + e^z) - y z
        return float(np.mean(np.logaddexp(0.0, z) - self._yva * z))

    def noise_free(self, x, repeats: int = 20, rng=None) -> float:
        """Average of ``repeats`` independent evaluations (a separate noise stream)."""
        rng = np.random.default_rng(rng if rng is not None else [int(self.seed), 2])
        return float(np.mean([self(x, rng=rng) for _ in range(repeats)]))
