"""The attribution pipeline of VEENA: steering vectors → layer scan → head scores → neuron scores.

Zhang, Sun, Xie, Tian, "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980), Stages I–II.

Notes
-----
Notation → code: ``s_{i,l} = h^+_{i,l,N} − h^-_{i,l,N}`` (``SteeringVectors``); ``S_l`` =
``S_[l]``; ``S_l^{(k)}`` = ``S_per_emotion_[k, l]``; ``𝓒_l`` = ``scan_layers()["C"]``;
``𝓘(c) = cos(A_c, S_l)`` = ``intention``; noising ``E_c`` and denoising ``D_c``;
``score(c) = 𝓘(c)·max(E_c, 0)``; ``spec(c) = (K·max_k p_k − 1)/(K − 1)``; neuron
``κ_{l,n} = mean_i[m^+_{N,n} − m^-_{N,n}]·cos(W_out[:, n], S_l)``.

Resolutions (not from the paper): per-emotion steering vectors next to the pooled one; injection
at every position ``t ≥ N``; one ``α_l = α_rel·mean‖h_{l,N}‖/‖S_l‖`` per layer (applied to the
per-emotion vectors too); a head's *stage* is where its emotional write ``A_c`` is larger — the
query token (prefill) or the first ``G`` generated positions (decode, teacher-forced on the
model's own ``X^+`` description) — and its intention is the cosine there; "backward"
patching read as noising; specificity from per-emotion noising effects.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from icml26.core.validation import check_int, check_scalar_in, renamed_seed

from .hooks import Capture, HFAdapter, HeadReplace, NeuronScale, ResidualAdd, check_heads
from .metrics import EmotionWheel, hit_rate, predicted_emotions, sample_hit

__all__ = ["SteeringVectors", "CircuitLocalizer", "behaviour", "expected_hit_rate", "describe", "cosine", "specificity",
           "select_circuit"]

_ZERO = 1e-8


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity along the last axis; 0 (not NaN) when either vector is zero.

    ``a`` and ``b`` are real floating tensors whose shapes broadcast, with finite values (a
    ValueError/TypeError names the one that is not).
    """
    for name, t in (("a", a), ("b", b)):
        if not torch.is_tensor(t) or not t.is_floating_point():
            raise TypeError(f"{name} must be a real floating tensor, got {getattr(t, 'dtype', type(t).__name__)}")
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} contains NaN or infinity")
    try:
        torch.broadcast_shapes(a.shape, b.shape)
    except RuntimeError:
        raise ValueError(f"a of shape {tuple(a.shape)} and b of shape {tuple(b.shape)} do not broadcast") from None
    na, nb = a.norm(dim=-1), b.norm(dim=-1)
    dot = (a * b).sum(-1)
    ok = (na > _ZERO) & (nb > _ZERO)
    return torch.where(ok, dot / (na * nb).clamp(min=_ZERO), torch.zeros_like(dot))


