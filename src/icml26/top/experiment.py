"""Reproduction of "Predicting the Order of Upcoming Tokens Improves Language Modeling".

Parts
-----
E1 (tier A, default)
    Star graph G(2, 4, 12): NTP vs NTP+TOP vs MTP vs DS-MTP on a 3-layer GPT. Checks the
    harness (NTP's Clever-Hans signature) and that TOP does not hurt — not the paper's claim.
star-long (tier B, opt-in)
    The paper's star-graph claim: 30k steps per objective; TOP reaches >= 0.85 exact while
    NTP stays <= 0.65. Optional controls: ``top_shuffled`` (scores permuted inside each
    window, the spec's) and ``top_unrelated`` (another graph's targets, ours).
star-small (opt-in)
    The star graph at a ~30-minute budget on 3 seeds (NTP vs NTP+TOP, G(2,4,12), 3x96 GPT,
    batch 64, constant lr, 7500 steps), resumable. The pre-registered dev search
    (benchmarks/top_star_search.py) found no configuration where TOP breaks through within
    that budget; this part is the 3-seed measurement at it, with star-long's bars.
E2 (default)
    Char-level GPT on Python's own documentation: TOP non-inferiority in validation CE and
    the TOP head's ranking quality (NDCG@10) vs the NTP logits; MTP CE reported.
E2-seeds (opt-in)
    E2's NTP and NTP+TOP on seeds 0-4: the seed-to-seed spread of the NDCG gain.
scaling (default)
    TOP target construction time vs length (log-log slope) and the training-step cost of
    NTP+TOP vs NTP vs MTP at equal model size.

References
----------
Z. M. K. Zuhri, E. H. Fuadi, A. F. Aji. ICML 2026, arXiv:2508.19228.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import time
from collections import deque
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
import torch

from icml26.core.io import atomic_file
from icml26.core.device import cpu_only, job_device, uses_device
from icml26.core.claims import Measurement
from icml26.core.experiment import Experiment, Part, Result, register
from icml26.core.figures import subplots
from icml26.core.stats import format_mean_std, loglog_slope, paired_t_interval
from icml26.core.validation import check_choice, check_int
from icml26.top.baselines import DSMTPForCausalLM, MTPForCausalLM
from icml26.top.data import (CharTokenizer, corpus_sha1, evaluate_star_graph, load_stdlib_corpus,
                             make_star_graph_dataset, split_corpus)
from icml26.top.gpt import GPTConfig, TinyGPT
from icml26.top.token_order import (TOPForCausalLM, TOPLoss, causal_lm_loss, check_labels,
                                    ndcg_at_k, shift_labels, top_targets, top_targets_sparse)

IGNORE = -100
OBJECTIVES = ("ntp", "top", "mtp", "dsmtp", "top_shuffled", "top_unrelated")
TOP_OBJECTIVES = ("top", "top_shuffled", "top_unrelated")


# -- models and objectives ------------------------------------------------------------

class ShuffledTOPLoss(TOPLoss):
    """Negative control: TOP loss whose window scores are permuted among the window's tokens.

    Same tokens, same score multiset, random order: the head can no longer learn *order*.
    """

    def __init__(self, *args, seed: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.generator = torch.Generator().manual_seed(seed)

    def targets(self, labels, vocab_size, window, seq_len):
        idx, score = super().targets(labels, vocab_size, window, seq_len)
        return idx, shuffle_window_scores(score, self.generator)


class UnrelatedTOPLoss(TOPLoss):
    """Null control (our addition): each row gets the TOP targets of the *next* row of the batch.

    The targets keep every statistic of real TOP targets (tokens, scores, window sizes) but
    describe another sequence, so they carry no information about this row's input. Unlike
    :class:`ShuffledTOPLoss`, which keeps the row's own upcoming tokens and only scrambles their
    order, nothing here can help the model solve its own input.
    """

    def targets(self, labels, vocab_size, window, seq_len):
        if labels.shape[0] < 2:
            raise ValueError("UnrelatedTOPLoss needs a batch of at least 2 rows (it gives each "
                             f"row another row's targets), got {labels.shape[0]}")
        idx, score = super().targets(labels, vocab_size, window, seq_len)
        return idx.roll(1, dims=0), score.roll(1, dims=0)


def shuffle_window_scores(score: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Permute the finite entries of each row of ``score`` among themselves (−inf stay put).

    The permutation keys are drawn on the CPU from ``generator`` and moved to ``score``'s
    device, so a seed gives the same shuffle on every device."""
    finite = torch.isfinite(score)
    n_slots = score.shape[-1]
    keys = torch.rand(score.shape, generator=generator).to(score.device)
    keys = torch.where(finite, keys, 2.0)                        # finite values first, shuffled
    values = score.gather(-1, keys.argsort(dim=-1))
    slots = torch.where(finite, torch.arange(n_slots, device=score.device), n_slots)
    slots = slots.sort(dim=-1).values
    out = torch.full((*score.shape[:-1], n_slots + 1), float("-inf"), dtype=score.dtype,
                     device=score.device)
    out.scatter_(-1, slots, values)                               # sentinel column takes the −inf
    return out[..., :n_slots]


def build_model(objective: str, config: GPTConfig, n_future: int = 2, seed: int = 0,
                top_positions: str = "window"):
    """The model for an objective; MTP/DS-MTP get n_future - 1 extra blocks so that the
    next-token path has the same depth as NTP's (trunk n_layer - 1 + one head block).
    ``top_positions`` is :class:`TOPLoss`'s ``positions`` for the TOP objectives.

    The models do not re-check token ids on every step (``validate_args=False``: those checks
    read tensors on the host, a device synchronisation NTP's step does not make); the
    experiment checks its data once (:func:`check_token_data`)."""
    if objective == "ntp":
        return TinyGPT(config)
    if objective in TOP_OBJECTIVES:
        model = TOPForCausalLM(TinyGPT(config), window=None, init_std=config.init_std,
                               ignore_index=IGNORE, positions=top_positions, validate_args=False)
        if objective == "top_shuffled":
            model.loss_fn = ShuffledTOPLoss(window=None, ignore_index=IGNORE, seed=seed,
                                            positions=top_positions, validate_args=False)
        elif objective == "top_unrelated":
            model.loss_fn = UnrelatedTOPLoss(window=None, ignore_index=IGNORE,
                                             positions=top_positions, validate_args=False)
        return model
    deeper = dataclasses.replace(config, n_layer=config.n_layer + n_future - 1)
    if objective == "mtp":
        return MTPForCausalLM(deeper, n_future=n_future, ignore_index=IGNORE, validate_args=False)
    if objective == "dsmtp":
        return DSMTPForCausalLM(deeper, n_future=n_future, ignore_index=IGNORE, validate_args=False)
    raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")


def check_token_data(vocab_size: int, input_ids, labels, lookahead) -> None:
    """Check a whole training set's ids once (the models skip the per-step check)."""
    check_labels(torch.as_tensor(input_ids), vocab_size, ignore_index=0, name="input_ids")
    check_labels(torch.as_tensor(labels), vocab_size, IGNORE, name="labels")
    check_labels(torch.as_tensor(lookahead), vocab_size, IGNORE, name="lookahead_labels")


