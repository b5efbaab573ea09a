"""Reproduction of "ProjQ: Project-and-Quantize for Adapter-Aware LLM Compression".

Parts
-----
E1 (default)
    Layer-wise uncorrectable residual ρ_r on SmolLM2-135M: all 7 projections of blocks
    {2, 15, 28} (21 matrices), b ∈ {2, 3, 4}, g = 128, r ∈ {16, 64}; RTN, GPTQ, LoftQ, ProjQ;
    calibration 32 × 256 tokens of stdlib docstrings, held-out 8 × 256 tokens of pydoc topics.
E1-all (opt-in)
    The same on all 30 blocks (210 matrices); per-block results are cached, so it resumes.
E2 (default; the char-level toy, kept as a smoke part)
    End-to-end: a char-level Llama pretrained locally on docstrings, every block linear
    quantized at b ∈ {2, 3, 4}; compensation CE (no training) and CE after LoRA fine-tuning on
    pydoc topics for RTN+LoRA0, GPTQ+LoRA0, GPTQ+EoRA, LoftQ, ProjQ+lordq and QLoRA-NF4.
E2-smollm2 (opt-in, resumable)
    The same on SmolLM2-135M: the last 2 blocks quantized at b ∈ {2, 3}, compensated, LoRA
    fine-tuned; first a positive control (2-bit RTN/GPTQ must raise held-out CE by ≥ 0.2 nats).
    See :mod:`icml26.projq.e2_smollm2`.
scaling (default)
    ProjQ and GPTQ time vs layer width (log-log slope), their ratio, and independence of the
    token count once the Gram matrix is formed.

References
----------
W. Yu, C. Zhang, L. Wang, S. Lasaulce, M. Debbah. ICML 2026, arXiv:2606.00494.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from icml26.core.cache import atomic_file, atomic_folder, cache_root
from icml26.core.claims import Measurement
from icml26.core.device import cpu_only, device_cache_key, job_device, uses_device
from icml26.core.experiment import Experiment, Part, Result, register
from icml26.core.figures import subplots
from icml26.core.stats import format_mean_std, loglog_slope, paired_mean_interval, paired_t_interval
from icml26.projq.data import corpus_prefix_blocks, locked, synthetic_layer
# POWER_BAR: the power gate of every end-to-end comparison (E2 and E2-smollm2): b-bit GPTQ without an
# adapter must raise the held-out CE by >= POWER_BAR nats, else compensation has nothing to recover.
from icml26.projq.e2_smollm2 import POWER_BAR, SmolE2Config, e2_smollm2_tasks, run_e2_smollm2, summarize_e2_smollm2
from icml26.projq.model import quantize_model, to_peft_lora
from icml26.projq.projq import (ProjQ, gptq_eora_alternation, loftq_init, residual_profile_from_sqrt,
                                top_right_singular_vectors)
from icml26.projq.quant import ActivationStats, GroupQuantizer, _gptq, rtn_quantize
from icml26.projq.tail import adamw_cosine

SMOLLM2_MODULES = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                   "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")
# bump when the E1 computation changes, so cached per-block results are not reused
E1_VERSION = 2
# The GPTQ <-> EoRA alternation competitor (fixed before the test run, no tuning): the same number of
# rounds T as ProjQ's max_iter, and the round with the lowest *calibration* objective
# ‖(W − Ŵ_t − L_t)Xᵀ‖² is kept (round 0 is GPTQ + EoRA, so the competitor is never worse than that
# on calibration tokens; ProjQ keeps its last iterate, as the reference does).
ALT_RETURN_BEST = True
# Intervals over the matrices: a 95 % BCa paired bootstrap of the per-matrix log ratio; the
# measurement is the geometric mean ratio exp(mean log ratio).
INTERVAL_LEVEL = 0.95


def _config_key(config, *extra) -> str:
    text = json.dumps([dataclasses.asdict(config), *extra], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# == E1: layer-wise residuals on SmolLM2-135M ===========================================

@dataclass(frozen=True)
class LayerwiseConfig:
    """E1 settings (defaults: the spec's E1)."""

    blocks: tuple = (2, 15, 28)
    modules: tuple = SMOLLM2_MODULES
    bits: tuple = (2, 3, 4)
    ranks: tuple = (16, 64)
    curve_ranks: tuple = (0, 8, 16, 32, 64, 128, 256)
    group_size: int = 128
    seq_len: int = 256
    calib_source: str = "docstrings"
    calib_blocks: int = 32
    heldout_source: str = "topics"
    heldout_blocks: int = 8
    max_iter: int = 5
    tol: float = 0.02
    damp: float = 0.1
    loftq_iter: int = 5
    alternation: bool = True      # the GPTQ <-> EoRA alternation competitor (T = max_iter rounds)
    projection_tokens: str = "all"
    resume: bool = False          # reuse cached per-block results (E1-all)


class _StopForward(Exception):
    pass


@torch.no_grad()
def smollm2_block_stats(model, tokenizer, config: LayerwiseConfig, block: int) -> tuple:
    """Calibration and held-out ActivationStats of one block's linears (full-precision inputs).

    The forward pass stops after the block, so later layers cost nothing.
    """
    layer = model.model.layers[block]
    out = []
    for source, split, n_blocks in ((config.calib_source, "train", config.calib_blocks),
                                    (config.heldout_source, "test", config.heldout_blocks)):
        ids = corpus_prefix_blocks(tokenizer, source, split, config.seq_len, n_blocks)
        stats, handles = {}, []
        for name in config.modules:
            stats[name], handle = ActivationStats.from_module_hook(layer.get_submodule(name), f"block{block}.{name}")
            handles.append(handle)

        def stop(*_):
            raise _StopForward

        handles.append(layer.register_forward_hook(stop))
        try:
            for start in range(0, ids.shape[0], 8):
                try:
                    model.model(ids[start:start + 8].to(model.device))
                except _StopForward:
                    pass
        finally:
            for handle in handles:
                handle.remove()
        out.append(stats)
    return tuple(out)


def layerwise_matrix(W, cal: ActivationStats, held: ActivationStats, config: LayerwiseConfig, seed: int) -> list:
    """Every method's ρ values for one weight matrix (rows of the E1 table)."""
    S_cal, S_held = cal.sqrt_gram(), held.sqrt_gram()
    limit = min(W.shape)
    curve = tuple(r for r in sorted(set(config.curve_ranks) | {0} | set(config.ranks)) if r < limit)
    rows = []

    def record(method, bits, rank, W_hat, seconds, n_iter=0):
        calib = residual_profile_from_sqrt(W, W_hat, S_cal, curve)
        heldout = residual_profile_from_sqrt(W, W_hat, S_held, curve)
        rows.append({"method": method, "bits": bits, "rank": rank, "seconds": seconds, "n_iter": n_iter,
                     "rho_cal": {str(r): v for r, v in calib.items()},
                     "rho_held": {str(r): v for r, v in heldout.items()}})

    for bits in config.bits:
        quantizer = GroupQuantizer(bits, config.group_size, short_last_group=True)
        start = time.perf_counter()
        record("rtn", bits, 0, rtn_quantize(W, quantizer), time.perf_counter() - start)
        start = time.perf_counter()
        record("gptq", bits, 0, _gptq(W, cal.hessian(), quantizer, config.damp, 128, cal.name),
               time.perf_counter() - start)
        for rank in config.ranks:
            start = time.perf_counter()
            W_loftq = loftq_init(W, quantizer, rank, config.loftq_iter)[0]
            record("loftq", bits, rank, W_loftq, time.perf_counter() - start)
            start = time.perf_counter()
            fitted = ProjQ(bits, config.group_size, rank, config.max_iter, config.tol, config.damp,
                           projection_tokens=config.projection_tokens, random_state=seed,
                           short_last_group=True).fit(W, cal)
            record("projq", bits, rank, fitted.W_hat_, time.perf_counter() - start, fitted.n_iter_)
            if config.alternation:
                start = time.perf_counter()
                W_alt = gptq_eora_alternation(W, cal, quantizer, rank, config.max_iter, config.damp,
                                              return_best=ALT_RETURN_BEST)[0]
                record("alt", bits, rank, W_alt, time.perf_counter() - start, config.max_iter)
    return rows


def layerwise_tasks(config: LayerwiseConfig) -> list:
    # deepest block first: its forward pass is the longest, so the workers finish together
    return [{"block": int(b)} for b in sorted(config.blocks, reverse=True)]


@uses_device
def run_layerwise(config: LayerwiseConfig, seed: int, task: dict) -> dict:
    from icml26.zoo import load_smollm2

    block = task["block"]
    model, tokenizer = load_smollm2()
    model.to(job_device())
    cache_file = None
    if config.resume:
        key = _config_key(config, block, seed, E1_VERSION, model.zoo_manifest.get("state_dict_sha256"),
                          *([device_cache_key()] if device_cache_key() else []))
        cache_file = cache_root("projq", "e1") / f"block{block}-{key}.json"
        if cache_file.is_file():
            return json.loads(cache_file.read_text())
    start = time.perf_counter()
    cal, held = smollm2_block_stats(model, tokenizer, config, block)
    collect_seconds = time.perf_counter() - start
    rows = []
    for name in config.modules:
        W = model.model.layers[block].get_submodule(name).weight.detach().float()
        for row in layerwise_matrix(W, cal[name], held[name], config, seed):
            rows.append(dict(row, block=block, module=name.split(".")[-1], shape=list(W.shape)))
    metrics = {"block": block, "rows": rows, "collect_seconds": collect_seconds,
               "calibration_tokens": cal[config.modules[0]].N, "heldout_tokens": held[config.modules[0]].N}
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(cache_file) as tmp:
            tmp.write_text(json.dumps(metrics))
    return metrics


def _layer_frame(jobs: list) -> pd.DataFrame:
    records = []
    for job in jobs:
        for row in job.metrics["rows"]:
            base = {k: row[k] for k in ("block", "module", "method", "bits", "rank", "seconds", "n_iter")}
            for split in ("cal", "held"):
                for r, v in row[f"rho_{split}"].items():
                    records.append(dict(base, split=split, r=int(r), rho=v))
    return pd.DataFrame(records)


def _rho(frame, method, bits, split, r, rank=None) -> pd.Series:
    """ρ_r per matrix (indexed by block, module) of one method."""
    sel = frame[(frame.method == method) & (frame.bits == bits) & (frame.split == split) & (frame.r == r)]
    if rank is not None:
        sel = sel[sel["rank"] == rank]
    return sel.set_index(["block", "module"])["rho"].sort_index()


def ratio_measurement(numerator: pd.Series, denominator: pd.Series, level: float = INTERVAL_LEVEL) -> Measurement:
    """Geometric-mean ratio over matrices with a paired BCa bootstrap interval of the mean log ratio.

    Examples
    --------
    >>> m = ratio_measurement(pd.Series([2.0, 2.2, 1.8, 2.1]), pd.Series([1.0, 1.0, 1.0, 1.0]))
    >>> round(m.value, 3), m.interval[0] < 2.0 < m.interval[1]
    (2.019, True)
    """
    logs = np.log((numerator / denominator).dropna().to_numpy(dtype=float))
    if logs.size == 0:
        return Measurement(math.nan, incomplete="no matrices")
    low, high = paired_mean_interval(logs, level)
    value = float(np.exp(logs.mean()))
    if not (math.isfinite(low) and math.isfinite(high)):
        return Measurement(value, note=f"{logs.size} matrices, median {np.exp(np.median(logs)):.3f}; no interval")
    return Measurement(value, interval=(float(np.exp(low)), float(np.exp(high))),
                       note=f"geometric mean over {logs.size} matrices (median {np.exp(np.median(logs)):.3f}, "
                            f"{(logs > 0).sum()}/{logs.size} above 1); {level:.0%} BCa interval half-width "
                            f"{(np.exp(high) - np.exp(low)) / 2:.3f}")


def layerwise_measurements(frame: pd.DataFrame, config: LayerwiseConfig) -> dict:
    """The E1 measurements the claim table refers to (keys ``<what>_b<bits>``)."""
    r_main = 64 if 64 in config.ranks else max(config.ranks)
    r_small = 16 if 16 in config.ranks else min(config.ranks)
    out = {}
    for bits in (b for b in config.bits if b in (2, 3)):
        rho = {(method, split): _rho(frame, method, bits, split, r_main, rank=r_main if method in RANKED else None)
               for method in ("rtn", "gptq", "loftq", "projq", "alt") for split in ("cal", "held")}
        gptq, projq, alt = rho["gptq", "held"], rho["projq", "held"], rho["alt", "held"]
        out[f"held_b{bits}"] = ratio_measurement(gptq, projq)
        out[f"held_rtn_b{bits}"] = ratio_measurement(gptq, rho["rtn", "held"]).value
        if len(alt):
            out[f"held_alt_b{bits}"] = ratio_measurement(gptq, alt).value
            out[f"held_vs_alt_b{bits}"] = ratio_measurement(alt, projq)
            out[f"held_gptq_vs_alt_b{bits}"] = ratio_measurement(alt, gptq).value
        out[f"held_loftq_b{bits}"] = ratio_measurement(gptq, rho["loftq", "held"]).value
        cal_gptq, cal_projq = rho["gptq", "cal"], rho["projq", "cal"]
        out[f"cal_b{bits}"] = float((cal_gptq / cal_projq).median())
        out[f"cal_share_b{bits}"] = float((cal_projq <= cal_gptq).mean())
        if r_small != r_main:
            out[f"cal_r16_b{bits}"] = float((_rho(frame, "gptq", bits, "cal", r_small)
                                             / _rho(frame, "projq", bits, "cal", r_small, rank=r_small)).median())
        gptq0, rtn0 = _rho(frame, "gptq", bits, "cal", 0), _rho(frame, "rtn", bits, "cal", 0)
        out[f"gptq_vs_rtn_rho0_b{bits}"] = float((gptq0 < rtn0).mean())
        out[f"gptq_vs_rtn_rho64_b{bits}"] = float((cal_gptq < rho["rtn", "cal"]).mean())
        projq0 = _rho(frame, "projq", bits, "cal", 0, rank=r_main)
        out[f"noise_shaped_b{bits}"] = float((projq0 > gptq0).mean())
    return out


RANKED = ("projq", "loftq", "alt")      # methods fitted per adapter rank


def summarize_layerwise(jobs: list, config: LayerwiseConfig, label: str = "E1") -> Result:
    frame = _layer_frame(jobs)
    n_matrices = frame.groupby(["block", "module"]).ngroups
    notes, ratio_rows = [], []
    methods = set(frame.method)
    for bits in config.bits:
        for r in config.ranks:
            for split in ("cal", "held"):
                gptq, projq = _rho(frame, "gptq", bits, split, r), _rho(frame, "projq", bits, split, r, rank=r)
                rtn, loftq = _rho(frame, "rtn", bits, split, r), _rho(frame, "loftq", bits, split, r, rank=r)
                gptq0, projq0 = _rho(frame, "gptq", bits, split, 0), _rho(frame, "projq", bits, split, 0, rank=r)
                ratio = gptq / projq
                row = {"bits": bits, "r": r, "split": split, "matrices": len(ratio),
                       "median rho_r(GPTQ)/rho_r(ProjQ)": float(ratio.median()),
                       "min": float(ratio.min()), "max": float(ratio.max()),
                       "share ProjQ <= GPTQ": float((projq <= gptq).mean()),
                       "median rho_r(RTN)/rho_r(GPTQ)": float((rtn / gptq).median()),
                       "median rho_r(LoftQ)/rho_r(GPTQ)": float((loftq / gptq).median()),
                       "median rho_0(ProjQ)/rho_0(GPTQ)": float((projq0 / gptq0).median())}
                if "alt" in methods:
                    alt = _rho(frame, "alt", bits, split, r, rank=r)
                    row["median rho_r(Alt)/rho_r(ProjQ)"] = float((alt / projq).median())
                    row["share ProjQ <= Alt"] = float((projq <= alt).mean())
                    row["median rho_r(GPTQ)/rho_r(Alt)"] = float((gptq / alt).median())
                ratio_rows.append(row)
    ratios = pd.DataFrame(ratio_rows)
    measurements = layerwise_measurements(frame, config)
    r_main = 64 if 64 in config.ranks else max(config.ranks)
    iterations = frame[(frame.method == "projq")].drop_duplicates(["block", "module", "bits", "rank"])
    iter_table = iterations.groupby(["bits", "rank"])["n_iter"].describe()[["mean", "min", "max"]].reset_index()
    seconds = frame.drop_duplicates(["block", "module", "method", "bits", "rank"]).groupby(
        ["method", "rank"])["seconds"].sum().reset_index()
    medians = (frame[frame.r.isin([0, *config.ranks])]
               .groupby(["bits", "method", "rank", "split", "r"])["rho"].median().unstack("r").reset_index())
    notes.append(f"{n_matrices} matrices (blocks {sorted(frame.block.unique().tolist())}); calibration "
                 f"{jobs[0].metrics['calibration_tokens']} tokens of {config.calib_source}, held-out "
                 f"{jobs[0].metrics['heldout_tokens']} tokens of {config.heldout_source}; g = {config.group_size} "
                 "with a short last group of 64 columns for the 576-wide inputs")
    notes.append(f"held-out claims: geometric mean over matrices of rho_{r_main} ratios with a "
                 f"{INTERVAL_LEVEL:.0%} BCa paired bootstrap interval (per-matrix log ratios); calibration "
                 "ratios (ProjQ's own objective) are implementation checks")
    notes.append("competitor: GPTQ <-> EoRA alternation (quantize W - L with GPTQ, refit the rank-r EoRA "
                 f"correction L; T = {config.max_iter} rounds as ProjQ, best calibration round kept); "
                 "negative control: RTN in place of ProjQ")
    notes.append("activation collection seconds per block: " + ", ".join(
        f"{j.metrics['block']}: {j.metrics['collect_seconds']:.0f}" for j in jobs))
    figures = {f"{label} rho_r ratio per matrix": _figure_ratios(frame, config, r_main),
               f"{label} rho_r vs r (plasticity proxy)": _figure_curve(frame, config)}
    return Result(tables={f"{label} ratios": ratios, f"{label} median rho": medians,
                          f"{label} ProjQ iterations": iter_table, f"{label} seconds by method": seconds},
                  figures=figures, measurements=measurements, notes=notes)


def _figure_ratios(frame, config, r):
    fig, axes = subplots(1, len(config.bits), figsize=(4.2 * len(config.bits), 3.4), squeeze=False)
    for ax, bits in zip(axes[0], config.bits):
        for offset, split in ((-0.2, "cal"), (0.2, "held")):
            ratio = _rho(frame, "gptq", bits, split, r) / _rho(frame, "projq", bits, split, r, rank=r)
            ax.bar(np.arange(len(ratio)) + offset, ratio.values, width=0.4,
                   label="calibration" if split == "cal" else "held-out")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.axhline(1.05, color="r", ls="--", lw=0.8, label="held-out bar 1.05")
        labels = [f"{b}.{m.replace('_proj', '')}" for b, m in ratio.index]
        ax.set_xticks(np.arange(len(ratio)), labels, rotation=90, fontsize=6)
        ax.set_xlabel("block.matrix")
        ax.set_ylabel(f"rho_{r}(GPTQ) / rho_{r}(ProjQ)")
        ax.set_title(f"{bits}-bit, r = {r}")
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def _figure_curve(frame, config):
    fig, axes = subplots(1, len(config.bits), figsize=(4.2 * len(config.bits), 3.2), squeeze=False)
    r_main = 64 if 64 in config.ranks else max(config.ranks)
    for ax, bits in zip(axes[0], config.bits):
        sel = frame[(frame.bits == bits) & (frame.split == "cal")]
        for method, rank, style in (("rtn", 0, ":"), ("gptq", 0, "-"), ("loftq", r_main, "-."),
                                    ("alt", r_main, "--"), ("projq", r_main, "-")):
            part = sel[(sel.method == method) & (sel["rank"] == rank)]
            if part.empty:
                continue
            curve = part.groupby("r")["rho"].median()
            ax.semilogy(curve.index, curve.values, style, marker="o", ms=3,
                        label=f"{method}" + (f" (r_q={rank})" if rank else ""))
        ax.set_xlabel("adapter rank r")
        ax.set_ylabel("median rho_r (calibration)")
        ax.set_title(f"{bits}-bit")
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


# == E2: end-to-end on a locally trained char-level Llama ===============================

@dataclass(frozen=True)
class EndToEndConfig:
    """E2 settings (a scaled-down version of the spec's E2; see the README)."""

    hidden: int = 128
    layers: int = 4
    heads: int = 4
    intermediate: int = 512
    seq_len: int = 128
    pretrain_steps: int = 400
    pretrain_batch: int = 8
    pretrain_lr: float = 3e-3
    bits: tuple = (2, 3, 4)
    group_size: int = 128
    rank: int = 16
    calib_blocks: int = 64
    eval_blocks: int = 32
    methods: tuple = ("rtn", "gptq", "gptq_eora", "loftq", "projq", "nf4")
    finetune_methods_4bit: tuple = ("gptq", "nf4", "projq")
    finetune_steps: int = 50
    finetune_batch: int = 8
    finetune_lr: float = 1e-3
    lora_alpha: float = 16.0
    weight_decay: float = 0.1
    warmup_fraction: float = 0.03


def _train(model, params, ids: torch.Tensor, steps: int, batch: int, lr: float, weight_decay: float,
           warmup_fraction: float, seed: int) -> list:
    """AdamW + warm-up + cosine on random windows of the 1-D token tensor ``ids``; returns losses."""
    generator = torch.Generator().manual_seed(seed)
    width = model.config.max_position_embeddings

    def batch_loss(step: int) -> torch.Tensor:
        starts = torch.randint(0, ids.numel() - width, (batch,), generator=generator)
        rows = torch.stack([ids[s:s + width] for s in starts.tolist()]).to(model.device)
        return model(input_ids=rows, labels=rows).loss

    return adamw_cosine(model, params, steps, lr, weight_decay, warmup_fraction, batch_loss)


def _char_ids(source: str, split: str) -> torch.Tensor:
    from icml26.zoo import CharTokenizer, corpus_splits

    return torch.as_tensor(CharTokenizer().encode(getattr(corpus_splits(source), split)))


def pretrained_char_llama(config: EndToEndConfig):
    """The char-level Llama pretrained on the docstrings train split (seed 0), cached on disk."""
    from transformers import LlamaForCausalLM

    from icml26.zoo import CharTokenizer, corpus_info, tiny_llama

    fields = {k: getattr(config, k) for k in ("hidden", "layers", "heads", "intermediate", "seq_len",
                                              "pretrain_steps", "pretrain_batch", "pretrain_lr")}
    key = hashlib.sha256(json.dumps([fields, corpus_info("docstrings")["sha256"], torch.__version__],
                                    sort_keys=True).encode()).hexdigest()[:16]
    folder = cache_root("projq", f"charlm-{key}")
    with locked(cache_root("projq", f"charlm-{key}.lock")):
        if not (folder / "config.json").is_file():
            model = tiny_llama(vocab=CharTokenizer().vocab_size, hidden=config.hidden, layers=config.layers,
                               heads=config.heads, intermediate=config.intermediate,
                               max_position=config.seq_len, seed=0)
            losses = _train(model, model.parameters(), _char_ids("docstrings", "train"), config.pretrain_steps,
                            config.pretrain_batch, config.pretrain_lr, 0.0, 0.05, seed=0)
            with atomic_folder(folder) as tmp:
                model.save_pretrained(tmp)
                (tmp / "pretrain_losses.json").write_text(json.dumps(losses))
    # On a GPU, transformers re-kernelises the model for training (model.train()) and would fetch
    # hub kernels for CUDA (offline: an error); the CPU keeps the default (its recorded numbers).
    extra = {} if job_device() == "cpu" else {"use_kernels": False}
    return LlamaForCausalLM.from_pretrained(folder, **extra).eval()


def _block_linears(model) -> list:
    return [name for name, mod in model.named_modules()
            if isinstance(mod, torch.nn.Linear) and name.startswith("model.layers.")]


def e2e_tasks(config: EndToEndConfig) -> list:
    return [{"bits": int(b)} for b in config.bits]


@uses_device
def run_e2e(config: EndToEndConfig, seed: int, task: dict) -> dict:
    from icml26.zoo.lm_eval import next_token_ce

    bits = task["bits"]
    base = pretrained_char_llama(config).to(job_device())   # pretrained (and cached) on the CPU
    calib = _char_ids("docstrings", "train")
    calib = calib[: config.calib_blocks * config.seq_len].reshape(config.calib_blocks, config.seq_len)
    T = config.seq_len
    held_doc = _char_ids("docstrings", "test")[: config.eval_blocks * T].reshape(-1, T)
    held_topics = _char_ids("topics", "test")[: config.eval_blocks * T].reshape(-1, T)
    finetune_ids = _char_ids("topics", "train")
    metrics = {"bits": bits, "seed": seed, "fp_ce_docstrings": next_token_ce(base, held_doc),
               "fp_ce_topics": next_token_ce(base, held_topics), "methods": {}}
    tuned = config.methods if bits in (2, 3) else config.finetune_methods_4bit
    for method in config.methods:
        if method == "nf4" and bits != 4:
            continue
        model = copy.deepcopy(base)
        start = time.perf_counter()
        report = quantize_model(model, calib, method=method, bits=bits, group_size=config.group_size,
                                rank=config.rank, comp_rank=config.rank, modules=_block_linears(model), seed=0)
        quantize_seconds = time.perf_counter() - start
        with torch.random.fork_rng():
            # peft's random lora_A (the LoRA0 methods) from the job's seed, not from whatever the
            # process drew before (a cached vs freshly trained base model, earlier jobs): the
            # numbers must not depend on --jobs or the cache
            torch.manual_seed(seed)
            peft_model = to_peft_lora(model, report, lora_alpha=config.lora_alpha)
        entry = {"quantize_seconds": quantize_seconds,
                 "compensation_ce": next_token_ce(peft_model, held_doc),
                 "compensation_ce_topics": next_token_ce(peft_model, held_topics)}
        if method in tuned:
            params = [p for p in peft_model.parameters() if p.requires_grad]
            start = time.perf_counter()
            losses = _train(peft_model, params, finetune_ids, config.finetune_steps, config.finetune_batch,
                            config.finetune_lr, config.weight_decay, config.warmup_fraction, seed=1000 + seed)
            entry.update(finetune_seconds=time.perf_counter() - start, finetune_final_loss=losses[-1],
                         finetuned_ce=next_token_ce(peft_model, held_topics))
        metrics["methods"][method] = entry
    return metrics


def e2e_measurements(frame: pd.DataFrame, fp_doc: float, config: EndToEndConfig) -> dict:
    """The toy E2 measurements: power controls, compensation and fine-tuned differences."""
    comp = frame.groupby(["bits", "method"])["compensation_ce"].mean()
    tuned = frame.dropna(subset=["finetuned_ce"]) if "finetuned_ce" in frame else frame.iloc[:0]
    per_seed = tuned.pivot_table(index=["bits", "seed"], columns="method", values="finetuned_ce")

    def get(bits, method):
        return float(comp.get((bits, method), math.nan))

    def seeds_diff(bits_a, method_a, bits_b, method_b) -> Measurement:
        try:
            a = per_seed.loc[bits_a][method_a]
            b = per_seed.loc[bits_b][method_b]
        except KeyError:
            return Measurement(math.nan, incomplete=f"{method_a} at {bits_a} bits or {method_b} at {bits_b} "
                                                    "bits was not fine-tuned")
        diff = (a - b).dropna()
        low, high = paired_t_interval(diff.values) if len(diff) >= 2 else (math.nan, math.nan)
        if not (math.isfinite(low) and math.isfinite(high)):
            return Measurement(float(diff.mean()), note=f"{len(diff)} seed(s); no interval")
        return Measurement(float(diff.mean()), interval=(low, high),
                           note=f"{len(diff)} seeds, 95 % paired t-interval")

    out = {}
    for bits in (b for b in config.bits if b in (2, 3, 4)):
        out[f"power_b{bits}"] = get(bits, "gptq") - fp_doc
    for bits in (b for b in config.bits if b in (2, 3)):
        out[f"comp_b{bits}"] = get(bits, "projq") - get(bits, "gptq_eora")
        out[f"comp_lora0_b{bits}"] = get(bits, "gptq") - get(bits, "gptq_eora")
        if bits in per_seed.index.get_level_values(0):
            means = per_seed.loc[bits].mean()
            baselines = [m for m in means.index if m not in ("projq", "nf4") and math.isfinite(means[m])]
            if baselines and "projq" in means:
                best = min(baselines, key=lambda m: means[m])
                measurement = seeds_diff(bits, "projq", bits, best)
                measurement.note = f"best baseline {best}; " + measurement.note
                out[f"tuned_b{bits}"] = measurement
                if "rtn" in means and best != "rtn":
                    out[f"tuned_rtn_b{bits}"] = float(means["rtn"] - means[best])
    if 3 in config.bits and 4 in config.bits:
        out["projq3_vs_gptq4"] = seeds_diff(3, "projq", 4, "gptq")
        out["rtn3_vs_gptq4"] = seeds_diff(3, "rtn", 4, "gptq").value
    return out


def summarize_e2e(jobs: list, config: EndToEndConfig) -> Result:
    records = []
    for job in jobs:
        for method, entry in job.metrics["methods"].items():
            records.append(dict(entry, method=method, bits=job.metrics["bits"], seed=job.metrics["seed"]))
    frame = pd.DataFrame(records)
    fp_doc = float(np.mean([j.metrics["fp_ce_docstrings"] for j in jobs]))
    fp_topics = float(np.mean([j.metrics["fp_ce_topics"] for j in jobs]))
    comp = frame.groupby(["bits", "method"])["compensation_ce"].mean()
    tuned = frame.dropna(subset=["finetuned_ce"]).groupby(["bits", "method"])["finetuned_ce"]
    tuned_mean = tuned.mean()
    table = []
    for (bits, method), group in frame.groupby(["bits", "method"]):
        ft = group["finetuned_ce"].dropna() if "finetuned_ce" in group else pd.Series(dtype=float)
        table.append({"bits": bits, "method": method, "compensation CE (docstrings)": float(group["compensation_ce"].mean()),
                      "ΔCE vs fp (docstrings)": float(group["compensation_ce"].mean()) - fp_doc,
                      "fine-tuned CE (topics)": format_mean_std(ft.values) if len(ft) else "—",
                      "seeds": int(len(ft)), "quantize s": float(group["quantize_seconds"].mean())})
    n_seeds = len({j.metrics["seed"] for j in jobs})
    notes = [f"full-precision CE: held-out docstrings {fp_doc:.4f}, held-out topics {fp_topics:.4f} nats",
             f"power gate: b-bit GPTQ (no adapter) must raise held-out CE by >= {POWER_BAR} nats; every "
             "comparison at b bits requires it",
             f"fine-tuning: {config.finetune_steps} steps, batch {config.finetune_batch}x{config.seq_len}, "
             f"lr {config.finetune_lr}, LoRA r={config.rank}, alpha={config.lora_alpha}, seeds {n_seeds}"]
    fig, axes = subplots(1, 2, figsize=(9, 3.4))
    for ax, series, ylabel in ((axes[0], comp, "compensation CE, held-out docstrings (nats)"),
                               (axes[1], tuned_mean, "fine-tuned CE, held-out topics (nats)")):
        for method in config.methods:
            xs = [b for b in config.bits if (b, method) in series.index]
            ax.plot(xs, [series[(b, method)] for b in xs], marker="o", label=method)
        ax.set_xlabel("bits")
        ax.set_ylabel(ylabel)
        ax.set_xticks(list(config.bits))
        ax.legend(fontsize=6)
    axes[0].axhline(fp_doc, color="k", ls=":", lw=0.8)
    axes[1].axhline(fp_topics, color="k", ls=":", lw=0.8)
    fig.tight_layout()
    return Result(tables={"E2 cross-entropy": pd.DataFrame(table)}, figures={"E2 CE vs bits": fig},
                  measurements=e2e_measurements(frame, fp_doc, config), notes=notes)


# == scaling =============================================================================

@dataclass(frozen=True)
class ScalingConfig:
    widths: tuple = (128, 256, 512, 1024)
    token_counts: tuple = (2048, 8192, 32768)
    token_width: int = 256
    bits: int = 2
    rank_fraction: float = 0.125
    repeats: int = 2
    svd: str = "randomized"       # the reference's subspace step; "exact" is timed beside it


def _cpu_seconds(fn) -> float:
    """CPU seconds of one single-threaded call (robust to other processes on a shared machine)."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def time_projq_and_gptq(n: int, tokens: int, bits: int = 2, rank: int | None = None, repeats: int = 2,
                        seed: int = 0, svd: str = "randomized") -> dict:
    """Best-of-``repeats`` CPU seconds of ProjQ.fit (with ``svd`` and with the exact subspace), of
    one GPTQ call, one subspace step (top-r right singular vectors of an m×n ``E S``) and one
    eigendecomposition of the Gram matrix, on a synthetic n×n layer (G formed before timing)."""
    W, X = synthetic_layer(n, n, tokens=tokens, seed=seed)
    rank = rank or max(1, n // 8)
    quantizer = GroupQuantizer(bits, 128 if n % 128 == 0 else -1)
    best = {k: math.inf for k in ("gptq", "projq", "projq_exact", "subspace", "subspace_exact", "eigh")}
    n_iter = {}
    for _ in range(repeats):
        stats = ActivationStats.from_tensor(X)         # fresh: nothing cached between repeats
        H = stats.hessian()
        best["gptq"] = min(best["gptq"], _cpu_seconds(lambda: _gptq(W, H, quantizer, 0.1, 128, "bench")))
        best["eigh"] = min(best["eigh"], _cpu_seconds(lambda: torch.linalg.eigh(stats.G)))
        ES = (W.double() - rtn_quantize(W, quantizer).double()) @ stats.sqrt_gram()
        for key, method in (("subspace", svd), ("subspace_exact", "exact")):
            generator = torch.Generator().manual_seed(seed)
            best[key] = min(best[key], _cpu_seconds(
                lambda: top_right_singular_vectors(ES, rank, method, generator)))
        for key, method in (("projq", svd), ("projq_exact", "exact")):
            fresh = ActivationStats.from_tensor(X)
            model = ProjQ(bits, quantizer.group_size, rank, svd=method, random_state=seed)
            best[key] = min(best[key], _cpu_seconds(lambda: model.fit(W, fresh)))
            n_iter[key] = model.n_iter_
    return {"n": n, "tokens": tokens, "gptq_seconds": best["gptq"], "projq_seconds": best["projq"],
            "projq_exact_seconds": best["projq_exact"], "subspace_seconds": best["subspace"],
            "subspace_exact_seconds": best["subspace_exact"], "eigh_seconds": best["eigh"],
            "n_iter": n_iter["projq"], "n_iter_exact": n_iter["projq_exact"], "svd": svd}


def scaling_tasks(config: ScalingConfig) -> list:
    return ([{"kind": "width", "n": int(n), "tokens": int(config.token_counts[0])} for n in config.widths]
            + [{"kind": "tokens", "n": int(config.token_width), "tokens": int(t)} for t in config.token_counts])


@cpu_only("a CPU-seconds measurement")
def run_scaling(config: ScalingConfig, seed: int, task: dict) -> dict:
    n = task["n"]
    return dict(time_projq_and_gptq(n, task["tokens"], config.bits, max(1, int(n * config.rank_fraction)),
                                    config.repeats, seed, config.svd), kind=task["kind"])


def cost_model_bound(frame: pd.DataFrame, exact: bool = False) -> pd.Series:
    """ProjQ's cost model per width: (T + 1)·GPTQ + T·subspace + eigh (T = the iterations used)."""
    suffix = "_exact" if exact else ""
    T = frame["n_iter" + suffix]
    return (T + 1) * frame["gptq_seconds"] + T * frame[f"subspace{suffix}_seconds"] + frame["eigh_seconds"]


def summarize_scaling(jobs: list, config: ScalingConfig) -> Result:
    frame = pd.DataFrame([j.metrics for j in jobs])
    width = frame[frame.kind == "width"].groupby("n")[
        ["gptq_seconds", "projq_seconds", "projq_exact_seconds", "subspace_seconds", "subspace_exact_seconds",
         "eigh_seconds", "n_iter", "n_iter_exact"]].mean()
    tokens = frame[frame.kind == "tokens"].groupby("tokens")["projq_seconds"].mean()
    slope = loglog_slope(width.index.values, width["projq_seconds"].values)
    ratio = width["projq_seconds"] / width["gptq_seconds"]
    spec_bound = 1.5 * (width["n_iter"] + 1)
    model = cost_model_bound(width)
    model_ratio = width["projq_seconds"] / model
    spread = float(tokens.max() / tokens.min())
    measurements = {"slope": slope, "cost_model_ratio": float(model_ratio.max()),
                    "spec_ratio": float((ratio / spec_bound).max()), "token_spread": spread}
    fig, axes = subplots(1, 2, figsize=(8, 3.2))
    axes[0].loglog(width.index, width["projq_seconds"], "o-", label=f"ProjQ (svd={config.svd})")
    axes[0].loglog(width.index, width["projq_exact_seconds"], "^--", label="ProjQ (exact subspace)")
    axes[0].loglog(width.index, model, "k:", label="(T+1) GPTQ + T subspace + eigh")
    axes[0].loglog(width.index, width["gptq_seconds"], "s-", label="GPTQ")
    axes[0].set_xlabel("layer width n (= m)")
    axes[0].set_ylabel("CPU seconds")
    axes[0].legend(fontsize=7)
    axes[1].semilogx(tokens.index, tokens.values, "o-")
    axes[1].set_xlabel(f"calibration tokens N (n = {config.token_width})")
    axes[1].set_ylabel("ProjQ CPU seconds")
    axes[1].set_ylim(0, None)
    fig.tight_layout()
    exact_ratio = width["projq_exact_seconds"] / width["gptq_seconds"]
    table = width.assign(ratio=ratio, spec_bound=spec_bound, cost_model=model, cost_model_ratio=model_ratio,
                         exact_ratio=exact_ratio,
                         exact_cost_model_ratio=width["projq_exact_seconds"] / cost_model_bound(width, True))
    return Result(tables={"scaling by width": table.reset_index(), "scaling by tokens": tokens.reset_index()},
                  figures={"scaling": fig}, measurements=measurements,
                  notes=[f"ProjQ with svd={config.svd!r} (the reference's subspace step): slope {slope:.2f}, "
                         f"ProjQ/GPTQ CPU-time ratios {np.round(ratio.values, 2).tolist()} (spec bound "
                         f"1.5 (T+1): {np.round(spec_bound.values, 1).tolist()}), ProjQ / cost model "
                         f"{np.round(model_ratio.values, 2).tolist()}, token spread {spread:.2f}",
                         "the rest of ProjQ's time beyond the cost model: the per-iteration E·S products "
                         "(m n^2 in float64) and the projected Hessian"])


# == registration ========================================================================

E1_QUICK = LayerwiseConfig(blocks=(0,), modules=("self_attn.k_proj", "self_attn.o_proj"), bits=(2,), ranks=(16,),
                           curve_ranks=(0, 8, 16), seq_len=128, calib_blocks=8, heldout_blocks=4, max_iter=2)
E1_FULL = LayerwiseConfig()
E1_ALL = LayerwiseConfig(blocks=tuple(range(30)), resume=True)
E2_QUICK = EndToEndConfig(hidden=64, layers=1, heads=2, intermediate=128, seq_len=32, pretrain_steps=20,
                          pretrain_batch=4, bits=(2, 3, 4), group_size=64, rank=4, calib_blocks=8, eval_blocks=4,
                          finetune_steps=3, finetune_batch=2, methods=("gptq", "gptq_eora", "projq", "nf4"),
                          finetune_methods_4bit=("gptq",))
E2_FULL = EndToEndConfig()
E2S_QUICK = SmolE2Config(model="tiny", tail_blocks=1, tail_by_bits=(), tiny_layers=2, tiny_hidden=64, group_size=32, rank=4,
                         seq_len=32, calib_rows=8, train_rows=8, eval_rows=4, eval_rows_topics=4, steps=3, batch=2, max_iter=2,
                         cache=False)
E2S_FULL = SmolE2Config()
SCALING_QUICK = ScalingConfig(widths=(64, 128), token_counts=(512, 2048), token_width=64, repeats=1)
SCALING_FULL = ScalingConfig()

EXPERIMENT = register(Experiment(
    slug="projq",
    parts=[
        Part(name="E1", run=run_layerwise, summarize=summarize_layerwise, tasks=layerwise_tasks,
             quick=E1_QUICK, full=E1_FULL, seeds=(0,), quick_seeds=(0,)),
        Part(name="E2", run=run_e2e, summarize=summarize_e2e, tasks=e2e_tasks, quick=E2_QUICK, full=E2_FULL,
             seeds=(0, 1, 2), quick_seeds=(0,)),
        Part(name="scaling", run=run_scaling, summarize=summarize_scaling, tasks=scaling_tasks,
             quick=SCALING_QUICK, full=SCALING_FULL, seeds=(0,), quick_seeds=(0,)),
        Part(name="E1-all", run=run_layerwise, summarize=functools.partial(summarize_layerwise, label="E1-all"),
             tasks=layerwise_tasks, quick=E1_QUICK, full=E1_ALL, seeds=(0,), quick_seeds=(0,)),
        Part(name="E2-smollm2", run=run_e2_smollm2, summarize=summarize_e2_smollm2, tasks=e2_smollm2_tasks,
             quick=E2S_QUICK, full=E2S_FULL, seeds=(0, 1, 2), quick_seeds=(0,)),
    ],
))