def specificity(effects: np.ndarray) -> float:
    """``(K·max_k p_k − 1)/(K − 1)`` with ``p_k ∝ max(0, e_k)``; 0 when no effect is positive.

    Examples
    --------
    >>> specificity(np.array([1.0, 0.0, 0.0, 0.0])), specificity(np.ones(4))
    (1.0, 0.0)
    """
    try:
        e = np.asarray(effects, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError("effects must be an array of real numbers") from exc
    if not np.isfinite(e).all():
        raise ValueError("effects contains NaN or infinity")
    e = np.maximum(e, 0.0)
    k = e.size
    if k < 2:
        raise ValueError(f"specificity needs at least 2 emotions in effects, got {k}")
    total = e.sum()
    if total <= 0:
        return 0.0
    return float((k * e.max() / total - 1.0) / (k - 1.0))


def _categories(adapter: HFAdapter, ids: torch.Tensor, wheel: EmotionWheel) -> torch.Tensor:
    if adapter.vocabulary is None:
        raise ValueError("the adapter has no vocabulary; pass vocabulary= to HFAdapter")
    return wheel.category_ids(adapter.vocabulary).to(ids.device)[ids]


def describe(adapter, prompts, labels, wheel, n_tokens, seed, edits=(), **kw) -> dict:
    """Generate descriptions and score them: per-sample ``H`` (token hit rate), ``HIT``, the
    predicted emotion sets, the generated ids."""
    ids = adapter.generate(prompts, n_tokens, seed, edits=edits, **kw)
    cats = _categories(adapter, ids, wheel)
    return {"ids": ids, "H": hit_rate(cats, labels, len(wheel)), "HIT": sample_hit(cats, labels, len(wheel)),
            "pred": predicted_emotions(cats, len(wheel))}


def expected_hit_rate(adapter, prompts, continuation, labels, wheel, edits=()) -> torch.Tensor:
    """Per-sample expected token hit rate, teacher-forced on ``continuation`` (B, T): the mean over
    the T generated positions of the probability mass on the label's wheel words (Resolution, not
    from the paper: a continuous, one-forward version of 𝓗 used for patching effects)."""
    n_tok = continuation.shape[1]
    seq = torch.cat([prompts, adapter.embed(continuation[:, :n_tok - 1])], 1)
    logits = adapter.forward(seq, edits)[:, prompts.shape[1] - 1:].float()          # (B, T, V)
    if adapter.allowed_tokens is not None:
        logits = logits.masked_fill(~adapter.allowed_tokens.to(logits.device), float("-inf"))
    probs = logits.softmax(-1)
    cats = wheel.category_ids(adapter.vocabulary).to(probs.device)
    on_label = (cats[None, :] == labels[:, None]).float()                               # (B, V)
    return (probs * on_label[:, None, :]).sum(-1).mean(1)


def behaviour(model, pairs, wheel, n_tokens: int, seed: int, edits=(), prompts: str = "emotional",
              per_sample: bool = False) -> dict:
    """Mean token hit rate ``H``, sample ``HIT``, joy-hallucination rate (non-joy samples whose
    predicted set contains joy, ``wheel`` category 0) and object-word accuracy of one condition;
    with ``per_sample``, also the per-sample lists ``HIT_s``, ``H_s``, ``H_tone_s`` and the mean
    ``H_tone`` (𝓗 over the odd, tone-slot positions)."""
    adapter = HFAdapter.wrap(model)
    pairs = pairs.to(adapter.device)
    x = pairs.emotional if prompts == "emotional" else pairs.neutral
    out = describe(adapter, x, pairs.labels, wheel, n_tokens, seed, edits=edits)
    non_joy = pairs.labels != 0
    stats = {"H": float(out["H"].mean()), "HIT": float(out["HIT"].mean()),
             "joy_hallucination": float(out["pred"][non_joy, 0].float().mean()) if bool(non_joy.any()) else 0.0}
    if pairs.objects is not None and pairs.object_token_ids is not None:
        target = pairs.object_token_ids[pairs.objects]
        stats["object_accuracy"] = float((out["ids"] == target[:, None]).any(1).float().mean())
    if per_sample:
        # 𝓗 over the tone slots only (odd generated positions: the only ones of the "slotted"
        # description that can hold an emotion word).
        tone = _categories(adapter, out["ids"], wheel)[:, 1::2]
        h_tone = hit_rate(tone, pairs.labels, len(wheel))
        stats.update({"H_tone": float(h_tone.mean()), "HIT_s": out["HIT"].tolist(), "H_s": out["H"].tolist(),
                      "H_tone_s": h_tone.tolist()})
    return stats


class SteeringVectors:
    """Per-layer steering vectors from counterfactual pairs (Stage I of VEENA).

    Parameters
    ----------
    tau : float in [0, 1)
        Keep pairs whose emotional run has token hit rate ``𝓗(X^+, y) > tau``.
    n_tokens : int
        Length of the generated descriptions.
    random_state : int, default 0
        Generation noise seed.
    seed : int, optional
        Deprecated alias of ``random_state``.

    Attributes
    ----------
    S_ : Tensor (L, d)
        Pooled steering vectors ``S_l`` (mean over valid pairs of ``h^+_{l,N} − h^-_{l,N}``).
    S_per_emotion_ : Tensor (K, L, d)
        Per-emotion vectors ``S_l^{(k)}`` (zero for an emotion with no valid pair).
    S_generated_ : Tensor (L, d)
        The same difference averaged over the first generated positions (teacher-forced).
    residual_norm_ : Tensor (L,)
        Mean ``‖h^-_{l,N}‖`` (for the per-layer injection scale).
    valid_ : BoolTensor (n,)
    continuation_ : LongTensor (n, n_tokens)
        The model's own description of each ``X^+``.

    References
    ----------
    Zhang, Sun, Xie & Tian, "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
    Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980): Stage I of VEENA.

    Examples
    --------
    >>> from icml26.emotion_circuits import ToyLVLM, make_pairs, WHEEL
    >>> toy = ToyLVLM.planted(seed=0)
    >>> sv = SteeringVectors(tau=0.1).fit(toy, make_pairs(toy, n=12, seed=0), WHEEL)
    >>> tuple(sv.S_.shape)
    (8, 64)
    """

    def __init__(self, tau: float = 0.1, n_tokens: int = 12, n_gen_positions: int = 8,
                 random_state: int = 0, seed: int | None = None):
        self.tau, self.n_tokens, self.n_gen_positions = tau, n_tokens, n_gen_positions
        self.random_state, self.seed = random_state, seed

    def fit(self, model, pairs, wheel: EmotionWheel) -> "SteeringVectors":
        check_scalar_in(self.tau, "tau", low=0.0, high=1.0, high_inclusive=False)
        check_int(self.n_tokens, "n_tokens", min_value=1)
        check_int(self.n_gen_positions, "n_gen_positions", min_value=0, max_value=self.n_tokens)
        noise_seed = renamed_seed(self.random_state, self.seed, "SteeringVectors", stacklevel=2)
        adapter = HFAdapter.wrap(model)
        pairs = pairs.to(adapter.device)
        if len(wheel) < 2:
            raise ValueError(f"wheel must have at least 2 emotions, got {len(wheel)}")
        if int(pairs.labels.max()) >= len(wheel):
            raise ValueError(f"pairs.labels must index the wheel's {len(wheel)} emotions, got max "
                             f"{int(pairs.labels.max())}")
        out = describe(adapter, pairs.emotional, pairs.labels, wheel, self.n_tokens, noise_seed)
        valid = out["H"] > self.tau
        if not bool(valid.any()):
            raise ValueError(f"no valid pair: every emotional run has hit rate <= tau={self.tau} "
                             f"(observed max {float(out['H'].max()):.3f}); lower tau or check the model")
        self.valid_, self.continuation_, self.hit_rate_ = valid, out["ids"], out["H"]
        diffs, norms = self._differences(adapter, pairs)
        n, g = pairs.query_pos, self.n_gen_positions
        s_query = diffs[:, :, n]                                             # (B, L, d)
        self.S_ = s_query[valid].mean(0)
        self.S_generated_ = (diffs[valid][:, :, n + 1:n + 1 + g].mean((0, 2)) if g
                             else torch.zeros_like(self.S_))
        per = self.S_.new_zeros(len(wheel), *self.S_.shape)
        for k in range(len(wheel)):
            pick = valid & (pairs.labels == k)
            if bool(pick.any()):
                per[k] = s_query[pick].mean(0)
        self.S_per_emotion_, self.residual_norm_ = per, norms
        self.n_emotions_ = len(wheel)
        return self

    def _differences(self, adapter, pairs):
        g = self.n_gen_positions
        cont = adapter.embed(self.continuation_[:, :g])
        caps = []
        for x in (pairs.emotional, pairs.neutral):
            cap = Capture(residual=True)
            adapter.forward(torch.cat([x, cont], 1), capture=cap)
            caps.append(torch.stack([cap.store["residual"][l] for l in range(adapter.n_layers)], 1))
        norms = caps[1][:, :, pairs.query_pos].norm(dim=-1).mean(0)          # (L,)
        return (caps[0] - caps[1]).float(), norms

    def alpha(self, layer: int, alpha_rel: float) -> float:
        """``α_l`` with ``α_l‖S_l‖ = alpha_rel·mean‖h_{l,N}‖``; 0 for a zero-norm ``S_l``."""
        norm = float(self.S_[layer].norm())
        scale = float(self.residual_norm_[layer])
        return 0.0 if norm <= _ZERO * max(scale, 1.0) else alpha_rel * scale / norm


class CircuitLocalizer:
    """Coarse-to-fine localisation of the emotion circuit (layers → heads → neurons).

    Parameters
    ----------
    steering : SteeringVectors
        Fitted on the analysis pairs.
    alpha_rel : float
        Injection strength as a fraction of the mean residual norm of the layer.
    n_gen_positions : int
        ``G``, generated positions on which intention is also evaluated.
    positions : {"from_query", "last"}
        Inject at every ``t ≥ N`` (default) or at ``t = N`` only.
    seed : int
        Generation noise seed (shared by all conditions so runs are paired).

    References
    ----------
    Zhang, Sun, Xie & Tian, "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
    Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980). Its coarse-to-fine
    circuit localisation.

    Examples
    --------
    >>> from icml26.emotion_circuits import ToyLVLM, make_pairs, WHEEL
    >>> toy = ToyLVLM.planted(seed=0); pairs = make_pairs(toy, n=12, seed=0)
    >>> loc = CircuitLocalizer(SteeringVectors().fit(toy, pairs, WHEEL))
    >>> list(loc.scan_layers(toy, pairs, WHEEL).columns)[:2]
    ['layer', 'C']
    """

    def __init__(self, steering: SteeringVectors, alpha_rel: float = 1.0, n_gen_positions: int = 8,
                 positions: str = "from_query", seed: int = 0):
        if not hasattr(steering, "S_"):
            raise ValueError("steering must be a fitted SteeringVectors (call .fit first)")
        check_scalar_in(alpha_rel, "alpha_rel", low=0.0)
        check_int(n_gen_positions, "n_gen_positions", min_value=0, max_value=steering.n_gen_positions)
        if positions not in ("from_query", "last"):
            raise ValueError(f"positions must be 'from_query' or 'last', got {positions!r}")
        self.steering, self.alpha_rel, self.n_gen_positions = steering, alpha_rel, n_gen_positions
        self.positions, self.seed = positions, seed

    # -- layers ---------------------------------------------------------------------------
    def injection(self, layer: int, labels: torch.Tensor, query_pos: int, pooled: bool = False) -> ResidualAdd:
        """The steering edit ``h_{l,t} += α_l S_l^{(y)}`` at ``t ≥ N`` (or ``t = N``)."""
        sv = self.steering
        alpha = sv.alpha(layer, self.alpha_rel)
        vec = sv.S_[layer] if pooled else sv.S_per_emotion_[labels, layer]
        return ResidualAdd(layer, alpha * vec, from_pos=query_pos, only_first=self.positions == "last")

    def scan_layers(self, model, pairs, wheel) -> pd.DataFrame:
        """``𝓒_l = mean_j 𝓗(X̃_j^-; l) − 𝓗(X_j^-)`` for every layer (neutral runs, label-wise vectors)."""
        adapter = HFAdapter.wrap(model)
        pairs = pairs.to(adapter.device)
        n_tok = self.steering.n_tokens
        base = describe(adapter, pairs.neutral, pairs.labels, wheel, n_tok, self.seed)["H"]
        rows = []
        for layer in range(adapter.n_layers):
            edit = self.injection(layer, pairs.labels, pairs.query_pos)
            h = describe(adapter, pairs.neutral, pairs.labels, wheel, n_tok, self.seed, edits=[edit])["H"]
            rows.append({"layer": layer, "C": float((h - base).mean()), "H_injected": float(h.mean()),
                         "H_neutral": float(base.mean()), "alpha": self.steering.alpha(layer, self.alpha_rel),
                         "S_norm": float(self.steering.S_[layer].norm())})
        return pd.DataFrame(rows)

    # -- heads ----------------------------------------------------------------------------
    def intention(self, model, pairs) -> pd.DataFrame:
        """``𝓘(c) = cos(A_c, S_l)`` at the query token and over the first ``G`` generated positions."""
        adapter = HFAdapter.wrap(model)
        pairs = pairs.to(adapter.device)
        sv, n, g = self.steering, pairs.query_pos, self.n_gen_positions
        cont = adapter.embed(sv.continuation_[:, :g])
        heads = []
        for x in (pairs.emotional, pairs.neutral):
            cap = Capture(heads=True)
            adapter.forward(torch.cat([x, cont], 1), capture=cap)
            heads.append(cap.store["heads"])
        rows = []
        valid = sv.valid_
        for layer in range(adapter.n_layers):
            for head in range(adapter.n_heads):
                sl = slice(head * adapter.head_dim, (head + 1) * adapter.head_dim)
                diff = adapter.head_write(layer, head, (heads[0][layer][..., sl] - heads[1][layer][..., sl]).float())
                diff = diff[valid]
                a_query = diff[:, n].mean(0)
                a_gen = diff[:, n + 1:n + 1 + g].mean((0, 1)) if g else torch.zeros_like(a_query)
                cos_q = float(cosine(a_query, sv.S_[layer]))
                cos_g = float(cosine(a_gen, sv.S_generated_[layer])) if g else 0.0
                prefill = float(a_query.norm()) >= float(a_gen.norm())
                rows.append({"layer": layer, "head": head, "intention_query": cos_q, "intention_generated": cos_g,
                             "intention": cos_q if prefill else cos_g, "stage": "prefill" if prefill else "decode"})
        return pd.DataFrame(rows)

    def score_heads(self, model, pairs, wheel, heads=None, metric: str = "expected_hit_rate",
                    proxy_layer: int | None = None, denoising: bool = True) -> pd.DataFrame:
        """Head scores ``score(c) = 𝓘(c)·max(E_c, 0)`` with noising/denoising patching effects and specificity.

        Parameters
        ----------
        heads : list of (layer, head), optional
            Heads to patch (default all).
        metric : {"expected_hit_rate", "hit_rate", "projection"}
            Patching effect on the expected token hit rate teacher-forced on the model's own
            ``X^+`` description (default; one forward per head), on the sampled token hit
            rate (one generation per head), or the cheap proxy: the projection
            of the query-token residual at ``proxy_layer`` (default last layer) onto ``S_{l*}``
            (one forward per head).
        """
        adapter = HFAdapter.wrap(model)
        pairs = pairs.to(adapter.device)
        if metric not in ("expected_hit_rate", "hit_rate", "projection"):
            raise ValueError(f"metric must be 'expected_hit_rate', 'hit_rate' or 'projection', got {metric!r}")
        all_heads = [(l, h) for l in range(adapter.n_layers) for h in range(adapter.n_heads)]
        heads = all_heads if heads is None else check_heads(heads, adapter.n_layers, adapter.n_heads)
        table = self.intention(model, pairs).set_index(["layer", "head"])
        effects = self._patch_effects(adapter, pairs, wheel, heads, metric, proxy_layer, denoising)
        rows = []
        k = len(wheel)
        for (layer, head), (noise_i, denoise) in effects.items():
            per_emotion = np.array([float(noise_i[pairs.labels == e].mean()) if bool((pairs.labels == e).any())
                                    else 0.0 for e in range(k)])
            row = table.loc[(layer, head)].to_dict()
            e_c = float(noise_i.mean())
            row.update(layer=layer, head=head, noising=e_c, denoising=denoise,
                       score=row["intention"] * max(e_c, 0.0), specificity=specificity(per_emotion),
                       **{f"noising_{wheel.emotions[e]}": per_emotion[e] for e in range(k)})
            rows.append(row)
        cols = ["layer", "head", "intention", "intention_query", "intention_generated", "stage", "noising",
                "denoising", "score", "specificity"]
        frame = pd.DataFrame(rows)
        return frame[cols + [c for c in frame.columns if c not in cols]]

    def _patch_effects(self, adapter, pairs, wheel, heads, metric, proxy_layer, denoising) -> dict:
        sv, n_tok = self.steering, self.steering.n_tokens
        out = {}
        hd = adapter.head_dim
        if metric == "expected_hit_rate":
            cont = sv.continuation_
            seqs = {name: torch.cat([x, adapter.embed(cont[:, :n_tok - 1])], 1)
                    for name, x in (("emotional", pairs.emotional), ("neutral", pairs.neutral))}
            caps = {}
            for name, seq in seqs.items():
                cap = Capture(heads=True)
                adapter.forward(seq, capture=cap)
                caps[name] = cap.store["heads"]
            clean = expected_hit_rate(adapter, pairs.emotional, cont, pairs.labels, wheel)
            corrupt = expected_hit_rate(adapter, pairs.neutral, cont, pairs.labels, wheel) if denoising else None
            for l, h in heads:
                sl = slice(h * hd, (h + 1) * hd)
                noised = expected_hit_rate(adapter, pairs.emotional, cont, pairs.labels, wheel,
                                           [HeadReplace(l, h, caps["neutral"][l][..., sl])])
                d = float("nan")
                if denoising:
                    d = float((expected_hit_rate(adapter, pairs.neutral, cont, pairs.labels, wheel,
                                                 [HeadReplace(l, h, caps["emotional"][l][..., sl])]) - corrupt).mean())
                out[(l, h)] = (clean - noised, d)
            return out
        if metric == "hit_rate":
            clean = describe(adapter, pairs.emotional, pairs.labels, wheel, n_tok, self.seed)["H"]
            corrupt = describe(adapter, pairs.neutral, pairs.labels, wheel, n_tok, self.seed)["H"] if denoising else None
            for head in heads:
                noised = describe(adapter, pairs.emotional, pairs.labels, wheel, n_tok, self.seed,
                                  patch_source=pairs.neutral, patch_heads=[head])["H"]
                d = float("nan")
                if denoising:
                    d = float((describe(adapter, pairs.neutral, pairs.labels, wheel, n_tok, self.seed,
                                        patch_source=pairs.emotional, patch_heads=[head])["H"] - corrupt).mean())
                out[head] = (clean - noised, d)
            return out
        layer = adapter.n_layers - 1 if proxy_layer is None else check_int(
            proxy_layer, "proxy_layer", min_value=0, max_value=adapter.n_layers - 1)
        direction = sv.S_[layer] / sv.S_[layer].norm().clamp(min=_ZERO)
        n = pairs.query_pos

        def projection(x, edits=()):
            cap = Capture(residual=True)
            adapter.forward(x, edits, capture=cap)
            return cap.store["residual"][layer][:, n].float() @ direction

        caps = {}
        for name, x in (("emotional", pairs.emotional), ("neutral", pairs.neutral)):
            cap = Capture(heads=True)
            adapter.forward(x, capture=cap)
            caps[name] = cap.store["heads"]
        clean, corrupt = projection(pairs.emotional), projection(pairs.neutral)
        for l, h in heads:
            sl = slice(h * hd, (h + 1) * hd)
            noised = projection(pairs.emotional, [HeadReplace(l, h, caps["neutral"][l][..., sl])])
            d = float("nan")
            if denoising:
                d = float((projection(pairs.neutral, [HeadReplace(l, h, caps["emotional"][l][..., sl])])
                           - corrupt).mean())
            out[(l, h)] = (clean - noised, d)
        return out

    # -- neurons --------------------------------------------------------------------------
    def score_neurons(self, model, pairs, top_k: int = 16, layers=None) -> pd.DataFrame:
        """``κ_{l,n}`` for every MLP neuron of ``layers`` (default all), sorted descending, with
        a ``top`` flag on the ``top_k`` largest per call."""
        adapter = HFAdapter.wrap(model)
        pairs = pairs.to(adapter.device)
        check_int(top_k, "top_k", min_value=1, max_value=adapter.n_neurons * adapter.n_layers)
        layers = list(range(adapter.n_layers)) if layers is None else [
            check_int(int(l), "layers", min_value=0, max_value=adapter.n_layers - 1) for l in layers]
        acts = []
        for x in (pairs.emotional, pairs.neutral):
            cap = Capture(neurons=True)
            adapter.forward(x, capture=cap)
            acts.append(cap.store["neurons"])
        valid, n = self.steering.valid_, pairs.query_pos
        rows = []
        for l in layers:
            delta = (acts[0][l][valid, n] - acts[1][l][valid, n]).float().mean(0)        # (F,)
            cos = cosine(adapter.out_directions(l).float(), self.steering.S_[l][None])    # (F,)
            kappa = delta * cos
            rows += [{"layer": l, "neuron": i, "kappa": float(kappa[i]), "delta": float(delta[i]),
                      "cos": float(cos[i])} for i in range(adapter.n_neurons)]
        frame = pd.DataFrame(rows).sort_values("kappa", ascending=False, kind="stable").reset_index(drop=True)
        frame["top"] = frame.index < top_k
        return frame


def select_circuit(heads: pd.DataFrame, neurons: pd.DataFrame, n_mid: int = 4, n_deep: int = 2,
                   top_k: int = 16) -> dict:
    """Pick the intervention targets from the pipeline's scores (never from ground truth).

    ``mid_heads``: the ``n_mid`` best-scoring heads that act at the query token (prefill);
    ``deep_heads``: the ``n_deep`` best among those acting at generated positions (decode);
    ``l_emo`` = last layer of the mid heads; ``neurons``: the ``top_k`` largest ``κ`` in layers
    after ``l_emo`` (explicit-state neurons; the last layer when ``l_emo`` is the last).
    Resolution (not from the paper).
    """
    check_int(n_mid, "n_mid", min_value=0)
    check_int(n_deep, "n_deep", min_value=0)
    ranked = heads.sort_values("score", ascending=False, kind="stable")
    mid = ranked[ranked["stage"] == "prefill"].head(n_mid)
    deep = ranked[ranked["stage"] == "decode"].head(n_deep)
    mid_heads = [(int(r.layer), int(r.head)) for r in mid.itertuples()]
    deep_heads = [(int(r.layer), int(r.head)) for r in deep.itertuples()]
    l_emo = max((l for l, _ in mid_heads), default=-1)
    deep_layer = min(l_emo + 1, int(neurons["layer"].max()))      # the last layer when l_emo is the last
    later = neurons[neurons["layer"] >= deep_layer].sort_values("kappa", ascending=False, kind="stable")
    esn = [(int(r.layer), int(r.neuron)) for r in later.head(top_k).itertuples()]
    return {"mid_heads": mid_heads, "deep_heads": deep_heads, "l_emo": l_emo, "neurons": esn}