def objective_loss(model, objective: str, input_ids, labels, lookahead):
    """(total loss, NTP loss) for one batch with Hugging Face-style labels."""
    if objective == "ntp":
        logits = model(input_ids).logits
        row = shift_labels(labels, lookahead, IGNORE)
        ntp = causal_lm_loss(logits, row[:, : input_ids.shape[1]], IGNORE)
        return ntp, ntp
    out = model(input_ids, labels=labels, lookahead_labels=lookahead)
    return out.loss, out.ntp_loss


def lr_at(step: int, total: int, lr: float, warmup: int, min_lr: float) -> float:
    """Linear warm-up then cosine decay to ``min_lr``: the closed form of :class:`WarmupCosineLR`."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * progress))


class WarmupCosineLR(torch.optim.lr_scheduler.LRScheduler):
    """Linear warm-up then cosine decay to ``min_lr`` over ``total`` steps, as a
    :class:`torch.optim.lr_scheduler.LRScheduler` (the nanoGPT schedule the spec names).

    The learning rate of step ``s`` is :func:`lr_at` of the group's initial lr, computed in
    closed form (not as a factor times the base lr), so it is the same float at every step
    whether a run starts fresh or resumes at ``start`` (no scheduler state to checkpoint).

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
    total, warmup : int
        Steps in the run and warm-up steps.
    min_lr : float
        The floor of the cosine.
    start : int, default 0
        The step the run (re)starts at; the optimizer's lr is set for that step.

    Examples
    --------
    >>> opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1e-3)
    >>> sched = WarmupCosineLR(opt, total=100, warmup=10, min_lr=1e-4)
    >>> opt.param_groups[0]["lr"] == lr_at(0, 100, 1e-3, 10, 1e-4)
    True

    References
    ----------
    Loshchilov & Hutter, "SGDR: Stochastic Gradient Descent with Warm Restarts", ICLR 2017
    (cosine decay); Zuhri et al., "Predicting the Order of Upcoming Tokens Improves Language
    Modeling", ICML 2026 (its nanoGPT recipe).
    """

    def __init__(self, optimizer, total: int, warmup: int, min_lr: float, start: int = 0):
        self.total, self.warmup, self.min_lr = total, warmup, min_lr
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        super().__init__(optimizer, last_epoch=start - 1)

    def get_lr(self) -> list:
        return [lr_at(self.last_epoch, self.total, base, self.warmup, self.min_lr)
                for base in self.base_lrs]


def make_optimizer(model, lr: float, weight_decay: float):
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=weight_decay)


def make_scheduler(optimizer, total: int, config, start: int = 0) -> WarmupCosineLR:
    """The warm-up/cosine schedule of ``config`` (fields warmup, min_lr) over ``total`` steps."""
    return WarmupCosineLR(optimizer, total, config.warmup, config.min_lr, start=start)


def train_step(model, optimizer, objective: str, batch: tuple, scheduler, config):
    """One AdamW step on ``batch = (input_ids, labels, lookahead)`` at the scheduler's current
    learning rate, then one scheduler step (``config``: grad_clip); returns (loss, NTP loss)."""
    device = next(model.parameters()).device
    loss, ntp = objective_loss(model, objective, *(t.to(device) for t in batch))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
    optimizer.step()
    scheduler.step()
    return loss, ntp


# -- E1 / star-long: star graph -------------------------------------------------------

@dataclass(frozen=True)
class StarConfig:
    """Star-graph training (spec §6, E1)."""

    graphs: tuple = ("2-4-12",)         # "degree-path_len-num_nodes"
    objectives: tuple = ("ntp", "top", "mtp", "dsmtp")
    steps: int = 2000                   # NTP / TOP / TOP-shuffled steps
    mtp_steps: int = 1000               # MTP / DS-MTP steps
    n_train: int = 50_000
    n_test: int = 2000
    n_eval_curve: int = 500             # test graphs used for the learning-curve points
    eval_every: int = 500
    batch_size: int = 128
    n_layer: int = 3
    n_embd: int = 96
    n_head: int = 4
    lr: float = 1e-3
    min_lr: float = 1e-5
    warmup: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    n_future: int = 2
    log_dir: str = ""                   # write a JSON-lines learning curve here when set
    checkpoint: bool = False            # with log_dir: save the training state at every
                                        # evaluation point and resume from it (long runs)
    top_positions: str = "window"       # TOP loss at every position (reference) or "labelled"
    min_seeds: int = 1                  # star-long: seeds a mean-over-seeds claim needs (else
                                        # INCOMPLETE)


def parse_graph(graph: str) -> tuple:
    """"degree-path_len-num_nodes" → (degree, path_len, num_nodes), checked like the generator."""
    parts = str(graph).replace(",", "-").split("-")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"graph must be 'degree-path_len-num_nodes' (e.g. '2-4-12'), got {graph!r}")
    degree, path_len, num_nodes = (int(p) for p in parts)
    if degree < 1 or path_len < 2 or num_nodes < degree * (path_len - 1) + 1:
        raise ValueError(f"graph {graph!r}: need degree >= 1, path_len >= 2 and num_nodes >= "
                         f"degree*(path_len-1)+1 = {degree * (path_len - 1) + 1}")
    return degree, path_len, num_nodes


def check_star_config(config: StarConfig) -> None:
    """Reject a star-graph config that cannot run as meant (before any training)."""
    for key in ("steps", "mtp_steps", "n_train", "n_test", "n_eval_curve", "eval_every",
                "batch_size", "n_layer", "n_embd", "n_head", "n_future", "min_seeds"):
        check_int(getattr(config, key), key, min_value=1)
    if config.n_embd % config.n_head:
        raise ValueError(f"n_embd ({config.n_embd}) must be a multiple of n_head ({config.n_head})")
    if config.batch_size > config.n_train:
        raise ValueError(f"batch_size ({config.batch_size}) exceeds n_train ({config.n_train})")
    if "top_unrelated" in config.objectives and config.batch_size < 2:
        raise ValueError("top_unrelated needs batch_size >= 2 (each row takes another row's targets)")
    if not (config.lr > 0 and 0 <= config.min_lr <= config.lr):
        raise ValueError(f"need lr > 0 and 0 <= min_lr <= lr, got lr={config.lr}, min_lr={config.min_lr}")
    if not config.graphs or not config.objectives:
        raise ValueError("graphs and objectives must be non-empty")
    for objective in config.objectives:
        check_choice(objective, "objective", list(OBJECTIVES))
    for graph in config.graphs:
        parse_graph(graph)
    check_choice(config.top_positions, "top_positions", ["window", "labelled"])


def star_tasks(config: StarConfig) -> list:
    return [{"graph": g, "objective": o} for g in config.graphs for o in config.objectives]


def star_setup(config: StarConfig, graph: str, objective: str, seed: int) -> tuple:
    """The seeded star-graph run's pieces: (train set, test set, curve subset, model, optimizer).

    The one place that fixes data seeds (train 10 000 + seed, test 20 000 + seed), the model
    and the optimiser, so that ``benchmarks/top_star_search.py`` trains exactly like ``run_star``."""
    degree, path_len, num_nodes = parse_graph(graph)
    torch.manual_seed(seed)
    train = make_star_graph_dataset(config.n_train, degree, path_len, num_nodes, seed=10_000 + seed)
    test = make_star_graph_dataset(config.n_test, degree, path_len, num_nodes, seed=20_000 + seed)
    curve_set = dataclasses.replace(test, tokens=test.tokens[: config.n_eval_curve])
    gpt = GPTConfig(vocab_size=train.vocab_size, block_size=train.tokens.shape[1],
                    n_layer=config.n_layer, n_head=config.n_head, n_embd=config.n_embd)
    model = build_model(objective, gpt, n_future=config.n_future, seed=seed,
                        top_positions=config.top_positions).to(job_device())
    return train, test, curve_set, model, make_optimizer(model, config.lr, config.weight_decay)


@uses_device
def run_star(config: StarConfig, seed: int, task: dict) -> dict:
    """Train one objective on one star-graph setting; return curves and final accuracies."""
    check_star_config(config)
    objective, cpu0 = task["objective"], time.process_time()
    steps = config.mtp_steps if objective in ("mtp", "dsmtp") else config.steps
    train, test, curve_set, model, optimizer = star_setup(config, task["graph"], objective, seed)
    labels_all, lookahead_all = train.hf_labels()
    check_token_data(train.vocab_size, train.input_ids, labels_all, lookahead_all)
    rng = np.random.default_rng(seed)
    order, cursor = rng.permutation(len(train)), 0
    name = f"{task['graph'].replace(',', '-')}_{objective}_seed{seed}"
    log_path = ckpt_path = None
    if config.checkpoint and not config.log_dir:
        raise ValueError("checkpoint=True needs log_dir (the folder the checkpoints go to)")
    if config.log_dir:
        os.makedirs(config.log_dir, exist_ok=True)
        log_path = os.path.join(config.log_dir, name + ".jsonl")
        ckpt_path = os.path.join(config.log_dir, name + ".ckpt") if config.checkpoint else None
    start, curve, losses, train_seconds = 0, [], deque(maxlen=config.eval_every), 0.0
    shuffle_gen = getattr(getattr(model, "loss_fn", None), "generator", None)
    if ckpt_path and os.path.exists(ckpt_path):
        saved = torch.load(ckpt_path, weights_only=False, map_location="cpu")
        if saved["config"] != _resumable_config(config) or saved["task"] != task or saved["seed"] != seed:
            raise ValueError(f"checkpoint {ckpt_path} was written by another configuration "
                             f"({saved['config']}, task {saved['task']}, seed {saved['seed']}); "
                             f"remove it or pass the same config")
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        rng.bit_generator.state = saved["rng"]
        torch.set_rng_state(saved["torch_rng"])
        if shuffle_gen is not None:
            shuffle_gen.set_state(saved["shuffle_rng"])
        order, cursor = saved["order"], saved["cursor"]
        start, curve = saved["step"], saved["curve"]
        losses.extend(saved["losses"])
        train_seconds = saved["train_seconds"]
    if log_path:  # the curve file always holds exactly the points of this run so far
        with open(log_path, "w") as fh:
            fh.writelines(json.dumps(point) + "\n" for point in curve)
    model.train()
    scheduler = make_scheduler(optimizer, steps, config, start=start)
    for step in range(start, steps):
        if cursor + config.batch_size > len(order):
            order, cursor = rng.permutation(len(train)), 0
        batch = torch.as_tensor(order[cursor : cursor + config.batch_size])
        cursor += config.batch_size
        t0 = time.perf_counter()
        loss, ntp = train_step(model, optimizer, objective,
                               (train.input_ids[batch], labels_all[batch], lookahead_all[batch]),
                               scheduler, config)
        train_seconds += time.perf_counter() - t0
        losses.append(float(ntp.detach()))      # the last eval_every steps
        if (step + 1) % config.eval_every == 0 or step + 1 == steps:
            ev = evaluate_star_graph(model, curve_set)
            point = {"step": step + 1, "exact": ev["exact"], "teacher_forced": ev["teacher_forced"],
                     "ntp_loss": float(np.mean(losses)),
                     "total_loss": float(loss.detach()), "seconds": train_seconds}
            curve.append(point)
            if log_path:
                with open(log_path, "a") as fh:
                    fh.write(json.dumps(point) + "\n")
            if ckpt_path:
                _save_checkpoint(ckpt_path, {
                    "config": _resumable_config(config), "task": dict(task), "seed": seed,
                    "step": step + 1, "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(), "rng": rng.bit_generator.state,
                    "torch_rng": torch.get_rng_state(),
                    "shuffle_rng": shuffle_gen.get_state() if shuffle_gen is not None else None,
                    "order": order, "cursor": cursor, "curve": curve, "losses": list(losses),
                    "train_seconds": train_seconds})
    final = evaluate_star_graph(model, test)
    return {"graph": task["graph"], "objective": objective, "steps": steps,
            "exact": final["exact"], "per_token": final["per_token"],
            "teacher_forced": final["teacher_forced"], "curve": curve,
            "steps_per_second": steps / max(train_seconds, 1e-9),
            "cpu_seconds": time.process_time() - cpu0}


SUMMARY_ONLY_FIELDS = ("min_seeds",)  # change claims, not training


def _resumable_config(config: StarConfig) -> dict:
    """The config fields a checkpoint must agree on: all but where logs go and which jobs the
    run holds (the job itself, graph and objective, is checked through its task)."""
    fields = dataclasses.asdict(config)
    for key in ("log_dir", "checkpoint", "graphs", "objectives", *SUMMARY_ONLY_FIELDS):
        fields.pop(key)
    return fields


def _save_checkpoint(path: str, state: dict) -> None:
    """Write atomically, so an interrupted save never leaves a truncated checkpoint."""
    with atomic_file(path) as tmp:
        torch.save(state, tmp)


def _star_frame(jobs) -> pd.DataFrame:
    rows = []
    for j in jobs:
        m = j.metrics
        rows.append({"graph": m["graph"], "objective": m["objective"], "seed": j.seed,
                     "steps": m["steps"], "exact": m["exact"],
                     "greedy per-token": " ".join(f"{a:.2f}" for a in m["per_token"]),
                     "teacher-forced": " ".join(f"{a:.2f}" for a in m["teacher_forced"]),
                     "steps/s": m["steps_per_second"]})
    return pd.DataFrame(rows)


def _curve_figure(jobs, title: str):
    fig, ax = subplots(figsize=(6, 3.5))
    for j in jobs:
        c = j.metrics["curve"]
        ax.plot([p["step"] for p in c], [p["exact"] for p in c], marker="o",
                label=f"{j.metrics['objective']} G({j.metrics['graph']}) s{j.seed}")
    ax.set_xlabel("training step")
    ax.set_ylabel("greedy exact-path accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _exact_by_objective(jobs, graph: str) -> dict:
    out = {}
    for j in jobs:
        if j.metrics["graph"] == graph:
            out.setdefault(j.metrics["objective"], []).append(j.metrics["exact"])
    return out


def summarize_star_a(jobs, config: StarConfig, label: str = "E1") -> Result:
    """Tier A measurements (claims in ``claims.toml``; ``label`` names the part in notes):
    NTP's Clever-Hans signature (exact at the plateau, teacher-forced token 2 at chance,
    later tokens by edge lookup) and TOP's exact minus NTP's ("does not hurt")."""
    graph = config.graphs[0]
    ntp = [j.metrics for j in jobs if j.metrics["objective"] == "ntp" and j.metrics["graph"] == graph]
    exact = _exact_by_objective(jobs, graph)
    measurements = {}
    if ntp:
        tf = np.mean([m["teacher_forced"] for m in ntp], axis=0)
        measurements.update(ntp_exact=float(np.mean(exact["ntp"])),
                            ntp_tf_later_min=float(tf[2:].min()), ntp_tf_token2=float(tf[1]))
    if "ntp" in exact and "top" in exact:
        measurements["top_minus_ntp"] = float(np.mean(exact["top"]) - np.mean(exact["ntp"]))
    notes = [f"{label}: G({graph}), {config.steps} steps for NTP/TOP, {config.mtp_steps} for "
             "MTP/DS-MTP; tier A validates the harness, not the paper's claim (see star-long)."]
    return Result(tables={"star_graph": _star_frame(jobs)},
                  figures={"star_graph_curves": _curve_figure(jobs, f"{label} star graph")},
                  measurements=measurements, notes=notes)


STAR_NULL_CONTROL = ("top_unrelated", "null control exact(TOP-unrelated)",
                     "(our control) another graph's TOP targets carry no signal")
STAR_SHUFFLED_CONTROL = ("top_shuffled", "shuffled-order control exact(TOP-shuffled)",
                         "(spec's control) scores permuted inside each window: same token set")


def summarize_star_b(jobs, config: StarConfig, label: str = "star-long",
                     transition: bool = True) -> Result:
    """Tier B measurements (the paper's claim; bars in ``claims.toml``) on the first graph of
    ``config.graphs`` (other graphs are reported in the notes): the mean over seeds of TOP's
    and NTP's exact, their margin, and the null control's margin (another graph's TOP
    targets, ``top_unrelated``) over NTP.

    A mean needs ``config.min_seeds`` finished seeds of every objective it uses, else the
    measurement is incomplete (never a pass). ``transition`` adds the per-seed transition
    measurements (:func:`_transition_measurements`). The shuffled-order control
    (``top_shuffled``) keeps each window's token set and is no null on star graphs (it broke
    through like TOP on seed 0), so it is reported in the notes beside NTP, not held to a bar.
    """
    measurements, notes, transition_tables = {}, [], []
    for i, graph in enumerate(config.graphs):
        exact = _exact_by_objective(jobs, graph)
        seeds = {o: sorted(j.seed for j in jobs if j.metrics["graph"] == graph
                           and j.metrics["objective"] == o) for o in exact}
        steps = sorted({j.metrics["steps"] for j in jobs if j.metrics["graph"] == graph})
        mean = {o: float(np.mean(v)) for o, v in exact.items()}

        def measure(value, needs):
            n = min(len(seeds[o]) for o in needs)
            note = f"G({graph}): mean over seeds {sorted(set().union(*(seeds[o] for o in needs)))}"
            short = f"{config.min_seeds} seeds needed, {n} finished" if n < config.min_seeds else ""
            return Measurement(value, incomplete=short, note=note)

        found = {}
        if "top" in exact:
            found["top_exact"] = measure(mean["top"], ["top"])
        if "top" in exact and "ntp" in exact:
            found["top_minus_ntp"] = measure(mean["top"] - mean["ntp"], ["top", "ntp"])
        if "ntp" in exact:
            found["ntp_exact"] = measure(mean["ntp"], ["ntp"])
        if "top_unrelated" in exact and "ntp" in exact:
            found["null_minus_ntp"] = measure(mean["top_unrelated"] - mean["ntp"], ["top_unrelated", "ntp"])
        if "top_shuffled" in exact and "ntp" in exact:
            notes.append(f"G({graph}): shuffled-order control exact(TOP-shuffled) − exact(NTP) = "
                         f"{mean['top_shuffled'] - mean['ntp']:+.3f} (reported: it keeps each window's "
                         "token set, so it tells which nodes lie ahead: not a null on star graphs; "
                         "the spec held it to <= NTP + 0.05)")
        notes.append(f"G({graph}): steps {steps}; seeds per objective {seeds}; each mean needs "
                     f"{config.min_seeds} seeds (INCOMPLETE before).")
        if i == 0:
            measurements.update(found)
            if transition:
                transition_found, transition_rows = _transition_measurements(jobs, graph)
                measurements.update(transition_found)
                transition_tables.extend(transition_rows)
        else:
            notes.append(f"G({graph}) (not the claimed graph): " + ", ".join(
                f"{k} {m.value:+.3f}" for k, m in found.items()))
    tables = {"star_long": _star_frame(jobs)}
    if transition_tables:
        tables["star_long_transition_by_seed"] = pd.DataFrame(transition_tables)
    return Result(tables=tables, figures={"star_long_curves": _curve_figure(jobs, label)},
                  measurements=measurements, notes=notes)


def _first_step_at(curve: list, threshold: float):
    return next((p["step"] for p in curve if p["exact"] >= threshold), None)


TRANSITION_SOLVED, TRANSITION_PLATEAU = 0.85, 0.65
TRANSITION_MIN_SEEDS = 5        # seeds the per-seed transition claims need (else INCOMPLETE)


def _steps_saved(run: dict, ntp: dict) -> tuple:
    """(run's steps to 0.85, NTP's, steps saved by the run): a run that never gets there
    counts as the budget, so two such runs tie."""
    budget = max(run["steps"], ntp["steps"])
    to_run = _first_step_at(run.get("curve") or [], TRANSITION_SOLVED)
    to_ntp = _first_step_at(ntp.get("curve") or [], TRANSITION_SOLVED)
    return to_run, to_ntp, (budget if to_ntp is None else to_ntp) - (budget if to_run is None else to_run)


def _transition_measurements(jobs, graph: str, min_seeds: int = TRANSITION_MIN_SEEDS) -> tuple:
    """Per-seed measurements for a seed-dependent transition (resolution, not from the paper).

    Whether and when a seed leaves the Clever-Hans plateau depends on the seed, so a mean over
    three seeds mixes solved and unsolved runs. Per seed: TOP *reaches* exact >= 0.85 within the
    budget (any curve point), NTP *stays* <= 0.65 for the whole budget (every curve point); each
    counted as the fraction of seeds (bar in ``claims.toml``: more than half), and TOP's
    steps-to-0.85 against NTP's on the same seed by a one-sided sign test (a seed that never
    reaches 0.85 counts as the budget, so two such runs tie). Each needs ``min_seeds`` seeds
    with both runs (default :data:`TRANSITION_MIN_SEEDS`), else it is incomplete.
    Returns ``(measurements, rows)``.
    """
    from icml26.core.stats import sign_test

    runs = {(j.metrics["objective"], j.seed): j.metrics for j in jobs if j.metrics["graph"] == graph}
    paired = sorted(s for (o, s) in runs if o == "top" and ("ntp", s) in runs)
    if not paired:
        return {}, []
    rows = []
    for s in paired:
        top, ntp = runs[("top", s)], runs[("ntp", s)]
        to_top, to_ntp, saved = _steps_saved(top, ntp)
        ntp_peak = max([p["exact"] for p in ntp.get("curve") or []] + [ntp["exact"]])
        rows.append({"graph": graph, "seed": s, "TOP steps to 0.85": to_top,
                     "NTP steps to 0.85": to_ntp, "NTP peak exact": ntp_peak,
                     "TOP final exact": top["exact"], "NTP final exact": ntp["exact"],
                     "TOP reached": to_top is not None, "NTP stayed": ntp_peak <= TRANSITION_PLATEAU,
                     "steps saved": saved})
    n = len(rows)
    frame = pd.DataFrame(rows)
    note = f"G({graph}): {n} paired seeds {paired}"
    short = f"{min_seeds} needed, {n} paired" if n < min_seeds else ""
    test = sign_test(frame["steps saved"].astype(float))
    measurements = {
        "seeds_top_reaches": Measurement(float(frame["TOP reached"].mean()), incomplete=short, note=note),
        "seeds_ntp_reaches": Measurement(float(frame["NTP steps to 0.85"].notna().mean()),
                                         incomplete=short, note=note),
        "seeds_ntp_stays": Measurement(float(frame["NTP stayed"].mean()), incomplete=short, note=note),
        "sign_p_top_first": Measurement(test["p"], incomplete=short,
                                        note=f"{note}; TOP earlier on {test['wins']}, later on "
                                             f"{test['losses']}, tie on {test['ties']}"),
    }
    nulls = [s for s in paired if ("top_unrelated", s) in runs]
    if nulls:   # the negative control of the sign test: the null head's steps against NTP's
        saved = [float(_steps_saved(runs[("top_unrelated", s)], runs[("ntp", s)])[2]) for s in nulls]
        measurements["sign_p_null_first"] = sign_test(np.array(saved))["p"]
    return measurements, rows


def summarize_star_small(jobs, config: StarConfig) -> Result:
    """star-small: star-long's measurements on the small configuration, plus the paired view.

    Over three seeds a one-sided sign test cannot go below p = 1/8 = 0.125, so significance at
    0.05 is out of reach by construction: the claims are star-long's bars on the means, the
    margin bar applied to *every* seed (the smallest per-seed margin; its negative control the
    smallest margin of the null control where it ran), and NTP's shortcut signature
    (teacher-forced path token 2 at chance, later tokens by edge lookup). The per-seed margins,
    the sign test and a t interval are reported beside them.
    """
    from icml26.core.stats import sign_test

    result = summarize_star_b(jobs, config, label="star-small", transition=False)
    measurements, notes, tables = dict(result.measurements), list(result.notes), dict(result.tables)
    graph = config.graphs[0]
    by = {(j.metrics["objective"], j.seed): j.metrics for j in jobs if j.metrics["graph"] == graph}
    seeds = sorted({s for o, s in by if o == "ntp"} & {s for o, s in by if o == "top"})
    rows = []
    for s in seeds:
        ntp, top = by[("ntp", s)], by[("top", s)]
        null = by.get(("top_unrelated", s))
        rows.append({"seed": s, "exact NTP": ntp["exact"], "exact TOP": top["exact"],
                     "TOP − NTP": top["exact"] - ntp["exact"],
                     "NTP greedy per-token": " ".join(f"{a:.2f}" for a in ntp["per_token"]),
                     "NTP teacher-forced": " ".join(f"{a:.2f}" for a in ntp["teacher_forced"]),
                     "TOP step ≥ 0.85 (curve)": _first_step_at(top["curve"], 0.85),
                     "exact null control": null["exact"] if null else float("nan")})
    if rows:
        paired = pd.DataFrame(rows)
        tables["star_small_paired"] = paired
        margins = paired["TOP − NTP"].to_numpy(float)
        short = (f"{config.min_seeds} seeds needed, {len(seeds)} finished"
                 if len(seeds) < config.min_seeds else "")
        note = f"G({graph}): seeds {seeds}"
        measurements["min_margin"] = Measurement(
            float(margins.min()), incomplete=short,
            note=note + "; per-seed margins " + ", ".join(f"{m:+.3f}" for m in margins))
        nulls = paired["exact null control"].to_numpy(float) - paired["exact NTP"].to_numpy(float)
        if np.isfinite(nulls).all():
            measurements["null_min_margin"] = float(nulls.min())
        tf = np.array([by[("ntp", s)]["teacher_forced"] for s in seeds])
        measurements["ntp_tf_token2"] = Measurement(
            float(tf[:, 1].mean()), incomplete=short,
            note=note + "; per seed " + ", ".join(f"{a:.3f}" for a in tf[:, 1]))
        measurements["ntp_tf_later_min"] = Measurement(float(tf[:, 2:].min()), incomplete=short, note=note)
        sign = sign_test(margins)
        low, high = paired_t_interval(margins)
        notes.append(f"G({graph}) paired over seeds {seeds}: TOP − NTP margins "
                     f"{', '.join(f'{m:+.3f}' for m in margins)}; mean {margins.mean():+.3f}, "
                     f"t 95 % interval of the mean [{low:+.3f}, {high:+.3f}] ({len(margins)} seeds); "
                     f"sign test {sign['wins']} wins / {sign['losses']} losses, one-sided p = "
                     f"{sign['p']:.3f} — with {len(margins)} seeds p cannot go below "
                     f"{0.5 ** max(len(margins), 1):.3f}, so no p < 0.05 is claimed; the bar is "
                     "applied to each seed instead.")
    return Result(tables=tables, figures=result.figures, measurements=measurements, notes=notes)


# -- E2: char-level text LM -----------------------------------------------------------

@dataclass(frozen=True)
class TextConfig:
    """Char-level LM on the stdlib corpus (spec §6, E2)."""

    objectives: tuple = ("ntp", "top", "top_unrelated", "mtp")
    steps: int = 300                    # spec: ~800 at batch 32; cut to fit the CPU budget
    seq_len: int = 128                  # T; the TOP window is W = T (rows of 2T chars)
    batch_size: int = 16
    n_layer: int = 4
    n_embd: int = 128
    n_head: int = 4
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup: int = 50
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    n_future: int = 2
    n_val_rows: int = 128
    ndcg_k: int = 10
    ndcg_gain: str = "graded"           # the NDCG the claim uses; "binary" is the spec's (saturated)


@functools.lru_cache(maxsize=1)
def stdlib_char_ids():
    """(train, val, test) id arrays of the char-tokenised stdlib corpus, and its SHA-1."""
    text = load_stdlib_corpus()
    ids = CharTokenizer().encode(text)
    return split_corpus(ids), corpus_sha1(text)


def _text_rows(ids: np.ndarray, starts: np.ndarray, seq_len: int):
    """input_ids (B,T), HF labels (B,T), look-ahead (B,T) from rows of 2T chars."""
    rows = torch.as_tensor(np.stack([ids[s : s + 2 * seq_len] for s in starts]))
    return rows[:, :seq_len], rows[:, :seq_len], rows[:, seq_len:]


def text_tasks(config: TextConfig) -> list:
    return [{"objective": o} for o in config.objectives]


@torch.no_grad()
def _text_eval(model, objective: str, val: np.ndarray, config: TextConfig) -> dict:
    model.eval()
    T = config.seq_len
    starts = np.arange(config.n_val_rows) * T
    starts = starts[starts + 2 * T <= len(val)]
    ces, ndcg = [], {}          # ndcg[(head, gain)] -> per-chunk means
    for chunk in np.array_split(starts, max(1, len(starts) // 32)):
        device = next(model.parameters()).device
        input_ids, labels, lookahead = (t.to(device) for t in _text_rows(val, chunk, T))
        row = shift_labels(labels, lookahead, IGNORE)
        if objective in TOP_OBJECTIVES:
            out = model(input_ids, return_top_logits=True)
        else:
            out = model(input_ids)
        ces.append(float(causal_lm_loss(out.logits, row[:, :T], IGNORE)))
        dense = top_targets(row, CharTokenizer().vocab_size, window=T, ignore_index=IGNORE, seq_len=T)
        heads = {"ntp_logits": out.logits, "top_head": getattr(out, "top_logits", None)}
        for head, scores in heads.items():
            for gain in NDCG_GAINS:
                if scores is not None:
                    value = torch.nanmean(ndcg_at_k(scores, dense, config.ndcg_k, gain))
                    ndcg.setdefault((head, gain), []).append(float(value))
    model.train()
    metrics = {"val_ce": float(np.mean(ces))}
    for head in ("ntp_logits", "top_head"):
        for gain, prefix in NDCG_GAINS.items():
            values = ndcg.get((head, gain))
            metrics[prefix + head] = float(np.mean(values)) if values else None
    return metrics


@uses_device
def run_text(config: TextConfig, seed: int, task: dict) -> dict:
    """Train one objective on the stdlib char corpus; validation CE and NDCG@k."""
    objective, cpu0 = task["objective"], time.process_time()
    check_choice(config.ndcg_gain, "ndcg_gain", list(NDCG_COLUMNS))
    (train, val, _), sha1 = stdlib_char_ids()
    torch.manual_seed(seed)
    vocab = CharTokenizer().vocab_size
    check_labels(torch.as_tensor(train)[None], vocab, IGNORE, name="corpus")   # once per job
    gpt = GPTConfig(vocab_size=vocab, block_size=config.seq_len, n_layer=config.n_layer,
                    n_head=config.n_head, n_embd=config.n_embd, tie_embeddings=True)
    model = build_model(objective, gpt, n_future=config.n_future, seed=seed).to(job_device())
    optimizer = make_optimizer(model, config.lr, config.weight_decay)
    rng = np.random.default_rng(seed)
    T, seconds = config.seq_len, 0.0
    model.train()
    scheduler = make_scheduler(optimizer, config.steps, config)
    for step in range(config.steps):
        starts = rng.integers(0, len(train) - 2 * T, size=config.batch_size)
        batch = _text_rows(train, starts, T)
        t0 = time.perf_counter()
        train_step(model, optimizer, objective, batch, scheduler, config)
        seconds += time.perf_counter() - t0
    metrics = _text_eval(model, objective, val, config)
    metrics.update({"objective": objective, "steps": config.steps, "corpus_sha1": sha1,
                    "steps_per_second": config.steps / max(seconds, 1e-9),
                    "n_params": sum(p.numel() for p in model.parameters()),
                    "cpu_seconds": time.process_time() - cpu0})
    return metrics


def _mean_std_or_dash(values: pd.Series) -> str:
    """mean ± std of a metric only some objectives have ("-" where any seed lacks it)."""
    return format_mean_std(values.astype(float)) if values.notna().all() else "-"


NDCG_GAINS = {"binary": "ndcg_", "graded": "ndcg_graded_", "exponential": "ndcg_exp_"}
NDCG_COLUMNS = {gain: (prefix + "top_head", prefix + "ntp_logits") for gain, prefix in NDCG_GAINS.items()}


def ndcg_measurements(frame: pd.DataFrame, config: TextConfig) -> tuple:
    """The TOP-head ranking measurements under ``config.ndcg_gain``.

    ``ndcg_gain``: the mean per-seed paired gain NDCG@k (TOP head of the NTP+TOP run − NTP
    logits of the NTP run, same seed) with its 95 % t-interval over seeds (the claim's bar, > 0:
    the head ranks better than the NTP logits, and the spec's 0.05, are in ``claims.toml``);
    ``ndcg_gain_unrelated``: the same for the TOP head of a model trained on another row's TOP
    targets (``top_unrelated``), the negative control. The other gains' gaps go to a table.

    With binary gains almost every frequent character of a 128-character window is "in the
    window", so the NTP logits already score about 0.95 and the gap is capped by
    1 − NDCG(NTP logits) (0.048 on the full run): below 0.05 by construction. The graded
    gain (an in-window token gains its TOP score W + 1 − offset) also rewards the order; the
    exponential gain 2^(W + 1 − offset) − 1 weighs the nearest tokens most.
    Returns ``(measurements, rows of the by-gain table)``.
    """
    measurements, rows = {}, []
    for gain in (config.ndcg_gain, *(g for g in NDCG_COLUMNS if g != config.ndcg_gain)):
        top_col, ntp_col = NDCG_COLUMNS[gain]
        if top_col not in frame or frame[top_col].isna().all():
            rows.append({"gain": gain, "TOP head": None, "NTP logits": None, "TOP head − NTP logits": None,
                         "95 % t-interval": "not measured in this run", "seeds": 0})
            continue
        gains = ndcg_gain_by_seed(frame, gain)
        mean, (lo, hi) = float(gains["gain"].mean()), paired_t_interval(gains["gain"])
        ntp = float(gains["NTP logits"].mean())
        note = (f"{gain} gains: TOP head {gains['TOP head'].mean():.3f} vs NTP logits {ntp:.3f}, "
                f"paired over {len(gains)} seeds, 95 % t-interval [{lo:.4f}, {hi:.4f}]; largest "
                f"possible gap 1 − {ntp:.3f} = {1 - ntp:.3f}")
        rows.append({"gain": gain, "TOP head": float(gains["TOP head"].mean()), "NTP logits": ntp,
                     "TOP head − NTP logits": mean, "95 % t-interval": f"[{lo:.4f}, {hi:.4f}]",
                     "seeds": len(gains)})
        if gain != config.ndcg_gain:
            continue
        interval = (lo, hi) if len(gains) >= 2 else None
        measurements["ndcg_gain"] = Measurement(mean, interval=interval, note=note)
        if "objective" in frame and (frame.objective == "top_unrelated").any():
            ctrl = ndcg_gain_by_seed(frame, gain, head="top_unrelated")
            c_lo, c_hi = paired_t_interval(ctrl["gain"])
            measurements["ndcg_gain_unrelated"] = Measurement(
                float(ctrl["gain"].mean()), interval=(c_lo, c_hi) if len(ctrl) >= 2 else None)
    return measurements, rows


def ndcg_gain_by_seed(frame: pd.DataFrame, gain: str = "graded", head: str = "top") -> pd.DataFrame:
    """Per seed: NDCG@k of the TOP head (of the ``head`` objective's run: NTP+TOP, or the
    TOP-unrelated control) − NDCG@k of the NTP logits (NTP run), paired by seed (the claim's
    gap is the mean of these when every seed has both runs)."""
    top_col, ntp_col = NDCG_COLUMNS[gain]
    top = frame[frame.objective == head].set_index("seed")[top_col].astype(float)
    ntp = frame[frame.objective == "ntp"].set_index("seed")[ntp_col].astype(float)
    seeds = sorted(set(top.index) & set(ntp.index))
    return pd.DataFrame({"seed": seeds, "TOP head": [top[s] for s in seeds],
                         "NTP logits": [ntp[s] for s in seeds],
                         "gain": [top[s] - ntp[s] for s in seeds]})


def ndcg_spread_note(gains: pd.DataFrame, config: TextConfig, bar: float = 0.05) -> str:
    """mean ± sd of the per-seed NDCG gain, its 95 % t-interval, and where the bar sits."""
    g = gains["gain"].to_numpy(float)
    if len(g) < 2:
        return f"{config.ndcg_gain} NDCG gain per seed: {g.round(4).tolist()} (one seed: no spread)"
    mean, sd = float(g.mean()), float(g.std(ddof=1))
    lo, hi = paired_t_interval(g)
    where = "inside" if lo <= bar <= hi else "above" if bar > hi else "below"
    return (f"{config.ndcg_gain} NDCG gain per seed {dict(zip(gains.seed.tolist(), g.round(4).tolist()))}: "
            f"mean {mean:.4f} ± sd {sd:.4f} over {len(g)} seeds, 95 % t-interval "
            f"[{lo:.4f}, {hi:.4f}]; the bar {bar} lies {where} it")


def summarize_text(jobs, config: TextConfig, label: str = "E2") -> Result:
    """E2's measurements: the validation-CE gap of NTP+TOP over NTP (``ce_gap``) and the
    TOP head's ranking gain (:func:`ndcg_measurements`); MTP's CE is in the table. ``label``
    is the part's name (kept for callers; the claims' names come from ``claims.toml``)."""
    frame = pd.DataFrame([{**{k: v for k, v in j.metrics.items() if k != "corpus_sha1"}, "seed": j.seed}
                          for j in jobs])
    by = {o: frame[frame.objective == o] for o in frame.objective.unique()}
    table = []
    for o, f in by.items():
        table.append({"objective": o, "val CE (nats/char)": format_mean_std(f.val_ce),
                      "NDCG@10 NTP logits": format_mean_std(f.ndcg_ntp_logits),
                      "NDCG@10 TOP head": _mean_std_or_dash(f.ndcg_top_head),
                      "graded NDCG@10 NTP logits": format_mean_std(f.ndcg_graded_ntp_logits),
                      "graded NDCG@10 TOP head": _mean_std_or_dash(f.ndcg_graded_top_head),
                      "steps/s": f"{f.steps_per_second.mean():.2f}", "params": int(f.n_params.iloc[0]),
                      "seeds": len(f)})
    measurements, by_gain = {}, []
    if "ntp" in by and "top" in by:
        measurements["ce_gap"] = float(by["top"].val_ce.mean() - by["ntp"].val_ce.mean())
        found, by_gain = ndcg_measurements(frame, config)
        measurements.update(found)
    sha = sorted({j.metrics["corpus_sha1"] for j in jobs})
    tables = {"text_lm": pd.DataFrame(table)}
    spread = []
    if "ntp" in by and "top" in by:
        gains = ndcg_gain_by_seed(frame, config.ndcg_gain)
        tables["ndcg_gain_by_seed"] = gains
        tables["ndcg_gain_by_gain"] = pd.DataFrame(by_gain)
        spread = [ndcg_spread_note(gains, config)]
    notes = [f"stdlib corpus SHA-1 {', '.join(sha)}; {config.steps} steps, T = W = {config.seq_len}.",
             *spread,
             f"NDCG claim uses {config.ndcg_gain} gains (graded: gain = TOP target score W + 1 − "
             "offset, our addition; binary: the spec's, saturated near 0.95 for the NTP logits); "
             "the other is reported.",
             "The paper's benchmark gains (FineWeb-Edu pretraining, 340M–7B) cannot be tested at this scale."]
    return Result(tables=tables, measurements=measurements, notes=notes)


# -- scaling --------------------------------------------------------------------------

@dataclass(frozen=True)
class ScalingConfig:
    """Target-construction scaling and training-step cost (spec §6)."""

    lengths: tuple = (256, 512, 1024, 2048)     # T + W, with W = T
    vocab_size: int = 256
    batch_size: int = 8
    repeats: int = 5
    step_objectives: tuple = ("ntp", "top", "mtp")
    step_repeats: int = 15
    step_seq_len: int = 128
    step_batch: int = 32


def _min_time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


@cpu_only("a CPU-seconds measurement")
def run_scaling(config: ScalingConfig, seed: int) -> dict:
    """Time ``top_targets`` over lengths and one training step per objective."""
    gen = torch.Generator().manual_seed(seed)
    target_seconds = []
    for length in config.lengths:
        labels = torch.randint(0, config.vocab_size, (config.batch_size, length), generator=gen)
        fn = functools.partial(top_targets, labels, config.vocab_size, length // 2)
        fn()
        target_seconds.append(_min_time(fn, config.repeats))
    torch.manual_seed(seed)
    T, vocab = config.step_seq_len, CharTokenizer().vocab_size
    gpt = GPTConfig(vocab_size=vocab, block_size=T, n_layer=4, n_head=4, n_embd=128)
    ids = torch.randint(0, vocab, (config.step_batch, 2 * T), generator=gen)
    batch = (ids[:, :T], ids[:, :T], ids[:, T:])
    steps = {}
    for objective in config.step_objectives:
        model = build_model(objective, gpt, n_future=2, seed=seed)
        opt = make_optimizer(model, 1e-3, 0.0)

        def step(model=model, opt=opt, objective=objective):
            loss, _ = objective_loss(model, objective, *batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        step()
        steps[objective] = step
    # interleave objectives so machine load hits them alike
    best = {o: float("inf") for o in steps}
    for _ in range(config.step_repeats):
        for o, fn in steps.items():
            best[o] = min(best[o], _min_time(fn, 1))
    return {"lengths": list(config.lengths), "target_seconds": target_seconds, "step_seconds": best}


def summarize_scaling(jobs, config: ScalingConfig) -> Result:
    slopes = [loglog_slope(j.metrics["lengths"], j.metrics["target_seconds"]) for j in jobs]
    step = {o: float(np.mean([j.metrics["step_seconds"][o] for j in jobs])) for o in config.step_objectives}
    measurements = {"target_slope": float(np.mean(slopes))}
    if "ntp" in step and "top" in step:
        measurements["step_ratio"] = step["top"] / step["ntp"]
    target_table = pd.DataFrame({"T+W": jobs[0].metrics["lengths"],
                                 "seconds (min)": jobs[0].metrics["target_seconds"]})
    step_table = pd.DataFrame([{"objective": o, "step seconds (min)": s,
                                "ratio vs NTP": s / step["ntp"] if "ntp" in step else float("nan")}
                               for o, s in step.items()])
    return Result(tables={"target_scaling": target_table, "step_cost": step_table},
                  measurements=measurements,
                  notes=["Timings on a shared 2-core machine: minima over repeats."])


# -- registration ---------------------------------------------------------------------

STAR_QUICK = StarConfig(steps=40, mtp_steps=20, n_train=2000, n_test=200, n_eval_curve=200,
                        eval_every=20, batch_size=32, n_layer=2, n_embd=48)
STAR_FULL = StarConfig(steps=1000, mtp_steps=300)      # default E1: 1000 / 300 steps (spec: 2000 / 1000)
STAR_SPEC = StarConfig()                                # E1-full: the spec's 2000 / 1000 steps
STAR_LONG = StarConfig(objectives=("ntp", "top", "top_unrelated"), steps=30_000, eval_every=500,
                       min_seeds=3, log_dir=os.path.join("reports", "top-star-long"), checkpoint=True)
STAR_LONG_QUICK = StarConfig(objectives=("ntp", "top", "top_shuffled", "top_unrelated"), steps=30,
                             n_train=2000, n_test=200, n_eval_curve=200, eval_every=15,
                             batch_size=32, n_layer=2, n_embd=48)
# star-small. The pre-registered dev search (benchmarks/top_star_search.py, dev seeds
# 100-101, rule in its docstring and the README) found NO configuration within its budget in which
# NTP+TOP breaks through: its most promising candidate (below; G(2,4,12), E1's 3x96 model, batch 64,
# constant lr 1e-3) was still on the Clever-Hans plateau (exact 0.43-0.51) at 5250 steps (the
# budget) and at ~10,000 steps (beyond it) on dev seed 100. The rule then says "no star-small".
# Declared deviation: the part is kept as the 3-seed MEASUREMENT at the ~30-minute budget (not a
# configuration shown to work): 7500 steps ~ 580 CPU-s per job at 0.077 CPU-s/step, NTP and TOP x
# 3 seeds ~ 58 CPU-min ~ 29 min on two cores (add the null control with --set objectives=...).
# Its claims carry star-long's bars unchanged. Run on seeds 0-2 (2026-12-04, README): NTP on the
# plateau with the shortcut signature on every seed; TOP 0.716 / 0.794 / 0.487 (the TOP claims FAIL).
STAR_SMALL = StarConfig(graphs=("2-4-12",), objectives=("ntp", "top"),
                        steps=7500, eval_every=250, batch_size=64, n_layer=3, n_embd=96,
                        lr=1e-3, min_lr=1e-3, min_seeds=3,
                        log_dir=os.path.join("reports", "top-star-small"), checkpoint=True)
STAR_SMALL_QUICK = dataclasses.replace(STAR_LONG_QUICK, objectives=("ntp", "top", "top_unrelated"),
                                       min_lr=STAR_LONG_QUICK.lr)
TEXT_QUICK = TextConfig(steps=30, seq_len=64, batch_size=8, n_layer=2, n_embd=64, n_val_rows=32)
TEXT_FULL = TextConfig(steps=200)                       # default E2
TEXT_SPEC = TextConfig()                                # E2-full: 300 steps, batch 16
TEXT_SEEDS = TextConfig(objectives=("ntp", "top", "top_unrelated"), steps=200)   # E2-seeds: E2 on 5 seeds
TEXT_SEEDS_QUICK = dataclasses.replace(TEXT_QUICK, objectives=("ntp", "top"))
SCALING_QUICK = ScalingConfig(lengths=(128, 256, 512), repeats=3, step_repeats=3, step_batch=8,
                              step_seq_len=64)
SCALING_FULL = ScalingConfig()

EXPERIMENT = register(Experiment(     # title, claims, parts' descriptions: claims.toml
    slug="top",
    parts=[
        Part(name="E1", run=run_star, summarize=summarize_star_a, quick=STAR_QUICK, full=STAR_FULL,
             seeds=(0,), quick_seeds=(0,), tasks=star_tasks),
        Part(name="E2", run=run_text, summarize=summarize_text, quick=TEXT_QUICK, full=TEXT_FULL,
             seeds=(0, 1, 2), quick_seeds=(0,), tasks=text_tasks),
        Part(name="scaling", run=run_scaling, summarize=summarize_scaling, quick=SCALING_QUICK,
             full=SCALING_FULL, seeds=(0,), quick_seeds=(0,)),
        Part(name="E1-full", run=run_star, summarize=functools.partial(summarize_star_a, label="E1-full"),
             quick=STAR_QUICK, full=STAR_SPEC, seeds=(0,), quick_seeds=(0,), tasks=star_tasks),
        Part(name="E2-full", run=run_text, summarize=functools.partial(summarize_text, label="E2-full"),
             quick=TEXT_QUICK, full=TEXT_SPEC, seeds=(0, 1, 2), quick_seeds=(0,), tasks=text_tasks),
        Part(name="star-small", run=run_star, summarize=summarize_star_small, quick=STAR_SMALL_QUICK,
             full=STAR_SMALL, seeds=(0, 1, 2), quick_seeds=(0,), tasks=star_tasks),
        Part(name="E2-seeds", run=run_text, summarize=functools.partial(summarize_text, label="E2-seeds"),
             quick=TEXT_SEEDS_QUICK, full=TEXT_SEEDS, seeds=(0, 1, 2, 3, 4), quick_seeds=(0, 1),
             tasks=text_tasks),
        Part(name="star-long", run=run_star, summarize=summarize_star_b, quick=STAR_LONG_QUICK,
             full=STAR_LONG, seeds=(0, 1, 2), quick_seeds=(0,), tasks=star_tasks),
    ],
))
