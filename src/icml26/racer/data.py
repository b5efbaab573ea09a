"""Data for RACER: the synthetic multi-LLM routing benchmark and RouteLLM's real correctness data.

References
----------
Hao, Zeng, Wei, Jing. "RACER: Risk-Aware Calibrated Efficient Routing for Large Language
Models", arXiv:2603.06616, 2026.
Ong et al. "RouteLLM: Learning to Route LLMs with Preference Data", 2024 (data source).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from icml26.core.validation import check_int, check_probability, check_scalar_in

__all__ = ["make_routing_benchmark", "load_routellm_mmlu", "load_routellm_gsm8k",
           "ROUTELLM_MODELS"]

ROUTELLM_MODELS = ("mistralai/Mixtral-8x7B-Instruct-v0.1", "gpt-4-1106-preview")
_MMLU_FILE = "routellm_mmlu.csv.gz"
_GSM8K_FILE = "routellm_gsm8k_responses.csv.gz"
_NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?")

# generative constants of spec §5 (named, not bare literals in the math)
_CENTRE_SCALE = 1.5
_DIFFICULTY_PROXY_NOISE = 0.5
_BIAS_MEAN, _BIAS_SCALE = 0.5, 0.5
_SKILL_SCALE = 0.7
_SPECIALTY_BONUS = 1.5


def make_routing_benchmark(n_queries: int = 12000, n_models: int = 7, n_domains: int = 5,
                           n_features: int = 32, n_answers: int = 1000, trap: float = 0.15,
                           hardness: float = 2.0, seed: int = 0) -> Bunch:
    """Synthetic K-model routing benchmark with known per-model success probabilities.

    Generative process (spec §5): domain ``d_i ~ U{0..D-1}``; domain centres
    ``C ~ N(0, 1.5^2)^(D x p)``; difficulty ``h_i ~ N(0, 1)``; features
    ``x_i = C[d_i] + N(0, I_p)`` whose first coordinate is then replaced by a noisy
    difficulty proxy ``h_i + 0.5 eps``; model bias ``b_k ~ N(0.5, 0.5^2)``; skill
    ``S_kd ~ N(0, 0.7^2)`` plus 1.5 on one random specialty domain per model;
    ``pi_ik = sigmoid(b_k + S_{k, d_i} - hardness * h_i)``; ``Y_ik ~ Bernoulli(pi_ik)``.
    Gold answer ``a*_i ~ U{0..A-1}``, a shared trap answer ``t_i != a*_i``; a model answers
    ``a*_i`` when correct, else ``t_i`` with probability ``trap``, else a uniform wrong answer.

    Parameters
    ----------
    n_queries, n_models, n_domains, n_features, n_answers : int
        N, K, D, p and A of the spec.
    trap : float
        Probability that a wrong model gives the query's shared trap answer.
    hardness : float
        Weight of the difficulty in the success logit.
    seed : int
        Seed of the generator.

    Returns
    -------
    Bunch
        ``X`` (N, p), ``Y`` (N, K) int 0/1 correctness, ``answers`` (N, K) int, ``gold`` (N,)
        int, ``pi`` (N, K) true success probabilities, ``domain`` (N,), ``difficulty`` (N,).

    Examples
    --------
    >>> data = make_routing_benchmark(n_queries=200, seed=0)
    >>> data.X.shape, data.Y.shape
    ((200, 32), (200, 7))
    >>> bool(((data.answers == data.gold[:, None]) == (data.Y == 1)).all())
    True
    """
    n = check_int(n_queries, "n_queries", min_value=1)
    k = check_int(n_models, "n_models", min_value=1)
    d = check_int(n_domains, "n_domains", min_value=1)
    p = check_int(n_features, "n_features", min_value=1)
    a = check_int(n_answers, "n_answers", min_value=3)
    trap = check_probability(trap, "trap", open_interval=False)
    hardness = check_scalar_in(hardness, "hardness")
    seed = check_int(seed, "seed", min_value=0)
    rng = np.random.default_rng(seed)

    domain = rng.integers(0, d, size=n)
    centres = rng.normal(0.0, _CENTRE_SCALE, size=(d, p))
    difficulty = rng.normal(0.0, 1.0, size=n)
    X = centres[domain] + rng.normal(size=(n, p))
    X[:, 0] = difficulty + _DIFFICULTY_PROXY_NOISE * rng.normal(size=n)

    bias = rng.normal(_BIAS_MEAN, _BIAS_SCALE, size=k)
    skill = rng.normal(0.0, _SKILL_SCALE, size=(k, d))
    skill[np.arange(k), rng.integers(0, d, size=k)] += _SPECIALTY_BONUS
    logit = bias[None, :] + skill[:, domain].T - hardness * difficulty[:, None]
    pi = 1.0 / (1.0 + np.exp(-logit))
    Y = (rng.random((n, k)) < pi).astype(int)

    gold = rng.integers(0, a, size=n)
    trap_answer = (gold + rng.integers(1, a, size=n)) % a          # != gold
    uniform_wrong = (gold[:, None] + rng.integers(1, a, size=(n, k))) % a  # != gold
    use_trap = rng.random((n, k)) < trap
    wrong = np.where(use_trap, trap_answer[:, None], uniform_wrong)
    answers = np.where(Y == 1, gold[:, None], wrong)
    return Bunch(X=X, Y=Y, answers=answers, gold=gold, pi=pi, domain=domain,
                 difficulty=difficulty)


def _read(path: str | Path | None, default_name: str) -> pd.DataFrame:
    if path is None:
        with resources.as_file(resources.files("icml26.racer") / "data" / default_name) as f:
            return pd.read_csv(f)
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"path {str(path)!r} does not exist; expected a CSV file "
                                f"(or None for the packaged copy)")
    return pd.read_csv(path)


def _correctness(frame: pd.DataFrame, path) -> np.ndarray:
    missing = [m for m in ROUTELLM_MODELS if m not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing correctness columns {missing}; expected {list(ROUTELLM_MODELS)}")
    return frame[list(ROUTELLM_MODELS)].astype(bool).to_numpy().astype(int)


def load_routellm_mmlu(path: str | Path | None = None) -> Bunch:
    """RouteLLM's MMLU per-question correctness of Mixtral-8x7B-Instruct and GPT-4-1106 (K = 2).

    Parameters
    ----------
    path : str or Path, optional
        A CSV with columns ``subject``, ``prompt`` and the two model columns of
        :data:`ROUTELLM_MODELS`; default: the packaged copy (14,042 questions, Apache-2.0,
        see ``data/SOURCE.md``).

    Returns
    -------
    Bunch
        ``prompts`` (list of str), ``subjects`` (list of str), ``Y`` (n, 2) int correctness,
        ``model_names`` (tuple), ``text`` ("subject + prompt", the router's input).

    Examples
    --------
    >>> data = load_routellm_mmlu()
    >>> data.Y.shape
    (14042, 2)
    """
    frame = _read(path, _MMLU_FILE)
    if "prompt" not in frame.columns or "subject" not in frame.columns:
        raise ValueError(f"{path or _MMLU_FILE}: expected columns 'subject' and 'prompt'")
    Y = _correctness(frame, path or _MMLU_FILE)
    subjects = frame["subject"].astype(str).tolist()
    prompts = frame["prompt"].astype(str).tolist()
    text = [s.replace("_", " ") + " " + q for s, q in zip(subjects, prompts)]
    return Bunch(prompts=prompts, subjects=subjects, Y=Y, model_names=ROUTELLM_MODELS, text=text)


def load_routellm_gsm8k(path: str | Path | None = None) -> Bunch:
    """RouteLLM's GSM8K responses of Mixtral-8x7B-Instruct and GPT-4-1106 (K = 2).

    The final answer of each response is the text after its last ``####`` when the model
    followed GSM8K's format, else the last number in the response (GPT-4's responses rarely
    use ``####``); None when there is neither.

    Parameters
    ----------
    path : str or Path, optional
        A CSV in RouteLLM's ``gsm8k_responses.csv`` format; default: the packaged copy.

    Returns
    -------
    Bunch
        ``prompts``, ``Y`` (n, 2) int correctness, ``responses`` (n, 2) object,
        ``answers`` (n, 2) object (extracted final answers or None), ``model_names``.
    """
    frame = _read(path, _GSM8K_FILE)
    Y = _correctness(frame, path or _GSM8K_FILE)
    cols = [f"{m}_response" for m in ROUTELLM_MODELS]
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise ValueError(f"{path or _GSM8K_FILE}: missing response columns {missing}")
    responses = frame[cols].astype(object).to_numpy()

    def final(text):
        if not isinstance(text, str):
            return None
        if "####" in text:
            return text.rsplit("####", 1)[1].strip() or None
        numbers = _NUMBER.findall(text)
        return numbers[-1] if numbers else None

    answers = np.vectorize(final, otypes=[object])(responses)
    return Bunch(prompts=frame["prompt"].astype(str).tolist(), Y=Y, responses=responses,
                 answers=answers, model_names=ROUTELLM_MODELS)
