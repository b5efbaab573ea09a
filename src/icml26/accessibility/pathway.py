"""The diagnostic pathway: a zero-initialised low-rank bypass from layer ``m`` into the readout.

Reference: *Capacity without Access: Reinterpreting the Mid-Depth Spectral Plateau in LLMs*
(ICML 2026). The abstract says a minimal pathway routing an intermediate layer's embedding to
the terminal readout changes the model's behaviour. Its architecture and training recipe could
not be read; what follows is a **Resolution (not from the paper)**:

``z_t = W_U [ N_γ(h^L_t) + b + B A (n(h^m_t) − μ_m) ]`` ("post-norm" injection), with
``n(x) = x / rms(x)``, ``μ_m`` the train mean of ``n(h^m)`` (centring), ``A ~ N(0, 1/d)``,
``B = 0`` (the model is unchanged at step 0) and a learned bias ``b`` that every arm has —
so a bypass cannot win by learning a domain/unigram shift. Controls with the same rank and
budget: ``m = L`` (pure adapter capacity), ``m = 0``, ``control="shuffled"`` (rows of
``n(h^m)`` permuted across tokens: marginal statistics only) and ``control="bias_only"``
(``z = W_U[N_γ(h^L) + b]``). Training: next-token CE on cached train tokens, the base frozen,
AdamW, dev CE every ``eval_every`` steps with the best checkpoint kept (step 0 = the base, so
dev ΔCE ≥ 0 by construction) and stopping after ``patience`` evaluations without improvement
(the patience rule is ours).

The protocol of the experiment (a Resolution): the bias-only arm is trained first, to
its dev-CE plateau (:func:`fit_shared_bias`), and that ``b`` is then **frozen and shared** by
every arm (``fit_pathway(..., bias=b)``), so the token-specific gain
``G(m) = CE_bias-only − CE_path(m)`` measures what the tokens of layer ``m`` add, not how far
each arm's own bias got. The "pre-norm" variant ``z = W_U N_γ(h^L + B A n(h^m)) + W_U b``
is available too (it recomputes the norm: a full ``d × V`` product per step).

Post-norm steps never form ``W_U`` times a ``d``-vector per token: the logit change is
``(x Aᵀ)(W_U B)ᵀ + W_U b``, rank ``r`` plus a constant, and the gradients are written out
(:func:`_post_norm_step`; checked against autograd in the tests), so a step costs
``O(B·V·r)`` on cached base logits.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from icml26.core.cache import atomic_folder
from icml26.core.device import resolve_device, to_numpy
from icml26.core.validation import check_choice, check_int, check_scalar_in

from .metrics import LayerStats, accessibility_metrics, readout_basis_from_weights, rms_normalize

__all__ = ["DiagnosticPathway", "PathwaySplit", "PathwayCache", "PathwayResult", "build_pathway_cache",
           "fit_pathway", "fit_shared_bias", "bootstrap_gain", "save_pathway_cache", "load_pathway_cache", "INJECTIONS", "CONTROLS"]

INJECTIONS = ("post_norm", "pre_norm")
CONTROLS = (None, "shuffled", "bias_only")
_SPLITS = ("train", "dev", "test")


class DiagnosticPathway(torch.nn.Module):
    """Low-rank bypass from a source layer's normalised state into the terminal readout input.

    Parameters
    ----------
    d_model : int
    rank : int
        ``r``; ``rank >= d_model`` is allowed (a "full" bypass).
    injection : {"post_norm", "pre_norm"}
        Add the bypass after the final norm (default) or before it.
    learn_bias : bool
        Include the learned readout-input bias ``b``.
    bypass : bool
        Include ``B A``; ``False`` gives the bias-only arm.
    seed : int
        Seed of ``A``'s ``N(0, 1/d)`` initialisation (``B`` starts at zero).
    n_sources : int
        Number of source layers whose states are concatenated along the last dimension (each
        block of ``d_model`` is RMS-normalised on its own); ``A`` is ``r × (n_sources·d)``. The
        incremental arm ``[h^L; h^m]`` uses 2: at the same rank as the ``h^L`` arm, it separates
        what layer ``m`` adds from adapter capacity (a Resolution, not from the paper).

    References
    ----------
    "Capacity without Access: Reinterpreting the Mid-Depth Spectral Plateau in LLMs", ICML 2026
    (authors not retrieved; see the package README). Its diagnostic low-rank pathway from a
    mid-depth layer to the readout.

    Examples
    --------
    >>> path = DiagnosticPathway(16, rank=4)
    >>> h_final, h_src = torch.randn(3, 16), torch.randn(3, 16)
    >>> bool(torch.equal(path(h_final, h_src), h_final))   # zero-initialised: no change
    True
    """

    def __init__(self, d_model: int, rank: int = 8, injection: str = "post_norm", learn_bias: bool = True,
                 bypass: bool = True, seed: int = 0, n_sources: int = 1):
        super().__init__()
        self.d_model = check_int(d_model, "d_model", min_value=1)
        self.n_sources = check_int(n_sources, "n_sources", min_value=1)
        d_in = self.n_sources * d_model
        self.rank = check_int(rank, "rank", min_value=1)
        self.injection = check_choice(injection, "injection", INJECTIONS)
        self.learn_bias = bool(learn_bias)
        self.bypass = bool(bypass)
        if not (self.learn_bias or self.bypass):
            raise ValueError("a pathway needs the bypass, the bias, or both (learn_bias=False and bypass=False)")
        check_int(seed, "seed", min_value=0)
        g = torch.Generator().manual_seed(seed)
        self.A = torch.nn.Parameter(torch.randn(self.rank, d_in, generator=g) / d_in ** 0.5,
                                    requires_grad=self.bypass)
        self.B = torch.nn.Parameter(torch.zeros(d_model, self.rank), requires_grad=self.bypass)
        self.bias = torch.nn.Parameter(torch.zeros(d_model), requires_grad=self.learn_bias)
        self.register_buffer("source_mean", torch.zeros(d_in))

    def source_features(self, source_states: torch.Tensor) -> torch.Tensor:
        """``n(h^m) − μ``: RMS-normalised (per source block), centred source states."""
        blocks = source_states.float().split(self.d_model, dim=-1)
        return torch.cat([rms_normalize(b) for b in blocks], dim=-1) - self.source_mean

    def delta(self, source_states: torch.Tensor) -> torch.Tensor:
        """The bypass term ``B A (n(h^m) − μ)`` (zeros for the bias-only arm)."""
        if not self.bypass:
            return torch.zeros(*source_states.shape[:-1], self.d_model, dtype=torch.float32,
                               device=source_states.device)
        return (self.source_features(source_states) @ self.A.T) @ self.B.T

    def forward(self, final_states: torch.Tensor, source_states: torch.Tensor, norm=None) -> torch.Tensor:
        """The new readout input (feed it to ``lm_head``).

        Parameters
        ----------
        final_states : Tensor (..., d)
            ``post_norm``: the normed final state ``N_γ(h^L)``; ``pre_norm``: the pre-norm ``h^L``.
        source_states : Tensor (..., n_sources·d)
            The raw source state ``h^m`` (normalised inside); several layers concatenated.
        norm : module, required for ``pre_norm``
            The model's final norm.
        """
        if final_states.shape[-1] != self.d_model or source_states.shape[-1] != self.n_sources * self.d_model:
            raise ValueError(f"final_states must have last dimension {self.d_model} and source_states "
                             f"{self.n_sources * self.d_model} ({self.n_sources} source layer(s))")
        if self.injection == "post_norm":
            return final_states + self.bias + self.delta(source_states)
        if norm is None:
            raise ValueError("injection='pre_norm' needs the model's final norm (norm=...)")
        return norm(final_states + self.delta(source_states)) + self.bias


@dataclass
class PathwaySplit:
    """Cached arrays of one token split (row ``i`` = one predicted position).

    Attributes
    ----------
    base_logits : array (N, V) float32 — the frozen model's logits ``W_U N_γ(h^L)``
    labels : array (N,) int64 — next tokens
    final_normed : array (N, d) float32 — ``N_γ(h^L)``, the base readout input
    final_states : array (N, d) float32 — pre-norm ``h^L`` (for the pre-norm variant)
    sources : dict int -> array (N, d) float32 — ``n(h^m)`` per cached source layer
    """

    base_logits: np.ndarray
    labels: np.ndarray
    final_normed: np.ndarray
    final_states: np.ndarray
    sources: dict
    base_stats: dict | None = None

    @property
    def n_tokens(self) -> int:
        return int(self.labels.shape[0])

    def base_summary(self, batch: int = 1024) -> dict:
        """Per-token statistics of the base logits, computed once (at build time, or here on first
        use) and shared by every arm's evaluation: ``lse`` (log-partition, float32), ``argmax``
        (int64) and ``label_logit`` (the base logit of the next token, float32)."""
        if self.base_stats is None:
            parts = {"lse": [], "argmax": [], "label_logit": []}
            out = None
            for start in range(0, self.n_tokens, batch):
                z = torch.from_numpy(np.array(self.base_logits[start:start + batch], dtype=np.float32))
                y = torch.from_numpy(np.array(self.labels[start:start + batch], dtype=np.int64))
                out = torch.empty_like(z) if out is None or out.shape != z.shape else out
                for key, value in _base_stats(z, y, out).items():
                    parts[key].append(value.numpy())
            self.base_stats = {k: np.concatenate(v) for k, v in parts.items()}
        return self.base_stats


@dataclass
class PathwayCache:
    """Train/dev/test :class:`PathwaySplit`\\ s plus the readout (``W_U``, the norm's ``γ`` and eps).

    References
    ----------
    "Capacity without Access: Reinterpreting the Mid-Depth Spectral Plateau in LLMs", ICML 2026
    (authors not retrieved; see the package README). The cached states its pathway arms are trained
    on.

    Examples
    --------
    >>> from icml26.accessibility.data import planted_pathway_cache
    >>> cache = planted_pathway_cache(seed=0)
    >>> cache.layers == sorted(cache.train.sources), cache.d_model
    (True, 32)
    """

    train: PathwaySplit
    dev: PathwaySplit
    test: PathwaySplit
    unembedding: torch.Tensor
    gamma: torch.Tensor | None = None
    norm_eps: float = 1e-5
    n_layers: int | None = None
    meta: dict = field(default_factory=dict)

    @property
    def layers(self) -> list:
        return sorted(self.train.sources)

    def readout_basis(self) -> tuple:
        """``(Q, sv)`` of ``W_U`` (the readout of post-norm inputs), computed once and kept."""
        if self.meta.get("_basis") is None:
            self.meta["_basis"] = readout_basis_from_weights(self.unembedding)
        return self.meta["_basis"]

    @property
    def d_model(self) -> int:
        return int(self.unembedding.shape[1])

    def split(self, name: str) -> PathwaySplit:
        return getattr(self, check_choice(name, "split", _SPLITS))


@torch.no_grad()
def _cache_split(model, parts, ids, layers, skip, batch_size, out_dir=None, name=""):
    """Forward one split, writing each array into a preallocated buffer (a ``.npy`` memmap under
    ``out_dir`` when given, so the V-wide logits are never held twice)."""
    from .probe import _forward_states, _label_mask

    n = int(_label_mask(ids, None, skip)[0].sum())
    V, d = parts.lm_head.weight.shape

    def alloc(key, shape, dtype):
        if out_dir is None:
            return np.empty(shape, dtype=dtype)
        return np.lib.format.open_memmap(Path(out_dir) / f"{name}_{key}.npy", mode="w+", dtype=dtype, shape=shape)

    arrays = {"base_logits": alloc("base_logits", (n, V), np.float32), "labels": alloc("labels", (n,), np.int64),
              "final_normed": alloc("final_normed", (n, d), np.float32),
              "final_states": alloc("final_states", (n, d), np.float32),
              **{f"src{m}": alloc(f"src{m}", (n, d), np.float32) for m in layers},
              **{f"base_{k}": alloc(f"base_{k}", (n,), dt) for k, dt in _BASE_STATS.items()}}
    at = 0
    device = parts.lm_head.weight.device
    for start in range(0, ids.shape[0], batch_size):
        rows = ids[start:start + batch_size].to(device)
        store = _forward_states(model, parts, rows)
        mask, labels = _label_mask(rows, None, skip)
        h_final = store[parts.n_layers][mask].float()
        normed = parts.norm(h_final).float()
        logits = parts.lm_head(normed).float()
        values = {"base_logits": logits, "labels": labels[mask], "final_normed": normed,
                  "final_states": h_final, **{f"src{m}": rms_normalize(store[m][mask].float()) for m in layers}}
        for key, value in values.items():
            if value.is_floating_point() and not bool(torch.isfinite(value).all()):
                raise FloatingPointError(f"pathway cache: non-finite values in {key} (split {name})")
        values.update({f"base_{k}": v for k, v in _base_stats(logits, values["labels"]).items()})
        k = int(mask.sum())
        for key, value in values.items():
            arrays[key][at:at + k] = to_numpy(value)
        at += k
    for arr in arrays.values():
        if isinstance(arr, np.memmap):
            arr.flush()
    return PathwaySplit(arrays["base_logits"], arrays["labels"], arrays["final_normed"], arrays["final_states"],
                        {m: arrays[f"src{m}"] for m in layers},
                        base_stats={k: arrays[f"base_{k}"] for k in _BASE_STATS})


def _write_readout(cache_meta: dict, unembedding, gamma, folder: Path, basis=None) -> None:
    Q, sv = readout_basis_from_weights(unembedding) if basis is None else basis
    torch.save({"unembedding": unembedding, "gamma": gamma, "basis_q": Q, "basis_sv": sv}, folder / "readout.pt")
    meta = {k: v for k, v in cache_meta.items() if not k.startswith("_")}
    (folder / "meta.json").write_text(json.dumps(meta, default=str))


def build_pathway_cache(model, train_ids, dev_ids, test_ids, layers: Sequence[int], *, skip: int = 4,
                        batch_size: int = 4, path=None) -> PathwayCache:
    """Run the frozen model once per split and cache what pathway training needs.

    Parameters
    ----------
    model : HF causal LM (RMSNorm final norm for the pre-norm variant)
    train_ids, dev_ids, test_ids : LongTensor (rows, T)
        Disjoint token blocks.
    layers : sequence of int in [0, L]
        Source layers to cache (``n(h^m)`` per token).
    skip : int
        Leading positions of each row not predicted (attention-sink tokens).
    batch_size : int
    path : folder, optional
        Also write the cache there (atomically) and return it memory-mapped.

    Returns
    -------
    PathwayCache
    """
    from .probe import _check_ids, _check_layers, model_parts

    parts = model_parts(model)
    layers = sorted(set(_check_layers(layers, parts.n_layers)))
    if not layers:
        raise ValueError("layers must name at least one source layer")
    check_int(skip, "skip", min_value=0)
    checked = {}
    for name, ids in zip(_SPLITS, (train_ids, dev_ids, test_ids)):
        ids, _ = _check_ids(ids)
        if ids.shape[1] <= skip + 1:
            raise ValueError(f"{name}_ids rows of {ids.shape[1]} tokens leave no position after skip={skip}")
        checked[name] = ids
    # the readout is kept on the CPU (a portable cache); fit_pathway moves it to its device
    unembedding = parts.lm_head.weight.detach().float().cpu().clone()
    gamma = None if parts.gamma is None else parts.gamma.detach().float().cpu().clone()
    eps = float(getattr(parts.norm, "variance_epsilon", getattr(parts.norm, "eps", 1e-5)))
    meta = {"skip": skip, "layers": layers, "norm": type(parts.norm).__name__}
    if path is None:
        splits = {name: _cache_split(model, parts, ids, layers, skip, batch_size) for name, ids in checked.items()}
        return PathwayCache(**splits, unembedding=unembedding, gamma=gamma, norm_eps=eps, n_layers=parts.n_layers,
                            meta=meta)
    with atomic_folder(path) as tmp:
        for name, ids in checked.items():
            _cache_split(model, parts, ids, layers, skip, batch_size, out_dir=tmp, name=name)
        _write_readout({"norm_eps": eps, "n_layers": parts.n_layers, **meta}, unembedding, gamma, tmp)
    return load_pathway_cache(path)


def save_pathway_cache(cache: PathwayCache, path) -> Path:
    """Write a cache folder atomically (a temporary sibling folder, then ``os.replace``)."""
    path = Path(path)
    with atomic_folder(path) as tmp:
        for name in _SPLITS:
            split = cache.split(name)
            for key in ("base_logits", "labels", "final_normed", "final_states"):
                np.save(tmp / f"{name}_{key}.npy", np.ascontiguousarray(getattr(split, key)))
            for key, arr in split.base_summary().items():
                np.save(tmp / f"{name}_base_{key}.npy", np.ascontiguousarray(arr))
            for m, arr in split.sources.items():
                np.save(tmp / f"{name}_src{m}.npy", np.ascontiguousarray(arr))
        _write_readout({**cache.meta, "norm_eps": cache.norm_eps, "n_layers": cache.n_layers,
                        "layers": cache.layers}, cache.unembedding, cache.gamma, tmp, cache.readout_basis())
    return path


def load_pathway_cache(path) -> PathwayCache:
    """Read a cache folder written by :func:`save_pathway_cache` (base logits memory-mapped)."""
    path = Path(path)
    if not (path / "meta.json").is_file():
        raise FileNotFoundError(f"{path} is not a pathway cache (no meta.json)")
    meta = json.loads((path / "meta.json").read_text())
    splits = {}
    for name in _SPLITS:
        arrays = {key: np.load(path / f"{name}_{key}.npy", mmap_mode="r" if key == "base_logits" else None)
                  for key in ("base_logits", "labels", "final_normed", "final_states")}
        sources = {int(m): np.load(path / f"{name}_src{m}.npy") for m in meta["layers"]}
        stats = None   # caches written before the base statistics were stored compute them on first use
        if all((path / f"{name}_base_{k}.npy").is_file() for k in _BASE_STATS):
            stats = {k: np.load(path / f"{name}_base_{k}.npy") for k in _BASE_STATS}
        splits[name] = PathwaySplit(**arrays, sources=sources, base_stats=stats)
    readout = torch.load(path / "readout.pt", weights_only=True)
    extra = {k: v for k, v in meta.items() if k not in ("norm_eps", "n_layers")}
    if "basis_q" in readout:
        extra["_basis"] = (readout["basis_q"], readout["basis_sv"])
    return PathwayCache(**splits, unembedding=readout["unembedding"], gamma=readout["gamma"],
                        norm_eps=meta["norm_eps"], n_layers=meta["n_layers"], meta=extra)


@dataclass
class PathwayResult:
    """What one pathway arm achieved (test split unless named otherwise).

    ``delta_ce = CE_base − CE_path`` (positive = the pathway helps); ``kl`` is
    ``KL(p_path ‖ p_base)``; ``flip_rate`` the share of tokens whose top-1 prediction changed;
    ``enrichment_base`` / ``enrichment_path`` the ``Â_8`` of the readout input before/after.
    ``gain_vs_bias`` is set by :meth:`gain_vs` (``CE_bias-only − CE_path``).

    References
    ----------
    "Capacity without Access: Reinterpreting the Mid-Depth Spectral Plateau in LLMs", ICML 2026
    (authors not retrieved; see the package README). One arm of its pathway experiment.

    Examples
    --------
    >>> from icml26.accessibility import fit_pathway
    >>> from icml26.accessibility.data import planted_pathway_cache
    >>> cache = planted_pathway_cache(n_train=256, n_dev=128, n_test=128, seed=0)
    >>> result = fit_pathway(cache, cache.meta["hidden_layer"], steps=5, lr=0.05)
    >>> result.delta_ce == result.base_ce - result.path_ce
    True
    """

    source_layer: int | list | None
    control: str | None
    rank: int
    base_ce: float
    path_ce: float
    delta_ce: float
    dev_base_ce: float
    dev_ce: float
    dev_delta_ce: float
    kl: float
    flip_rate: float
    best_step: int
    steps_run: int
    train_ce_base: float
    train_ce: float
    enrichment_base: float
    enrichment_path: float
    history: list
    seconds: float
    gain_vs_bias: float | None = None
    token_ce: np.ndarray | None = field(default=None, repr=False)
    pathway: DiagnosticPathway | None = field(default=None, repr=False)

    def gain_vs(self, bias_only: "PathwayResult") -> float:
        """Token-specific gain ``G = CE_bias-only − CE_path`` on test; stored in ``gain_vs_bias``."""
        self.gain_vs_bias = float(bias_only.path_ce - self.path_ce)
        return self.gain_vs_bias

    def to_dict(self, token_ce: bool = False) -> dict:
        """The scalar results and history (``token_ce`` adds the per-token test CE as a list)."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("pathway", "token_ce")}
        if token_ce and self.token_ce is not None:
            out["token_ce"] = [float(v) for v in self.token_ce]
        return out


class _AdamW:
    """AdamW (Loshchilov & Hutter 2019) with torch's defaults (betas 0.9/0.999, eps 1e-8, decoupled
    decay). Written out because constructing ``torch.optim.AdamW`` imports ``torch._dynamo``
    (seconds per process); a test checks it step for step against ``torch.optim.AdamW``."""

    def __init__(self, params, lr: float, weight_decay: float, betas=(0.9, 0.999), eps: float = 1e-8):
        self.params = list(params)
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        b1, b2 = self.betas
        for p, m, v in zip(self.params, self.m, self.v):
            if p.grad is None:
                continue
            p.mul_(1 - self.lr * self.weight_decay)
            m.mul_(b1).add_(p.grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            denom = (v / (1 - b2 ** self.t)).sqrt_().add_(self.eps)
            p.addcdiv_(m, denom, value=-self.lr / (1 - b1 ** self.t))


class _Readout:
    """The readout of a cache on the training device: ``W_U`` (float32), the norm's ``γ`` and eps."""

    def __init__(self, cache: PathwayCache, device):
        self.W = cache.unembedding.float().to(device)
        self.gamma = None if cache.gamma is None else cache.gamma.to(device)
        self.norm_eps = cache.norm_eps


class _Arm:
    """Tensors of one arm on one split: base logits, labels, readout input, centred source features.

    The cached arrays stay in (memory-mapped) numpy; labels and source features live on
    ``device``, and each batch of base logits is read on the CPU and copied there."""

    def __init__(self, split: PathwaySplit, sources, mean, perm, device=torch.device("cpu")):
        self.split = split
        self.device = torch.device(device)
        self.labels = torch.from_numpy(np.asarray(split.labels)).to(self.device)
        self.x = None
        if sources:   # the last source's rows are permuted by the shuffled control
            blocks = [torch.from_numpy(np.asarray(split.sources[m], dtype=np.float32)) for m in sources]
            if perm is not None:
                blocks[-1] = blocks[-1][perm]
            self.x = (torch.cat(blocks, dim=1) if len(blocks) > 1 else blocks[0]).to(self.device) - mean
        self._buffer = None
        self._scratch = None
        self._device_buffer = None
        self._stats = None

    def base_stats(self) -> tuple:
        """``(lse, argmax, label_logit)`` of the base logits (:meth:`PathwaySplit.base_summary`) on the device."""
        if self._stats is None:
            stats = self.split.base_summary()
            self._stats = tuple(torch.from_numpy(np.array(stats[k])).to(self.device) for k in _BASE_STATS)
        return self._stats

    def scratch(self, n: int) -> torch.Tensor:
        """A second ``(n, V)`` buffer the arm reuses (the softmax of a batch)."""
        V = self.split.base_logits.shape[1]
        if self._scratch is None or self._scratch.shape[0] < n:
            self._scratch = torch.empty((n, V), dtype=torch.float32, device=self.device)
        return self._scratch[:n]

    def base(self, idx) -> torch.Tensor:
        """The base logits of rows ``idx``, read into one buffer the arm reuses.

        The returned tensor is overwritten by the next call. A fresh ``(batch, V)`` tensor per
        batch cost as much CPU as the arithmetic (a 200 MB allocation is page-faulted in anew each
        time; system time was half of an arm's CPU seconds)."""
        idx = np.asarray(idx, dtype=np.int64)
        logits = self.split.base_logits
        n, V = idx.shape[0], logits.shape[1]
        if self._buffer is None or self._buffer.shape[0] < n:
            self._buffer = torch.empty((n, V), dtype=torch.float32)
        out = self._buffer[:n]
        if logits.dtype == np.float32:
            np.take(logits, idx, axis=0, out=out.numpy(), mode="clip")   # idx is in range: no copy-back
        else:
            out.copy_(torch.from_numpy(np.asarray(logits[idx], dtype=np.float32)))
        if self.device.type == "cpu":
            return out
        if self._device_buffer is None or self._device_buffer.shape[0] < n:
            self._device_buffer = torch.empty((n, V), dtype=torch.float32, device=self.device)
        return self._device_buffer[:n].copy_(out)

    def final_states(self, idx) -> torch.Tensor:
        """The pre-norm final states of rows ``idx`` (for the pre-norm variant), on the device."""
        rows = np.asarray(self.split.final_states[np.asarray(idx, dtype=np.int64)], dtype=np.float32)
        return torch.from_numpy(rows).to(self.device)


def _softmax_lse(z: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Row-wise softmax of ``z`` written into ``out`` and the log-partition of each row.

    torch's fused softmax reads a row once while it is in cache (half the time of separate
    max / subtract / exp / sum / divide passes over an ``(n, V)`` matrix), and ``out`` is a
    buffer the caller reuses, so nothing ``(n, V)`` is allocated. The log-partition is read back
    as ``lse = max z − log max p``: the largest probability ``1/Σ exp(z − max z)`` is at least
    ``1/V``, so its logarithm never underflows."""
    torch.softmax(z, dim=1, out=out)
    return z.amax(dim=1) - out.amax(dim=1).log()


_BASE_STATS = {"lse": np.float32, "argmax": np.int64, "label_logit": np.float32}


def _base_stats(logits: torch.Tensor, labels: torch.Tensor, out: torch.Tensor | None = None) -> dict:
    """What every evaluation needs of the base logits, per token (see :meth:`PathwaySplit.base_summary`)."""
    out = torch.empty_like(logits) if out is None else out
    return {"lse": _softmax_lse(logits, out).cpu(), "argmax": logits.argmax(dim=1).cpu(),
            "label_logit": logits.gather(1, labels[:, None].to(logits.device)).squeeze(1).cpu()}


def _add_change_(z: torch.Tensor, u, WB1) -> torch.Tensor:
    """``z += (x Aᵀ)(W B)ᵀ + W b`` in place, as one GEMM: ``[u, 1] [W B, W b]ᵀ`` (``WB1``; without a
    bypass, ``u`` is None and ``WB1`` is ``W b``)."""
    if u is None:
        return z.add_(WB1)
    return z.addmm_(torch.cat([u, u.new_ones(u.shape[0], 1)], dim=1), WB1.T)


def _stack_change(WB, c):
    return c if WB is None else torch.cat([WB, c[:, None]], dim=1)


@torch.no_grad()
def _post_norm_step(W, path: DiagnosticPathway, base, labels, x, scratch=None, c=None):
    """Loss and hand-written gradients of the post-norm pathway on one batch (sets ``.grad``).

    ``base`` is overwritten (it becomes the pathway's logits); ``scratch``, an ``(n, V)`` buffer,
    receives the softmax (allocated when None); ``c = W b`` may be passed when ``b`` is frozen."""
    n = base.shape[0]
    u = x @ path.A.T if (path.bypass and x is not None) else None
    WB = W @ path.B if u is not None else None
    c = W @ path.bias if c is None else c
    z = _add_change_(base, u, _stack_change(WB, c))
    target = z.gather(1, labels[:, None]).squeeze(1)
    G = torch.empty_like(z) if scratch is None else scratch
    lse = _softmax_lse(z, G)
    loss = float((lse - target).mean())
    G[torch.arange(n, device=G.device), labels] -= 1.0   # softmax − onehot; the 1/n is applied
    if path.bias.requires_grad:                           # to the small products below
        path.bias.grad = (W.T @ G.sum(dim=0)) / n
    if u is not None:
        gWB = (u.T @ G).T / n        # uᵀG then a transpose: faster than Gᵀu on a row-major G
        path.B.grad = W.T @ gWB
        path.A.grad = ((G @ WB).T @ x) / n
    return loss


def _pre_norm_logits(readout: _Readout, path: DiagnosticPathway, final_states, x):
    h = final_states + ((x @ path.A.T) @ path.B.T if (path.bypass and x is not None) else 0.0)
    normed = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + readout.norm_eps)
    if readout.gamma is not None:
        normed = normed * readout.gamma
    return (normed + path.bias) @ readout.W.T


@torch.no_grad()
def _evaluate(readout: _Readout, path, arm: _Arm, idx=None, batch: int = 1024, compare: bool = False):
    """CE of the pathway on ``idx`` (all rows by default); ``compare`` adds the base CE,
    ``KL(p_path ‖ p_base)``, the top-1 flip rate and the per-token CE.

    No ``(n, V)`` temporaries: the logits are formed in the arm's base buffer and the softmax in
    its scratch buffer. The base's log-partition, argmax and label logit come from
    :meth:`PathwaySplit.base_summary` (computed once per split), and with ``Σ_j p_j = 1``,
    ``KL(p‖q) = Σ_j p_j (z_j − q_j) − lse_p + lse_q`` where, post-norm, ``z − q = c + u (W B)ᵀ``,
    so ``Σ_j p_j (z_j − q_j) = p·c + ((p W B) ⊙ u) 1`` (a rank-``r`` product)."""
    W = readout.W
    post = path.injection == "post_norm"
    n_total = arm.labels.shape[0]
    idx = torch.arange(n_total) if idx is None else idx
    # the readout pieces of the logit change (x Aᵀ)(W B)ᵀ + W b, once per evaluation
    WB = W @ path.B if (path.bypass and arm.x is not None) else None
    c = W @ path.bias
    WB1 = _stack_change(WB, c)
    base_stats = arm.base_stats() if compare else None
    ce_path = ce_base = kl = flips = 0.0
    per_token = []
    for start in range(0, idx.numel(), batch):
        rows = idx[start:start + batch]
        base = arm.base(rows.numpy())
        y = arm.labels[rows]
        x = None if arm.x is None else arm.x[rows]
        u = x @ path.A.T if WB is not None else None
        if post:
            z = _add_change_(base, u, WB1)     # in place in the arm's buffer
        else:
            z = _pre_norm_logits(readout, path, arm.final_states(rows.numpy()), x)
        zy = z.gather(1, y[:, None]).squeeze(1)
        P = arm.scratch(z.shape[0])
        lse_p = _softmax_lse(z, P)
        token_ce = lse_p - zy
        ce_path += float(token_ce.sum())
        if not compare:   # CE only (the dev checks during training)
            continue
        lse_q, arg_q, q_y = (v[rows] for v in base_stats)
        flips += float((z.argmax(1) != arg_q).sum())
        ce_base += float((lse_q - q_y).sum())
        if post:
            dot = P @ c
            if u is not None:
                dot += ((P @ WB) * u).sum(dim=1)
        else:   # pre-norm: z − q is not low-rank (base still holds q)
            dot = torch.mul(P, z - base).sum(dim=1)
        kl += float((dot - lse_p + lse_q).sum())
        per_token.append(token_ce.double())
    n = idx.numel()
    if compare:
        return {"ce": ce_path / n, "base_ce": ce_base / n, "kl": kl / n, "flip_rate": flips / n,
                "token_ce": to_numpy(torch.cat(per_token))}
    return {"ce": ce_path / n}


@torch.no_grad()
def _readout_enrichment(cache, path, arm: _Arm, k: int = 8) -> tuple[float, float]:
    Q, sv = cache.readout_basis()
    d = cache.d_model
    base_stats, path_stats = LayerStats(d), LayerStats(d)
    fn = torch.from_numpy(np.asarray(arm.split.final_normed, dtype=np.float32)).to(arm.device)
    base_stats.update(fn)
    new = fn + path.bias
    if path.bypass and arm.x is not None:
        new = new + (arm.x @ path.A.T) @ path.B.T
    path_stats.update(new)
    k = min(k, d)
    return (accessibility_metrics(base_stats.cov(), Q, sv, (k,))[f"enrichment_{k}"],
            accessibility_metrics(path_stats.cov(), Q, sv, (k,))[f"enrichment_{k}"])


def fit_pathway(cache: PathwayCache, source_layer: int | Sequence[int] | None, *, rank: int = 8, steps: int = 150,
                lr: float = 5e-4, weight_decay: float = 0.1, batch_size: int = 1024, control: str | None = None,
                center: bool = True, learn_bias: bool = True, early_stop: bool = True, eval_every: int = 10,
                patience: int | None = 3, injection: str = "post_norm", train_eval_tokens: int = 4096,
                bias: torch.Tensor | None = None, train_tokens=None, seed: int = 0,
                device="cpu") -> PathwayResult:
    """Train one pathway arm with the base frozen and measure its behavioural change on test.

    Parameters
    ----------
    cache : PathwayCache
    source_layer : int, sequence of int, or None
        The cached layer ``m`` the bypass reads (ignored, may be None, for ``control="bias_only"``);
        several layers, e.g. ``(L, m)``, give the incremental arm: their centred features are
        concatenated and ``A`` reads all of them at the same rank.
    rank : int
        ``r`` (``>= d`` allowed: a full bypass).
    steps, lr, weight_decay, batch_size : training budget (AdamW on batches of cached tokens)
    control : {None, "shuffled", "bias_only"}
        ``"shuffled"``: rows of ``n(h^m)`` permuted across tokens within each split (seeded; with
        several source layers only the last one's rows);
        ``"bias_only"``: only the bias ``b`` is trained.
    center : bool
        Subtract the train mean of ``n(h^m)`` from the source features.
    learn_bias : bool
        Train the shared readout-input bias ``b`` alongside the bypass.
    early_stop : bool
        Keep the best dev checkpoint (step 0 = base) and stop after ``patience`` evaluations
        without improvement; ``False`` trains all ``steps`` and returns the last parameters.
    eval_every, patience : int
    injection : {"post_norm", "pre_norm"}
    train_eval_tokens : int
        Train CE (base and pathway) is measured on the first this-many train tokens.
    bias : Tensor (d,), optional
        A readout-input bias to start from and keep **frozen** (the shared bias of
        :func:`fit_shared_bias`); ``learn_bias`` is then ignored. With ``control="bias_only"``
        nothing trains: the arm is evaluated at ``b``.
    train_tokens : 1-D int array, optional
        Rows of the train split to use (the seed's resample of the training tokens): batches,
        the centring mean and the train CE are taken over these rows only. Default: all.
    seed : int
        Seeds ``A``'s initialisation, the batch order and the shuffled control's permutation
        (all drawn on the CPU: the same on every device).
    device : str or torch.device
        Where the pathway trains and is evaluated (``"cpu"``, ``"cuda"``, ``"cuda:N"``,
        ``"auto"``); the cache stays in (memory-mapped) numpy and batches are copied there.

    Returns
    -------
    PathwayResult (its ``pathway`` holds the trained module, on ``device``)

    Examples
    --------
    >>> from icml26.accessibility.data import planted_pathway_cache
    >>> cache = planted_pathway_cache(seed=0)
    >>> fit_pathway(cache, cache.meta["hidden_layer"], steps=60, lr=0.05).delta_ce > 0.05
    True
    """
    if not isinstance(cache, PathwayCache):
        raise TypeError(f"cache must be a PathwayCache, got {type(cache).__name__}")
    control = check_choice(control, "control", CONTROLS)
    injection = check_choice(injection, "injection", INJECTIONS)
    check_int(steps, "steps", min_value=0)
    check_int(batch_size, "batch_size", min_value=1)
    check_int(eval_every, "eval_every", min_value=1)
    check_int(train_eval_tokens, "train_eval_tokens", min_value=1)
    check_int(seed, "seed", min_value=0)
    if patience is not None:
        check_int(patience, "patience", min_value=1)
    check_scalar_in(lr, "lr", low=0.0, low_inclusive=False)
    check_scalar_in(weight_decay, "weight_decay", low=0.0)
    if control != "bias_only":
        sources = tuple(source_layer) if isinstance(source_layer, (tuple, list)) else (source_layer,)
        if not sources or any(m not in cache.layers for m in sources) or len(set(sources)) != len(sources):
            raise ValueError(f"source_layer must be one or more distinct cached layers {cache.layers}, "
                             f"got {source_layer!r}")
        source_layer = sources[0] if len(sources) == 1 else list(sources)
    else:
        source_layer, sources = None, ()
    if injection == "pre_norm" and cache.meta.get("norm", "RMSNorm").lower().find("rms") < 0:
        raise ValueError(f"injection='pre_norm' needs an RMSNorm final norm, the cache has {cache.meta.get('norm')}")
    device = resolve_device(device)
    d = cache.d_model
    if bias is not None:
        bias = torch.as_tensor(bias, dtype=torch.float32).detach()
        if bias.shape != (d,) or not bool(torch.isfinite(bias).all()):
            raise ValueError(f"bias must be a finite vector of shape ({d},), got shape {tuple(bias.shape)}")
    rows = _train_rows(train_tokens, cache.train.n_tokens)
    started = time.perf_counter()
    frozen_bias_only = control == "bias_only" and bias is not None
    path = DiagnosticPathway(d, rank=rank, injection=injection,
                             learn_bias=bias is not None or learn_bias or control == "bias_only",
                             bypass=control != "bias_only", seed=seed, n_sources=max(1, len(sources)))
    if bias is not None:   # the shared bias: the start, and frozen
        with torch.no_grad():
            path.bias.copy_(bias)
        path.bias.requires_grad_(False)
    path.to(device)
    if frozen_bias_only:
        steps = 0
    gen = torch.Generator().manual_seed(seed + 1)
    if sources and center:
        means = []
        for m in sources:
            src = np.asarray(cache.train.sources[m])
            src = src if rows is None else src[rows.numpy()]
            means.append(np.asarray(src, dtype=np.float64).mean(axis=0))
        path.source_mean.copy_(torch.from_numpy(np.concatenate(means)).float())
    arms = {}
    for name in _SPLITS:
        split = cache.split(name)
        perm = None
        if control == "shuffled":
            perm = torch.randperm(split.n_tokens, generator=torch.Generator().manual_seed(seed + 1000 + len(arms)))
        arms[name] = _Arm(split, sources, path.source_mean, perm, device)
    params = [p for p in path.parameters() if p.requires_grad]
    opt = _AdamW(params, lr=lr, weight_decay=weight_decay)
    readout = _Readout(cache, device)
    W = readout.W
    frozen_c = None if path.bias.requires_grad else (W @ path.bias).detach()   # W b, constant
    pool = torch.arange(cache.train.n_tokens) if rows is None else rows
    n_train = int(pool.numel())
    batch_size = min(batch_size, n_train)
    dev_base = _evaluate(readout, path, arms["dev"])["ce"]
    best = (dev_base, 0, {k: v.detach().clone() for k, v in path.state_dict().items()})
    history = [{"step": 0, "dev_ce": dev_base, "train_loss": float("nan")}]
    order, cursor, bad, recent, step = torch.randperm(n_train, generator=gen), 0, 0, [], 0
    for step in range(1, steps + 1):
        if cursor + batch_size > n_train:
            order, cursor = torch.randperm(n_train, generator=gen), 0
        idx = pool[order[cursor:cursor + batch_size]].sort().values
        cursor += batch_size
        arm = arms["train"]
        x = None if arm.x is None else arm.x[idx]
        if injection == "post_norm":
            loss = _post_norm_step(W, path, arm.base(idx.numpy()), arm.labels[idx], x,
                                   scratch=arm.scratch(idx.numel()), c=frozen_c)
        else:
            out = torch.nn.functional.cross_entropy(
                _pre_norm_logits(readout, path, arm.final_states(idx.numpy()), x), arm.labels[idx])
            opt.zero_grad()
            out.backward()
            loss = float(out.detach())
        if not np.isfinite(loss):
            raise FloatingPointError(f"pathway training diverged at step {step} (loss {loss}); lower lr")
        opt.step()
        recent.append(loss)
        if step % eval_every == 0 or step == steps:
            dev_ce = _evaluate(readout, path, arms["dev"])["ce"]
            history.append({"step": step, "dev_ce": dev_ce, "train_loss": float(np.mean(recent))})
            recent = []
            if dev_ce < best[0]:
                best, bad = (dev_ce, step, {k: v.detach().clone() for k, v in path.state_dict().items()}), 0
            else:
                bad += 1
            if early_stop and patience is not None and bad >= patience:
                break
    steps_run = step if steps else 0
    if early_stop:
        path.load_state_dict(best[2])
        best_step = best[1]
    else:
        best_step = steps_run
    dev_ce = _evaluate(readout, path, arms["dev"])["ce"]
    test = _evaluate(readout, path, arms["test"], compare=True)
    train_idx = pool[:min(train_eval_tokens, n_train)]
    train = _evaluate(readout, path, arms["train"], idx=train_idx, compare=True)
    enr_base, enr_path = _readout_enrichment(cache, path, arms["test"])
    return PathwayResult(source_layer=source_layer, control=control, rank=path.rank, base_ce=test["base_ce"],
                         path_ce=test["ce"], delta_ce=test["base_ce"] - test["ce"], dev_base_ce=dev_base,
                         dev_ce=dev_ce, dev_delta_ce=dev_base - dev_ce, kl=test["kl"], flip_rate=test["flip_rate"],
                         best_step=best_step, steps_run=steps_run, train_ce_base=train["base_ce"],
                         train_ce=train["ce"], enrichment_base=enr_base, enrichment_path=enr_path,
                         history=history, seconds=time.perf_counter() - started,
                         token_ce=test["token_ce"], pathway=path)


def _train_rows(train_tokens, n_tokens: int):
    """``train_tokens`` as a sorted LongTensor of distinct rows in ``[0, n_tokens)`` (None: all)."""
    if train_tokens is None:
        return None
    arr = np.asarray(train_tokens)
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError("train_tokens must be a non-empty 1-D array of integer row indices")
    if arr.min() < 0 or arr.max() >= n_tokens or np.unique(arr).size != arr.size:
        raise ValueError(f"train_tokens must be distinct rows in [0, {n_tokens}), got min {arr.min()}, "
                         f"max {arr.max()}, {arr.size - np.unique(arr).size} repeats")
    return torch.from_numpy(np.sort(arr).astype(np.int64))


def fit_shared_bias(cache: PathwayCache, *, steps: int = 600, lr: float = 5e-3, weight_decay: float = 0.1,
                    batch_size: int = 1024, eval_every: int = 10, patience: int = 5, train_tokens=None,
                    seed: int = 0, device="cpu") -> PathwayResult:
    """Train the bias-only arm to its dev-CE plateau: the bias every arm then shares, frozen.

    ``z = W_U[N_γ(h^L) + b]`` with only ``b`` trained (AdamW, early stopping on dev CE with
    ``patience`` evaluations); the returned ``result.pathway.bias`` is the ``b`` to pass to
    :func:`fit_pathway` as ``bias=``. A Resolution (not from the paper): the spec asks
    that every arm gets the same learned bias, and a bias trained inside each arm with the
    arm's own early stopping makes ``G`` measure how far each bias got. ``device`` as in
    :func:`fit_pathway`.

    Examples
    --------
    >>> from icml26.accessibility.data import planted_pathway_cache
    >>> cache = planted_pathway_cache(seed=0)
    >>> shared = fit_shared_bias(cache, steps=40, lr=0.05)
    >>> arm = fit_pathway(cache, cache.meta["hidden_layer"], steps=60, lr=0.05, bias=shared.pathway.bias)
    >>> bool(torch.equal(arm.pathway.bias, shared.pathway.bias)) and arm.path_ce < shared.path_ce
    True
    """
    return fit_pathway(cache, None, control="bias_only", steps=steps, lr=lr, weight_decay=weight_decay,
                       batch_size=batch_size, eval_every=eval_every, patience=patience,
                       train_tokens=train_tokens, seed=seed, device=device)


def bootstrap_gain(reference_ce, path_ce, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> dict:
    """Mean paired gain ``reference − path`` over tokens with a paired BCa bootstrap interval
    (:func:`icml26.core.stats.paired_mean_interval`, ``scipy.stats.bootstrap``).

    Parameters
    ----------
    reference_ce, path_ce : 1-D arrays of the same length
        Per-token CE of the reference (the bias-only arm) and of the pathway arm, on the same
        tokens (pass the mean over seeds per token to pool seeds).
    n_boot : int
        Bootstrap resamples.
    level : float in (0, 1)
    seed : int

    Returns
    -------
    dict with ``gain``, ``low``, ``high`` (the ``level`` interval), ``n_tokens``.

    Examples
    --------
    >>> out = bootstrap_gain(np.full(100, 2.0), np.full(100, 1.5))
    >>> (out["gain"], out["low"], out["high"])
    (0.5, 0.5, 0.5)
    """
    try:
        ref = np.asarray(reference_ce, dtype=float)
        new = np.asarray(path_ce, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError("reference_ce and path_ce must be arrays of real numbers") from exc
    if ref.ndim != 1 or ref.shape != new.shape or ref.size == 0:
        raise ValueError(f"reference_ce and path_ce must be 1-D arrays of one length, got {ref.shape} and {new.shape}")
    if not (np.isfinite(ref).all() and np.isfinite(new).all()):
        raise ValueError("reference_ce and path_ce must be finite")
    if ref.size < 2:  # one token gives a zero-width "interval"
        raise ValueError("reference_ce and path_ce have 1 token; a bootstrap interval needs at least 2")
    check_int(n_boot, "n_boot", min_value=1)
    check_scalar_in(level, "level", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    from icml26.core.stats import paired_mean_interval

    diff = ref - new
    low, high = paired_mean_interval(diff, level=level, n_resamples=n_boot, seed=seed)
    return {"gain": float(diff.mean()), "low": low, "high": high, "n_tokens": int(diff.size)}
