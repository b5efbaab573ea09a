"""Reproduction of *Capacity without Access* (ICML 2026) at CPU scale on SmolLM2-135M.

Parts (claims, bars, kinds and controls: ``claims.toml``; each ``summarize`` returns measurements):

* ``profile`` (E1) — capacity vs accessibility across depth: the depth profile (Ĥ, erank,
  Â_8, CE_lens per layer) for raw / RMS-normalised tokens, skip 4 / 0, 8×256 and 16×256 tokens;
  the plateau, capacity and weak-access statistics with their negative controls (an early layer
  band, random readout frames, a late layer band) and the stability check.
* ``pathway`` (E2) — the diagnostic pathway on 3 seeds: shared frozen bias, m = 15 and m = L,
  shuffled-15, the incremental arm ``[h^L; h^15]`` and its shuffled twin, on 11k test tokens;
  harness controls and the claim checks as paired intervals over test tokens.
* ``scaling`` — metric cost vs number of tokens (log-log slope).
* ``pathway5`` (opt-in) — E2 on five seeds (seeds 0-2 read back from the finished arms).
* ``tiny`` (E3, opt-in) — the same analyses on a tiny char-level Llama trained here, plus the
  same architecture trained from scratch with the pathway from layer 4.

The model and text come from :mod:`icml26.zoo` (SmolLM2-135M-Instruct, Q4_1-dequantised;
the stdlib ``pydoc`` topics corpus). Forward results are cached under
``cache_root("accessibility")`` keyed by the model's state-dict SHA-256, the corpus SHA-256 and
the config; reruns skip the forward passes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from icml26.core.cache import atomic_file
from icml26.core.device import cpu_only, device_cache_key, job_device, uses_device
from icml26.core.claims import Measurement
from icml26.core.experiment import Experiment, Part, Result, register
from icml26.core.figures import subplots
from icml26.core.stats import best_seconds, format_mean_std, loglog_slope, paired_t_interval

from .data import plateau_layers
from .metrics import LayerStats, accessibility_metrics, capacity_metrics, readout_basis_from_weights

CACHE_VERSION = 1
PROFILE_COLUMNS = ["layer", "entropy_norm", "erank", "participation_ratio", "k90", "enrichment_8", "enrichment_32",
                   "readout_energy", "ce_lens", "kl_to_final", "top1_agree", "cos_update", "update_ratio"]


# -- shared plumbing ------------------------------------------------------------------------

def _cache_folder(config) -> Path:
    from icml26.core.cache import cache_root

    return Path(config.cache_dir) if config.cache_dir else cache_root("accessibility")


def _key(model, source: str, fields: dict) -> str:
    from icml26.zoo.corpus import corpus_info

    manifest = getattr(model, "zoo_manifest", None) or {}
    sd = manifest.get("state_dict_sha256")
    if sd is None:
        from icml26.zoo.hashing import state_dict_sha256

        sd = state_dict_sha256(model)
    payload = {"v": CACHE_VERSION, "model": sd, "corpus": corpus_info(source)["sha256"], **fields,
               **device_cache_key()}        # another device's numbers are kept apart
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:20]


@contextlib.contextmanager
def _file_lock(path: Path):
    """An exclusive lock file, so parallel jobs build a cache entry once (``filelock``)."""
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path):
        yield


@functools.lru_cache(maxsize=1)
def _load_model(name: str):
    """The subject model, loaded once per process (parts run in-process reuse it; never modified)."""
    if name == "smollm2":
        from icml26.zoo import load_smollm2

        model, tokenizer = load_smollm2()
        return model.to(job_device()), tokenizer
    raise ValueError(f"model must be 'smollm2', got {name!r}")


def _on_cpu(state: dict) -> dict:
    """A LayerStats state dict with its tensors on the CPU (a portable cache entry)."""
    return {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in state.items()}


# -- E1: the depth profile -------------------------------------------------------------------

@dataclass(frozen=True)
class ProfileConfig:
    """E1: token blocks of the stdlib topics corpus through SmolLM2, all layers."""

    model: str = "smollm2"
    source: str = "topics"
    split: str = "train"
    seq_len: int = 256
    n_blocks: int = 16
    budgets: tuple = (8, 16)          # rows; the bars use the last, stability compares the first
    skips: tuple = (4, 0)             # the bars use the first
    ks: tuple = (8, 32, 64)
    batch_size: int = 4
    cache_dir: str = ""


def _profile_pass_cached(config: ProfileConfig, model, tokenizer):
    from icml26.zoo.corpus import corpus_token_blocks

    from .probe import profile_pass

    fields = {k: getattr(config, k) for k in ("source", "split", "seq_len", "n_blocks", "budgets", "skips")}
    key = _key(model, config.source, {"part": "profile", **fields})
    path = _cache_folder(config) / f"profile-{key}.pt"
    with _file_lock(path.with_suffix(".lock")):
        if path.is_file():
            return torch.load(path, weights_only=False, map_location="cpu"), True
        ids = corpus_token_blocks(tokenizer, config.source, config.split, config.seq_len, config.n_blocks)
        variants = [(tn, sk) for sk in config.skips for tn in ("none", "rms")]
        run = profile_pass(model, ids, variants=variants, budgets=config.budgets, lens=True,
                           lens_skip=config.skips[0], batch_size=config.batch_size)
        payload = {"stats": {k: [_on_cpu(s.state_dict()) for s in v] for k, v in run.stats.items()},
                   "lens": run.lens, "align": run.align, "n_layers": run.n_layers, "d_model": run.d_model}
        with atomic_file(path) as tmp:
            torch.save(payload, tmp)
        return payload, False


@uses_device
def run_profile(config: ProfileConfig, seed: int) -> dict:
    """Forward the token blocks once (or read the cache) and tabulate every variant."""
    from .probe import model_parts, profile_table

    started = time.perf_counter()
    model, tokenizer = _load_model(config.model)
    payload, cached = _profile_pass_cached(config, model, tokenizer)
    parts = model_parts(model)
    Q, sv = readout_basis_from_weights(parts.lm_head.weight, parts.gamma)
    frames = {}
    for (token_norm, skip, rows), states in payload["stats"].items():
        stats = [LayerStats.from_state_dict(s) for s in states]
        with_lens = skip == config.skips[0]
        for centered in (True, False) if (token_norm, skip, rows) == ("none", config.skips[0], config.budgets[-1]) \
                else (True,):
            frame = profile_table(stats, Q, sv, centered=centered, ks=config.ks,
                                  lens=payload["lens"].get(rows) if with_lens else None,
                                  align=payload["align"].get(rows) if with_lens else None,
                                  random_bases=RANDOM_BASES if with_lens and centered else 0)
            name = f"{'raw' if token_norm == 'none' else 'rms'}|skip{skip}|{rows}x{config.seq_len}" \
                   + ("" if centered else "|second-moment")
            frames[name] = frame.to_dict(orient="list")
    return {"frames": frames, "n_layers": payload["n_layers"], "d_model": payload["d_model"],
            "cached": cached, "seconds": time.perf_counter() - started}


RANDOM_BASES = 20     # random readout frames averaged by the weak-access control (fixed before the run)
BAR_KEYS = ("min_entropy", "entropy_spread", "erank_ratio", "access_ratio", "lens_ratio")


def control_bands(n_layers: int) -> tuple:
    """The layers the negative controls of E1 use (a Resolution, fixed before the run):
    ``early`` = 1 .. min(P) − 1 (between the embeddings and the plateau: the capacity bars must
    fail there) and ``late`` = max(P) + 1 .. L − 1 (after the plateau: the lens bar must fail)."""
    P = plateau_layers(n_layers)
    return list(range(1, P[0])), list(range(P[-1] + 1, n_layers))


def e1_statistics(frame: pd.DataFrame, n_layers: int) -> dict:
    """The numbers the E1 bars test, from one profile table, and their negative controls.

    ``min_entropy`` and ``entropy_spread`` of Ĥ over the plateau ``P``; ``erank_ratio`` =
    median_P erank / erank_L; ``access_ratio`` = median_P Â_8 / Â_8(L); ``lens_ratio`` =
    median_P CE_lens / CE_lens(L). Controls: the same statistics over the ``early`` band
    (``*_early``, :func:`control_bands`), ``access_ratio_random_basis`` (Â_8 on random
    orthonormal frames instead of W_U's) and ``lens_ratio_late`` (the ``late`` band).
    """
    P = frame[frame["layer"].isin(plateau_layers(n_layers))]
    early_layers, late_layers = control_bands(n_layers)
    E = frame[frame["layer"].isin(early_layers)]
    last = frame[frame["layer"] == n_layers].iloc[0]
    out = {"min_entropy": float(P["entropy_norm"].min()),
           "entropy_spread": float(P["entropy_norm"].max() - P["entropy_norm"].min()),
           "erank_ratio": float(P["erank"].median() / last["erank"]),
           "access_ratio": float(P["enrichment_8"].median() / last["enrichment_8"])}
    if "ce_lens" in frame:
        out["lens_ratio"] = float(P["ce_lens"].median() / last["ce_lens"])
    if len(E):
        out.update({"min_entropy_early": float(E["entropy_norm"].min()),
                    "entropy_spread_early": float(E["entropy_norm"].max() - E["entropy_norm"].min()),
                    "erank_ratio_early": float(E["erank"].median() / last["erank"])})
    if "enrichment_8_random" in frame:
        out["access_ratio_random_basis"] = float(P["enrichment_8_random"].median() / last["enrichment_8_random"])
    late = frame[frame["layer"].isin(late_layers)]
    if "ce_lens" in frame and len(late):
        out["lens_ratio_late"] = float(late["ce_lens"].median() / last["ce_lens"])
    return out


def _depth_figure(frames: dict, n_layers: int, names: list):
    fig, axes = subplots(2, 2, figsize=(10, 7), sharex=True)
    P = plateau_layers(n_layers)
    panels = [("entropy_norm", "normalised spectral entropy Ĥ", False),
              ("erank", "effective rank (log scale)", True),
              ("enrichment_8", "accessibility Â_8 (1 = chance)", True),
              ("ce_lens", "logit-lens CE (nats, log scale)", True)]
    for ax, (col, label, log) in zip(axes.ravel(), panels):
        for name in names:
            frame = frames[name]
            if col in frame:
                ax.plot(frame["layer"], frame[col], "o-", ms=3, label=name.split("|")[0])
        ax.axvspan(P[0], P[-1], color="0.9", zorder=0)
        if col == "enrichment_8":
            ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_ylabel(label)
        if log:
            ax.set_yscale("log")
        ax.set_xlabel("layer ℓ (0 = embeddings, L = final pre-norm state)")
    axes[0, 0].legend(title="tokens")
    fig.suptitle("SmolLM2-135M depth profile: capacity (top) vs accessibility (bottom); grey = plateau P")
    fig.tight_layout()
    return fig


def summarize_profile(jobs: list, config: ProfileConfig) -> Result:
    job = jobs[0].metrics
    L = job["n_layers"]
    frames = {k: pd.DataFrame(v) for k, v in job["frames"].items()}
    s0 = config.skips[0]
    big, small = config.budgets[-1], config.budgets[0]
    main = f"raw|skip{s0}|{big}x{config.seq_len}"
    ref = f"raw|skip{s0}|{small}x{config.seq_len}"
    stats = {name: e1_statistics(frame, L) for name, frame in frames.items()}
    measurements = dict(stats[main])
    if ref in stats and ref != main:
        m = stats[main]
        changes = {k: abs(stats[ref][k] - m[k]) / abs(m[k]) for k in BAR_KEYS if k in m and m[k] != 0}
        worst = max(changes, key=changes.get)
        measurements["stability"] = Measurement(changes[worst], note=f"largest for {worst} "
                                                f"({small}×{config.seq_len} vs {big}×{config.seq_len})")
    summary = pd.DataFrame([{"variant": k, **{a: round(b, 4) for a, b in v.items()}} for k, v in stats.items()])
    tables = {"E1 bar statistics per variant": summary}
    for name in (main, f"rms|skip{s0}|{big}x{config.seq_len}"):
        if name in frames:
            cols = [c for c in PROFILE_COLUMNS if c in frames[name]]
            tables[f"E1 depth profile ({name})"] = frames[name][cols].round(3)
    fig_names = [n for n in (main, f"rms|skip{s0}|{big}x{config.seq_len}") if n in frames]
    figures = {"E1 depth profile": _depth_figure({n: frames[n] for n in fig_names}, L, fig_names)}
    notes = [f"SmolLM2-135M (Q4_1-dequantised), L = {L}, d = {job['d_model']}, plateau P = layers "
             f"{plateau_layers(L)[0]}..{plateau_layers(L)[-1]}; bars on {main} (covariance, pre-norm h^L).",
             f"negative controls: the same statistics over layers {control_bands(L)[0][0]}..{control_bands(L)[0][-1]} "
             f"(capacity bars), Â_8 on {RANDOM_BASES} random orthonormal frames instead of W_U's (access), "
             f"CE_lens over layers {control_bands(L)[1][0]}..{control_bands(L)[1][-1]} (lens)",
             f"forward pass {'read from the cache' if job['cached'] else 'computed'}; job {job['seconds']:.0f} s"]
    return Result(tables=tables, figures=figures, measurements=measurements, notes=notes)


# -- E2: the diagnostic pathway ---------------------------------------------------------------

@dataclass(frozen=True)
class PathwayConfig:
    """E2: pathway arms on cached SmolLM2 states (train / dev / test token splits).

    The protocol (a Resolution, not from the paper), fixed before the run:

    * ``shared_bias``: the bias-only arm is trained first (``bias_lr``, up to ``bias_steps``,
      early stopping on dev with ``bias_patience``), then that ``b`` is frozen and shared by
      every arm, each starting from it; ``False`` gives each arm its own bias under its own
      early stopping;
    * arms at the spec's calibration setting: rank 32, lr 2e-3, dev CE every 10 steps; the
      memorisation guard (harness c) at exactly that setting without early stopping;
    * ``patience`` 3 evaluations without improvement (5 until #50's cost work): on the 25
      early-stopped arms recorded at patience 5 (5 seeds) every dev curve rises after its best
      checkpoint, so patience 1-5 all keep the same checkpoints
      (``benchmarks/accessibility_patience.py``, rows in ``ledger/accessibility/patience_replay.jsonl``);
      3 keeps two evaluations of margin and runs a third fewer steps. ``--set patience=5`` restores
      the old rule;
    * ``train_pool_blocks``: the cache holds this many train blocks and each seed trains on its
      own random ``train_blocks`` of them (seeds resample the training tokens as well as ``A``
      and the batch order); 0: every seed the first ``train_blocks``;
    * the test tokens: ``test_blocks`` blocks of the test split (21 = all of it) plus
      ``heldout_blocks`` train-split blocks after the pool, which no seed trains on (power:
      about 11k tokens give a 95 % interval of about ±0.005 nats on ``G``, against an
      effect of about 0.008);
    * ``incremental``: the arms ``[h^L; h^m]`` (``inc<m>``) and ``[h^L; shuffled h^m]``
      (``inc<m>_shuffled``) at the same rank as the ``h^L`` arm, so ``G([h^L; h^m]) − G(h^L)``
      is what layer ``m`` adds beyond adapter capacity, with its shuffled twin as the
      parameter-matched negative control;
    * every ``G`` with a paired BCa interval over test tokens (per-token gains averaged over
      seeds; ``n_boot`` resamples), and a paired t-interval over seeds beside it.

    The previous protocol: ``--set test_blocks=8 heldout_blocks=0 layers=[8,15,22,30]
    incremental=false``.
    """

    model: str = "smollm2"
    source: str = "topics"
    seq_len: int = 256
    train_blocks: int = 32
    train_pool_blocks: int = 48
    dev_blocks: int = 8
    test_blocks: int = 21
    heldout_blocks: int = 24
    skip: int = 4
    layers: tuple = (15, 30)
    shuffled_layer: int = 15
    claim_layer: int = 15
    incremental: bool = True
    rank: int = 32
    steps: int = 150
    lr: float = 2e-3
    weight_decay: float = 0.1
    batch_size: int = 1024
    eval_every: int = 10
    patience: int = 3
    shared_bias: bool = True
    bias_lr: float = 5e-3
    bias_steps: int = 600
    bias_patience: int = 5
    n_boot: int = 2000
    level: float = 0.95
    no_early_stop_seed: int = 0       # the memorisation check (harness c) runs on this seed only
    batch_rows: int = 4
    cache_dir: str = ""


def pathway_tasks(config: PathwayConfig) -> list:
    m, shuf = config.claim_layer, config.shuffled_layer
    arms = [{"arm": "bias_only"}] + [{"arm": f"m{layer}"} for layer in config.layers]
    arms.append({"arm": f"shuffled{shuf}"})
    if config.incremental:
        arms += [{"arm": f"inc{m}"}, {"arm": f"inc{m}_shuffled"}]
    return arms + [{"arm": f"shuffled{shuf}_no_early_stop"}]


def pathway_cache(config: PathwayConfig):
    """Build (once, under a lock) or read the E2 pathway cache.

    Returns ``(cache, folder, built)``."""
    from icml26.zoo.corpus import corpus_token_blocks

    from .pathway import build_pathway_cache, load_pathway_cache

    model, tokenizer = _load_model(config.model)
    fields = {k: getattr(config, k) for k in ("source", "seq_len", "train_blocks", "dev_blocks", "test_blocks",
                                              "skip", "layers", "batch_rows")}
    fields["train_blocks"] = _pool_blocks(config)
    if config.heldout_blocks:
        fields["heldout_blocks"] = config.heldout_blocks
    layers = sorted(set(config.layers) | {config.shuffled_layer} | (
        {config.claim_layer, _last_layer(config)} if config.incremental else set()))
    fields["layers"] = layers
    key = _key(model, config.source, {"part": "pathway", **fields})
    path = _cache_folder(config) / f"pathway-{key}"
    with _file_lock(path.parent / f"pathway-{key}.lock"):
        if (path / "meta.json").is_file():
            return load_pathway_cache(path), path, False
        pool = _pool_blocks(config)
        ids = {split: corpus_token_blocks(tokenizer, config.source, split, config.seq_len, n)
               for split, n in (("train", pool + config.heldout_blocks), ("dev", config.dev_blocks),
                                ("test", config.test_blocks))}
        if ids["test"].shape[0] < config.test_blocks or ids["train"].shape[0] < pool + config.heldout_blocks:
            raise ValueError(f"the corpus has {ids['test'].shape[0]} test and {ids['train'].shape[0]} train "
                             f"blocks of {config.seq_len} tokens; the config asks for {config.test_blocks} and "
                             f"{pool} + {config.heldout_blocks}")
        # the held-out train-split blocks (after the pool: never trained on) join the test tokens
        ids["test"] = torch.cat([ids["test"], ids["train"][pool:]])
        ids["train"] = ids["train"][:pool]
        cache = build_pathway_cache(model, ids["train"], ids["dev"], ids["test"], layers, skip=config.skip,
                                    batch_size=config.batch_rows, path=path)
        return cache, path, True


def _pool_blocks(config: PathwayConfig) -> int:
    return max(config.train_blocks, config.train_pool_blocks)


def _last_layer(config: PathwayConfig) -> int:
    """``L``: the deepest configured source layer (the adapter-capacity arm ``m = L``)."""
    return max(config.layers)


def train_token_rows(config: PathwayConfig, n_tokens: int, seed: int):
    """The train-split rows of this seed: ``train_blocks`` blocks drawn from the pool (None: all)."""
    pool = _pool_blocks(config)
    if config.train_pool_blocks <= 0 or pool == config.train_blocks:
        return None
    per_block, rest = divmod(n_tokens, pool)
    if rest:
        raise ValueError(f"the train split has {n_tokens} tokens, not a multiple of its {pool} blocks")
    blocks = np.sort(np.random.default_rng([seed, 38]).choice(pool, size=config.train_blocks, replace=False))
    return (blocks[:, None] * per_block + np.arange(per_block)[None, :]).ravel()


def _train_fields(config: PathwayConfig) -> dict:
    return {k: getattr(config, k) for k in ("rank", "steps", "lr", "weight_decay", "batch_size", "eval_every",
                                            "patience", "shuffled_layer", "shared_bias", "bias_lr", "bias_steps",
                                            "bias_patience", "train_blocks", "train_pool_blocks")}


def _shared_bias(config: PathwayConfig, seed: int, cache, folder: Path, rows):
    """This seed's shared bias (trained once, under a lock, and stored): ``(b, result dict)``."""
    from .pathway import fit_shared_bias

    fields = {k: getattr(config, k) for k in ("weight_decay", "batch_size", "eval_every", "bias_lr", "bias_steps",
                                              "bias_patience", "train_blocks", "train_pool_blocks")}
    tag = hashlib.sha256(json.dumps({"seed": seed, **fields, **device_cache_key()},
                                    sort_keys=True).encode()).hexdigest()[:12]
    target = folder / "bias" / f"bias-seed{seed}-{tag}.pt"
    with _file_lock(folder / "bias" / f"bias-seed{seed}-{tag}.lock"):
        if target.is_file():
            stored = torch.load(target, weights_only=False, map_location="cpu")
            return stored["bias"], stored["result"]
        result = fit_shared_bias(cache, steps=config.bias_steps, lr=config.bias_lr,
                                 weight_decay=config.weight_decay, batch_size=config.batch_size,
                                 eval_every=config.eval_every, patience=config.bias_patience,
                                 train_tokens=rows, seed=seed, device=job_device())
        bias = result.pathway.bias.detach().cpu().clone()
        out = result.to_dict()
        with atomic_file(target) as tmp:
            torch.save({"bias": bias, "result": out}, tmp)
        return bias, out


@uses_device
def run_pathway(config: PathwayConfig, seed: int, task: dict) -> dict:
    from .pathway import fit_pathway

    arm = task["arm"]
    no_es = arm.endswith("_no_early_stop")
    if no_es and seed != config.no_early_stop_seed:
        return {"arm": arm, "skipped": True}
    started = time.perf_counter()
    cache, folder, built = pathway_cache(config)
    tag = hashlib.sha256(json.dumps({"arm": arm, "seed": seed, **_train_fields(config),
                                     **device_cache_key()}, sort_keys=True).encode()).hexdigest()[:12]
    done = folder / "arms" / f"{arm}-seed{seed}-{tag}.json"
    if done.is_file():  # resumable: a finished arm is not retrained
        out = json.loads(done.read_text())
        out["resumed"] = True
        return out
    rows = train_token_rows(config, cache.train.n_tokens, seed)
    bias, bias_result = (_shared_bias(config, seed, cache, folder, rows) if config.shared_bias else (None, None))
    control, layer = None, None
    if arm == "bias_only":
        control = "bias_only"
    elif arm.startswith("shuffled"):
        control, layer = "shuffled", config.shuffled_layer
    elif arm.startswith("inc"):   # [h^L; h^m] at the rank of the h^L arm; _shuffled permutes h^m
        control = "shuffled" if arm.endswith("_shuffled") else None
        layer = (_last_layer(config), config.claim_layer)
    else:
        layer = int(arm[1:])
    result = fit_pathway(cache, layer, rank=config.rank, steps=config.steps, lr=config.lr,
                         weight_decay=config.weight_decay, batch_size=config.batch_size, control=control,
                         early_stop=not no_es, eval_every=config.eval_every, patience=config.patience,
                         bias=bias, train_tokens=rows, seed=seed, device=job_device())
    out = result.to_dict(token_ce=not no_es)
    if arm == "bias_only" and bias_result is not None:   # the shared bias's own training
        out.update({"bias_history": bias_result["history"], "bias_best_step": bias_result["best_step"],
                    "bias_steps_run": bias_result["steps_run"]})
    out.update({"arm": arm, "cache_was_built": built, "job_seconds": time.perf_counter() - started,
                "n_train": cache.train.n_tokens if rows is None else int(rows.size), "n_dev": cache.dev.n_tokens,
                "n_test": cache.test.n_tokens, "resumed": False})
    with atomic_file(done) as tmp:
        tmp.write_text(json.dumps(out, default=float))
    return out


def _token_gains(es: pd.DataFrame, arm: str, reference: str = "bias_only") -> np.ndarray | None:
    """Per test token and seed, ``CE_reference − CE_arm``: an array (seeds, tokens), or None.

    Seeds share the test tokens, so a token's gains over seeds are paired."""
    per_seed = []
    for seed in sorted(es["seed"].unique()):
        ref = es[(es["arm"] == reference) & (es["seed"] == seed)]
        row = es[(es["arm"] == arm) & (es["seed"] == seed)]
        if not len(ref) or not len(row) or not isinstance(row["token_ce"].iloc[0], list):
            continue
        per_seed.append(np.asarray(ref["token_ce"].iloc[0]) - np.asarray(row["token_ce"].iloc[0]))
    return np.asarray(per_seed) if per_seed else None


def gain_measurement(per_seed: np.ndarray | None, config: PathwayConfig, what: str) -> Measurement:
    """A gain over tokens and training seeds: the mean; a paired BCa interval over test tokens
    of the per-token gain averaged over seeds (:func:`~icml26.accessibility.pathway.bootstrap_gain`);
    and, with two or more seeds, the paired t-interval over seeds.

    The verdict reads the hull of the two intervals: a claim must clear its bar both over the
    test tokens (the finite test set) and over the training seeds (the pathways are trained, and
    their seed-to-seed spread is as large as the effect), so PASS needs both and one straddling
    interval makes it INCONCLUSIVE. Both intervals are in the note."""
    from .pathway import bootstrap_gain

    if per_seed is None:
        return Measurement(None, incomplete=f"{what}: an arm is missing")
    tokens = per_seed.mean(axis=0)
    iv = bootstrap_gain(tokens, np.zeros_like(tokens), n_boot=config.n_boot, level=config.level, seed=0)
    seeds = per_seed.mean(axis=1)
    note = (f"{what}; {iv['n_tokens']} test tokens × {len(seeds)} seeds; {config.level:.0%} BCa over tokens "
            f"half-width {(iv['high'] - iv['low']) / 2:.4f}; per seed {[round(float(v), 4) for v in seeds]}")
    low, high = iv["low"], iv["high"]
    if len(seeds) > 1:
        lo, hi = paired_t_interval(seeds, config.level)
        note += (f", t-interval over seeds [{lo:+.4f}, {hi:+.4f}]; the verdict reads the hull "
                 "of the token and seed intervals")
        low, high = min(low, lo), max(high, hi)
    return Measurement(iv["gain"], interval=(low, high), note=note)


def _combine(es: pd.DataFrame, terms: dict) -> np.ndarray | None:
    """``Σ_arm weight · (CE_bias-only − CE_arm)`` per seed and token (None when an arm is missing)."""
    total = None
    for arm, weight in terms.items():
        g = _token_gains(es, arm)
        if g is None:
            return None
        total = weight * g if total is None else total + weight * g
    return total


def pathway_measurements(es: pd.DataFrame, frame: pd.DataFrame, config: PathwayConfig) -> dict:
    """The E2 measurements: harness controls and the claim checks with their controls."""
    shuf, mid, last = f"shuffled{config.shuffled_layer}", f"m{config.claim_layer}", f"m{_last_layer(config)}"
    inc = f"inc{config.claim_layer}"
    out = {"min_test_dce": float(es["delta_ce"].min()), "min_dev_dce": float(es["dev_delta_ce"].min())}
    g_shuf = es[es["arm"] == shuf]["gain"]
    if len(g_shuf):
        out["shuffled_gain_abs"] = Measurement(abs(float(g_shuf.mean())),
                                               note=f"per seed {[round(float(v), 4) for v in g_shuf]}")
    noes = frame[frame["arm"].str.endswith("_no_early_stop")]
    if len(noes):
        out["memorisation_drop"] = float((noes["train_ce_base"] - noes["train_ce"]).iloc[0])
    if "token_ce" not in es.columns:
        return out
    specs = {
        "gain_mid": ({mid: 1.0}, f"G({mid})"),
        "gain_last": ({last: 1.0}, f"G({last}): pure adapter capacity"),
        "mid_vs_shuffled": ({mid: 1.0, shuf: -1.0}, f"G({mid}) − G({shuf})"),
        "last_vs_shuffled": ({last: 1.0, shuf: -1.0}, f"G({last}) − G({shuf})"),
        "mid_vs_half_last": ({mid: 1.0, last: -0.5}, f"G({mid}) − 0.5·G({last})"),
        "shuffled_vs_half_last": ({shuf: 1.0, last: -0.5}, f"G({shuf}) − 0.5·G({last})"),
    }
    if config.incremental:
        specs["incremental"] = ({inc: 1.0, last: -1.0}, f"G([h^L; h^{config.claim_layer}]) − G(h^L), same rank")
        specs["incremental_shuffled"] = ({f"{inc}_shuffled": 1.0, last: -1.0},
                                         f"G([h^L; shuffled h^{config.claim_layer}]) − G(h^L)")
    for key, (terms, what) in specs.items():
        out[key] = gain_measurement(_combine(es, terms), config, what)
    return out


def _fmt_measurement(m) -> str:
    if not isinstance(m, Measurement) or m.value is None:
        return "n/a"
    return f"{m.value:+.4f}" + ("" if m.interval is None else f" [{m.interval[0]:+.4f}, {m.interval[1]:+.4f}]")


def summarize_pathway(jobs: list, config: PathwayConfig) -> Result:
    recs = [dict(j.metrics, seed=j.seed) for j in jobs if not j.metrics.get("skipped")]
    frame = pd.DataFrame(recs)
    es = frame[~frame["arm"].str.endswith("_no_early_stop")].copy()
    bias = es[es["arm"] == "bias_only"].set_index("seed")["path_ce"]
    es["gain"] = [bias.get(s, np.nan) - ce for s, ce in zip(es["seed"], es["path_ce"])]
    es["train_drop"] = es["train_ce_base"] - es["train_ce"]
    arms = list(dict.fromkeys(es["arm"]))
    has_tokens = "token_ce" in es.columns
    measurements = pathway_measurements(es, frame, config)
    intervals = {arm: gain_measurement(_token_gains(es, arm), config, f"G({arm})") if has_tokens else None
                 for arm in arms if arm != "bias_only"}
    rows = []
    for arm in arms:
        g = es[es["arm"] == arm]
        rows.append({"arm": arm, "test ΔCE": format_mean_std(g["delta_ce"], 4),
                     "dev ΔCE": format_mean_std(g["dev_delta_ce"], 4), "G vs bias-only": format_mean_std(g["gain"], 4),
                     f"G, {config.level:.0%} BCa (tokens)": _fmt_measurement(intervals.get(arm)),
                     "KL(path‖base)": format_mean_std(g["kl"], 4), "flip rate": format_mean_std(g["flip_rate"], 3),
                     "train CE drop": format_mean_std(g["train_drop"], 4), "best step": format_mean_std(g["best_step"], 0),
                     "steps run": format_mean_std(g["steps_run"], 0),
                     "Â_8 readout in (base→path)": f"{g['enrichment_base'].mean():.2f}→{g['enrichment_path'].mean():.2f}",
                     "seeds": len(g)})
    table = pd.DataFrame(rows)
    per_seed = es.pivot_table(index="seed", columns="arm", values="gain").reset_index()
    per_seed.columns = ["seed"] + [f"G({c})" for c in per_seed.columns[1:]]
    checks = pd.DataFrame([{"measurement": k, "value [interval]": _fmt_measurement(v),
                            "what": v.note.split(";")[0]} for k, v in measurements.items()
                           if isinstance(v, Measurement) and v.interval is not None])
    shuf = f"shuffled{config.shuffled_layer}"
    protocol = ("shared frozen bias" if config.shared_bias else "each arm its own bias")
    n0 = recs[0]
    notes = []
    bias_note = ""
    if config.shared_bias and "bias_best_step" in es.columns:
        b = es[es["arm"] == "bias_only"]
        bias_note = (f"; shared bias: lr {config.bias_lr}, best dev step {format_mean_std(b['bias_best_step'], 0)} "
                     f"of ≤ {config.bias_steps} (patience {config.bias_patience}), train CE drop "
                     f"{format_mean_std(b['train_drop'], 4)}")
    notes.append(f"tokens per seed: train {n0['n_train']} (a seeded draw of {config.train_blocks} of "
                 f"{_pool_blocks(config)} blocks), dev {n0['n_dev']}, test {n0['n_test']} ({config.test_blocks} "
                 f"test-split blocks + {config.heldout_blocks} never-trained train-split blocks); r = {config.rank}, "
                 f"AdamW lr {config.lr} wd {config.weight_decay}, ≤ {config.steps} steps of {config.batch_size}, "
                 f"dev every {config.eval_every} steps, patience {config.patience}; base test CE "
                 f"{es['base_ce'].iloc[0]:.3f}; protocol: {protocol}{bias_note}")
    fig, (ax1, ax2) = subplots(1, 2, figsize=(12, 4.2))
    depth_arms = [a for a in arms if a.startswith("m") or a.startswith("inc")]
    labels = [a if not a.startswith("inc") else f"[h^L; h^{config.claim_layer}]" + a[len(f"inc{config.claim_layer}"):]
              for a in depth_arms]
    ys = [es[es["arm"] == a]["gain"].mean() for a in depth_arms]
    err = None
    if all(isinstance(intervals.get(a), Measurement) and intervals[a].interval is not None for a in depth_arms):
        ys = [intervals[a].value for a in depth_arms]
        err = [[intervals[a].value - intervals[a].interval[0] for a in depth_arms],
               [intervals[a].interval[1] - intervals[a].value for a in depth_arms]]
    ax1.errorbar(range(len(depth_arms)), ys, yerr=err, fmt="o", color="C0", capsize=3, label="G(arm)")
    ax1.set_xticks(range(len(depth_arms)), labels, rotation=20, fontsize=8)
    ax1.axhline(0, color="0.4", lw=1, label="bias-only (G = 0 by definition)")
    iv = intervals.get(shuf)
    if isinstance(iv, Measurement) and iv.interval is not None:
        ax1.axhspan(*iv.interval, color="C3", alpha=0.2)
        ax1.axhline(iv.value, color="C3", ls="--", label=f"{shuf} ({config.level:.0%} band)")
    ax1.set_ylabel("G = CE_bias-only − CE_path (nats, test)")
    ax1.set_title(f"token-specific gain ({config.level:.0%} BCa over test tokens, seeds averaged)")
    ax1.legend(fontsize=7)
    seed0 = es["seed"].min()
    for arm in arms:
        hist = es[(es["arm"] == arm) & (es["seed"] == seed0)]["history"]
        if len(hist) and arm != "bias_only":
            h = pd.DataFrame(hist.iloc[0])
            ax2.plot(h["step"], h["dev_ce"], "o-", ms=3, label=arm)
    if "bias_history" in es.columns:
        bh = es[(es["arm"] == "bias_only") & (es["seed"] == seed0)]["bias_history"]
        if len(bh) and isinstance(bh.iloc[0], list):
            h = pd.DataFrame(bh.iloc[0])
            ax2.plot(h["step"], h["dev_ce"], "k.-", ms=3, label="shared bias (trained first)")
    ax2.set_xlabel("training step")
    ax2.set_ylabel("dev CE (nats)")
    ax2.set_title(f"dev CE during training (seed {seed0})")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    tables = {"E2 pathway arms (test split)": table, "E2 G per seed": per_seed}
    if len(checks):
        tables["E2 claim measurements and controls"] = checks
    return Result(tables=tables, figures={"E2 pathway gains": fig}, measurements=measurements, notes=notes)


# -- scaling: metric cost vs tokens -----------------------------------------------------------

@dataclass(frozen=True)
class ScalingConfig:
    """Seconds of the per-layer metrics (moments + spectra + readout metrics) at fixed d."""

    d_model: int = 576
    vocab: int = 4096
    sizes: tuple = (1024, 2048, 4096, 8192)
    batch: int = 1024
    repeats: int = 3


def metric_seconds(config: ScalingConfig, seed: int = 0) -> dict:
    """Best-of seconds to accumulate LayerStats over N tokens and compute every metric."""
    g = torch.Generator().manual_seed(seed)
    d = config.d_model
    W = torch.randn(config.vocab, d, generator=g)
    Q, sv = readout_basis_from_weights(W)
    ks = tuple(k for k in (8, 32, 64) if k <= d)
    out = {}
    for n in config.sizes:
        h = torch.randn(n, d, generator=g)

        def once():
            s = LayerStats(d)
            for start in range(0, n, config.batch):
                s.update(h[start:start + config.batch])
            cov = s.cov()
            capacity_metrics(cov)
            accessibility_metrics(cov, Q, sv, ks)

        out[n] = best_seconds(once, repeats=config.repeats, clock="cpu")
    return out


@cpu_only("a CPU-seconds measurement")
def run_scaling(config: ScalingConfig, seed: int) -> dict:
    seconds = metric_seconds(config, seed)
    return {"sizes": list(seconds), "seconds": list(seconds.values())}


def summarize_scaling(jobs: list, config: ScalingConfig) -> Result:
    m = jobs[0].metrics
    slope = loglog_slope(m["sizes"], m["seconds"])
    fig, ax = subplots(figsize=(4.5, 3.2))
    ax.loglog(m["sizes"], m["seconds"], "o-", label="measured")
    ax.loglog(m["sizes"], np.asarray(m["sizes"]) * m["seconds"][-1] / m["sizes"][-1], "--", label="∝ N")
    ax.set_xlabel("tokens N")
    ax.set_ylabel("seconds (all metrics, one layer)")
    ax.legend()
    fig.tight_layout()
    table = pd.DataFrame({"tokens": m["sizes"], "seconds": np.round(m["seconds"], 5)})
    return Result(tables={"metric cost vs tokens": table}, figures={"metric cost vs tokens": fig},
                  measurements={"slope": slope}, notes=[f"d = {config.d_model}; slope {slope:.3f}"])


# -- E3 (opt-in): a tiny controlled LM ----------------------------------------------------------

@dataclass(frozen=True)
class TinyConfig:
    """E3: a char-level Llama (8 layers, d = 128) trained here, profiled, with pathway arms,
    and the same architecture trained from scratch with a pathway from ``pathway_layer``."""

    layers: int = 8
    hidden: int = 128
    heads: int = 4
    seq_len: int = 128
    batch: int = 32
    train_steps: int = 1500
    lr: float = 3e-3
    pathway_layer: int = 4
    rank: int = 8
    profile_blocks: int = 32
    eval_blocks: int = 32
    pathway_steps: int = 150
    pathway_lr: float = 5e-3
    cache_dir: str = ""


class _PathwayLM(torch.nn.Module):
    """A tiny Llama whose readout input gets ``B A n(h^m)`` added after the final norm."""

    def __init__(self, model, layer: int, rank: int, seed: int):
        super().__init__()
        from .pathway import DiagnosticPathway
        from .probe import model_parts

        self.model, self.layer = model, layer
        self.parts = model_parts(model)
        self.pathway = DiagnosticPathway(self.parts.d_model, rank=rank, learn_bias=False, seed=seed)
        self.pathway.B.data.normal_(0, 1e-3)

    def forward(self, ids):
        from .probe import _capture

        store: dict = {}
        with _capture(self.parts, store):
            self.model(input_ids=ids, use_cache=False)
        readout_in = self.pathway(self.parts.norm(store[self.parts.n_layers]), store[self.layer])
        return self.parts.lm_head(readout_in)


def _train_char_lm(config: TinyConfig, seed: int, with_pathway: bool):
    from icml26.zoo import tiny_llama
    from icml26.zoo.corpus import CharTokenizer, corpus_token_blocks

    tok = CharTokenizer()
    train = corpus_token_blocks(tok, "topics", "train", config.seq_len + 1)
    val = corpus_token_blocks(tok, "topics", "test", config.seq_len + 1)[:config.eval_blocks]
    device = job_device()
    train, val = train.to(device), val.to(device)
    model = tiny_llama(vocab=tok.vocab_size, hidden=config.hidden, layers=config.layers, heads=config.heads,
                       seed=seed, intermediate=4 * config.hidden).train().to(device)
    net = _PathwayLM(model, config.pathway_layer, config.rank, seed).to(device) if with_pathway else None
    params = list((net if net is not None else model).parameters())
    opt = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.01)
    g = torch.Generator().manual_seed(seed)

    def logits(ids):
        return net(ids) if net is not None else model(input_ids=ids, use_cache=False).logits

    for step in range(config.train_steps):
        lr = config.lr * min(1.0, (step + 1) / 100) * 0.5 * (1 + math.cos(math.pi * step / config.train_steps))
        for group in opt.param_groups:
            group["lr"] = lr
        rows = train[torch.randint(train.shape[0], (config.batch,), generator=g)]
        z = logits(rows[:, :-1])
        loss = torch.nn.functional.cross_entropy(z.reshape(-1, z.shape[-1]), rows[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        z = logits(val[:, :-1])
        val_ce = float(torch.nn.functional.cross_entropy(z.reshape(-1, z.shape[-1]), val[:, 1:].reshape(-1)))
    return model, tok, val_ce


@uses_device
def run_tiny(config: TinyConfig, seed: int, task: dict) -> dict:
    from icml26.zoo.corpus import corpus_token_blocks

    from .pathway import build_pathway_cache, fit_pathway
    from .probe import profile

    started = time.perf_counter()
    if task["arm"] == "scratch_pathway":
        _, _, val_ce = _train_char_lm(config, seed, with_pathway=True)
        return {"arm": "scratch_pathway", "val_ce": val_ce, "seconds": time.perf_counter() - started}
    model, tok, val_ce = _train_char_lm(config, seed, with_pathway=False)
    ids = corpus_token_blocks(tok, "topics", "train", config.seq_len, config.profile_blocks)
    frame = profile(model, ids, ks=(8, 32), batch_size=8, random_bases=RANDOM_BASES)
    L = config.layers
    splits = [corpus_token_blocks(tok, "topics", s, config.seq_len, n)
              for s, n in (("train", 64), ("dev", 16), ("test", 16))]
    cache = build_pathway_cache(model, *splits, [0, config.pathway_layer, L], batch_size=16)
    arms = {}
    for name, layer, control in (("bias_only", None, "bias_only"), (f"m{config.pathway_layer}", config.pathway_layer, None),
                                 (f"m{L}", L, None), (f"shuffled{config.pathway_layer}", config.pathway_layer, "shuffled")):
        r = fit_pathway(cache, layer, rank=config.rank, steps=config.pathway_steps, lr=config.pathway_lr,
                        batch_size=512, control=control, seed=seed, device=job_device())
        arms[name] = r
    for r in arms.values():
        r.gain_vs(arms["bias_only"])
    return {"arm": "trained", "val_ce": val_ce, "profile": frame.to_dict(orient="list"), "n_layers": L,
            "pathway": {k: {"delta_ce": r.delta_ce, "gain": r.gain_vs_bias} for k, r in arms.items()},
            "seconds": time.perf_counter() - started}


def tiny_tasks(config: TinyConfig) -> list:
    return [{"arm": "trained"}, {"arm": "scratch_pathway"}]


def summarize_tiny(jobs: list, config: TinyConfig) -> Result:
    trained = [j.metrics for j in jobs if j.metrics["arm"] == "trained"]
    scratch = [j.metrics for j in jobs if j.metrics["arm"] == "scratch_pathway"]
    tables, figures, measurements, notes = {}, {}, {}, []
    if trained:
        t = trained[0]
        frame = pd.DataFrame(t["profile"])
        L = t["n_layers"]
        stats = e1_statistics(frame, L)
        cols = [c for c in PROFILE_COLUMNS if c in frame and c != "enrichment_32"]
        tables["E3 tiny char LM depth profile"] = frame[cols].round(3)
        figures["E3 tiny char LM depth profile"] = _depth_figure({"raw": frame}, L, ["raw"])
        measurements.update({k: stats[k] for k in ("erank_ratio", "erank_ratio_early", "access_ratio",
                                                   "access_ratio_random_basis") if k in stats})
        gains = pd.DataFrame([{"arm": k, "seed": j.seed, **v} for j in jobs if j.metrics["arm"] == "trained"
                              for k, v in j.metrics["pathway"].items()])
        tables["E3 pathway arms"] = gains.groupby("arm", sort=False)[["delta_ce", "gain"]].mean().round(4).reset_index()
    if trained and scratch:
        base = float(np.mean([t["val_ce"] for t in trained]))
        path = float(np.mean([s["val_ce"] for s in scratch]))
        tables["E3 from-scratch counterfactual"] = pd.DataFrame(
            [{"model": "plain", "val CE": round(base, 4)},
             {"model": f"with pathway from layer {config.pathway_layer}", "val CE": round(path, 4)}])
        notes.append(f"val CE plain {base:.4f} vs with pathway {path:.4f} (difference {base - path:+.4f}); "
                     "the spec sets no bar for this counterfactual")
    return Result(tables=tables, figures=figures, measurements=measurements, notes=notes)


_PATHWAY_QUICK = PathwayConfig(seq_len=32, train_blocks=4, train_pool_blocks=6, dev_blocks=2, test_blocks=2,
                               heldout_blocks=2, steps=6, batch_size=64, eval_every=3, patience=2, bias_steps=6,
                               batch_rows=4, n_boot=200)

EXPERIMENT = register(Experiment(
    slug="accessibility",   # title, claims and part descriptions: claims.toml
    parts=[
        Part(name="profile", run=run_profile, summarize=summarize_profile,
             quick=ProfileConfig(seq_len=32, n_blocks=2, budgets=(1, 2), skips=(4,), batch_size=2),
             full=ProfileConfig(), seeds=(0,), quick_seeds=(0,), threads=1),
        Part(name="pathway", run=run_pathway, summarize=summarize_pathway, tasks=pathway_tasks,
             quick=_PATHWAY_QUICK, full=PathwayConfig(), seeds=(0, 1, 2), quick_seeds=(0,), threads=1),
        Part(name="scaling", run=run_scaling, summarize=summarize_scaling,
             quick=ScalingConfig(d_model=64, vocab=256, sizes=(256, 512, 1024), batch=256, repeats=2),
             full=ScalingConfig(), seeds=(0,), quick_seeds=(0,), threads=1),
        # the same arms on five seeds: seeds 0-2 are read back from the default part's finished arms
        Part(name="pathway5", run=run_pathway, summarize=summarize_pathway, tasks=pathway_tasks,
             quick=_PATHWAY_QUICK, full=PathwayConfig(), seeds=(0, 1, 2, 3, 4), quick_seeds=(0, 1), threads=1),
        Part(name="tiny", run=run_tiny, summarize=summarize_tiny, tasks=tiny_tasks,
             quick=TinyConfig(layers=4, hidden=32, heads=2, seq_len=32, batch=4, train_steps=3, profile_blocks=4,
                              eval_blocks=2, pathway_layer=2, pathway_steps=3),
             full=TinyConfig(), seeds=(0,), quick_seeds=(0,), threads=1),
    ],
))
