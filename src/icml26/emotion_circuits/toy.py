"""ToyLVLM: a hand-set 8-layer vision-language transformer with a planted emotion circuit.

The model has exact ground truth for every stage of the paper's Adapt → Aggregate → Execute
circuit (Zhang, Sun, Xie, Tian, "Interpreting and Enhancing Emotional Circuits in Large
Vision-Language Models via Cross-Modal Information Flow", ICML 2026, arXiv:2605.21980). The
paper's LVLMs cannot be had offline; this construction is our Resolution (not from the paper).

Residual width 64 split into orthonormal named subspaces (randomly rotated per seed):
flags ``bos, vis, q, gen`` (1 each), ``obj`` (8), ``raw`` (8), ``cue`` (4), ``agg`` (4),
``state`` (4), ``word`` (12), ``nuis`` (16). Sequence ``[BOS] v_1..v_16 [q] g_1..g_T``.

* Adapt (layer 0 MLP): neuron ``k`` = ReLU(4⟨r_k, h⟩ − 1) writes ``e_cue_k``.
* Aggregate (layers 3, 4): heads (3,0)=joy, (3,2)=sadness, (4,1)=anger, (4,3)=fear move
  ``cue_k`` from visual tokens into the query token as ``agg_k`` (with a BOS attention sink).
  Decoy (2,1) attends to all visual tokens, copies obj → nuis; shadow (5,1) attends to cue
  tokens and copies their obj → nuis (emotion-correlated attention, no causal role).
* Execute (layers 6, 7): 4 explicit-state neurons in layer 6, ReLU(⟨agg_k, h⟩ − θ) → ``state_k``;
  emotion-general heads (7,0) (copies ``state`` from the query token to generated tokens) and
  (7,2) (generated tokens read visual cues, ``cue → state``); content head (6,3) copies ``obj``.
* Unembedding: emotion word of category ``k`` has logit ``g_out⟨h, state_k⟩ + b_emo``
  (+ ``δ_joy`` for joy words: the language-prior hallucination); object word ``j``:
  ``g_obj⟨h, obj_j⟩ + b_narr``; filler words ``b_narr``.

Two descriptions (how generated words are read out; the circuit is the same):

* ``"shared"`` (the original toy): every generated word is drawn from one softmax over the whole
  vocabulary, so emotion, object and filler words compete for each position;
* ``"slotted"`` (Resolution, not from the paper; pre-registered before it was run):
  object content and emotional tone are carried separately. Generated positions alternate
  between *content slots* (even positions 0, 2, …: softmax over object + filler words only, i.e.
  object words decoded from the visual stream's ``obj`` subspace) and *tone slots* (odd positions:
  softmax over emotion + filler words only, i.e. tone words decoded from the ``state`` subspace).
  Implemented as a fixed template mask on the logits (:data:`SLOT_MASK_VALUE`) at the positions
  that predict generated words; weights, gains and calibration are the frozen shared ones.

Calibration (applied once, then frozen in :data:`CALIBRATED`): ``(g_agg, g_state, g_out, b_emo,
δ_joy, s_sink)`` picked on a grid so that the vanilla model has sample HIT in [0.30, 0.50] and a
joy-hallucination rate ≥ 0.15 on non-joy images (:func:`calibrate`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import nn

from icml26.core.device import to_numpy
from icml26.core.validation import check_int

from .metrics import EmotionWheel

__all__ = ["DESCRIPTIONS", "ToyLVLM", "ToyParams", "CALIBRATED", "make_pairs", "Pairs", "EMOTIONS", "WHEEL",
           "VOCABULARY", "calibrate", "toy_images"]

EMOTIONS = ["joy", "sadness", "anger", "fear"]
WHEEL_WORDS = {"joy": ["happy", "cheerful", "delighted"], "sadness": ["sad", "gloomy", "tearful"],
               "anger": ["angry", "furious", "irritated"], "fear": ["afraid", "scared", "terrified"]}
OBJECT_WORDS = ["dog", "car", "tree", "house", "cat", "boat", "chair", "flower"]
FILLER_WORDS = ["a", "the", "is", "in", "with", "there", "scene", "photo"]
SPECIALS = ["<bos>", "<q>"]
VOCABULARY = [w for k in EMOTIONS for w in WHEEL_WORDS[k]] + OBJECT_WORDS + FILLER_WORDS + SPECIALS
WHEEL = EmotionWheel(WHEEL_WORDS)
N_VISUAL, N_GENERATED, QUERY_POS = 16, 12, 17

# Named subspaces of the residual stream (coordinates before the per-seed rotation).
_SIZES = [("bos", 1), ("vis", 1), ("q", 1), ("gen", 1), ("obj", 8), ("raw", 8), ("cue", 4), ("agg", 4),
          ("state", 4), ("word", 12), ("nuis", 16)]
SUB: dict = {}
_start = 0
for _name, _size in _SIZES:
    SUB[_name] = slice(_start, _start + _size)
    _start += _size
D_MODEL, N_LAYERS, N_HEADS, HEAD_DIM, D_MLP = 64, 8, 4, 16, 32

PLANTED_SPECIFIC = {(3, 0): 0, (3, 2): 1, (4, 1): 2, (4, 3): 3}   # head -> emotion index
GENERAL_HEADS = [(7, 0), (7, 2)]
DECOY, SHADOW, CONTENT = (2, 1), (5, 1), (6, 3)
ESN_LAYER, ADAPT_LAYER = 6, 0

#: Toy descriptions (see the module docstring): "shared" = one softmax over all words per generated
#: position (the original toy); "slotted" = content slots (even) / tone slots (odd), Resolution
#: (not from the paper), fixed before it was run.
DESCRIPTIONS = ("shared", "slotted")
#: Additive logit of a word that its slot does not allow (finite, so softmax/log-softmax stay finite).
SLOT_MASK_VALUE = -1.0e4


@dataclass(frozen=True)
class ToyParams:
    """Gains of the planted circuit. The first six are set by :func:`calibrate`; the rest are fixed."""

    g_agg: float = 1.0
    g_state: float = 2.0
    g_out: float = 2.0
    b_emo: float = -1.0
    delta_joy: float = 1.0
    s_sink: float = 0.85
    lambda_cue: float = 0.25     # key gain of cue tokens (times the query gain 6)
    query_gain: float = 6.0
    vis_key: float = 0.5         # key gain of the visual flag (decoy and content heads)
    theta: float = 1.0           # ESN threshold
    g_obj: float = 9.0
    b_narr: float = 0.0
    g_general: float = 1.0       # (7,2) cue -> state gain
    leak: float = 0.05           # leakage of distractor query/key maps (every entry)
    leak_ov: float = 0.02        # leakage of distractor value/output maps (every entry)
    noise: float = 0.1           # visual-token noise std


#: Frozen result of :func:`calibrate` (grid search on seed 0, run once; see its docstring).
CALIBRATED = ToyParams(g_agg=1.0, g_state=1.0, g_out=2.0, b_emo=-0.5, delta_joy=1.5, s_sink=0.85)


@dataclass
class ToyConfig:
    num_hidden_layers: int = N_LAYERS
    num_attention_heads: int = N_HEADS
    hidden_size: int = D_MODEL
    intermediate_size: int = D_MLP
    vocab_size: int = len(VOCABULARY)
    head_dim: int = HEAD_DIM
    _attn_implementation: str = "eager"


@dataclass
class ToyOutput:
    logits: torch.Tensor
    cache: list | None = None


class ToyAttention(nn.Module):
    def __init__(self, config: ToyConfig, layer_idx: int):
        super().__init__()
        self.config, self.layer_idx = config, layer_idx
        self.head_dim, self.num_key_value_groups, self.scaling = config.head_dim, 1, 1.0
        width = config.num_attention_heads * config.head_dim
        self.q_proj = nn.Linear(config.hidden_size, width, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, width, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, width, bias=False)
        self.o_proj = nn.Linear(width, config.hidden_size, bias=False)

    def forward(self, h, mask, cache=None):
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
        from transformers.models.llama.modeling_llama import eager_attention_forward

        b, t, _ = h.shape
        shape = (b, t, self.config.num_attention_heads, self.head_dim)
        q, k, v = (p(h).view(shape).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        if cache is not None:          # [keys, values] of the earlier positions, updated in place
            if cache:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            cache[:] = [k, v]
        impl = self.config._attn_implementation
        fn = eager_attention_forward if impl == "eager" else ALL_ATTENTION_FUNCTIONS[impl]
        out, weights = fn(self, q, k, v, mask, scaling=self.scaling, dropout=0.0)
        return self.o_proj(out.reshape(b, t, -1)), weights


class ToyMLP(nn.Module):
    def __init__(self, config: ToyConfig):
        super().__init__()
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=True)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, h):
        return self.down_proj(torch.relu(self.up_proj(h)))


class ToyLayer(nn.Module):
    def __init__(self, config: ToyConfig, layer_idx: int):
        super().__init__()
        self.self_attn = ToyAttention(config, layer_idx)
        self.mlp = ToyMLP(config)

    def forward(self, h, mask, cache=None):
        h = h + self.self_attn(h, mask, cache)[0]
        return h + self.mlp(h)


class _Decoder(nn.Module):
    def __init__(self, config: ToyConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(ToyLayer(config, l) for l in range(config.num_hidden_layers))


class ToyLVLM(nn.Module):
    """The planted-circuit vision-language model (a ``torch.nn.Module``, HF-style module names).

    Use :meth:`planted` to build it. ``forward(inputs_embeds=...)`` returns an object with
    ``.logits`` (B, T, V); decoder layers are ``model.layers[l]`` with ``self_attn.o_proj`` and
    ``mlp.down_proj``, so :class:`~icml26.emotion_circuits.HFAdapter` hooks it like a Llama.

    Attributes
    ----------
    ground_truth : dict
        ``specific_heads`` {(l, h): emotion}, ``general_heads``, ``esn`` [(layer, neuron)],
        ``adapt_neurons``, ``decoy``, ``shadow``, ``content_head``, ``critical_layers``.
    basis : Tensor (64, 64)
        Column ``i`` is the residual direction of coordinate ``i`` of :data:`SUB`.

    References
    ----------
    Zhang, Sun, Xie & Tian, "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
    Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980). A planted-circuit model
    of our own for testing its pipeline (not from the paper).

    Examples
    --------
    >>> toy = ToyLVLM.planted(seed=0)
    >>> pairs = make_pairs(toy, n=4, seed=0)
    >>> toy(inputs_embeds=pairs.emotional).logits.shape
    torch.Size([4, 18, 30])
    """

    def __init__(self, config: ToyConfig | None = None):
        super().__init__()
        self.config = config or ToyConfig()
        self.model = _Decoder(self.config)
        self.lm_head = nn.Linear(self.config.hidden_size, self.config.vocab_size, bias=True)
        self.vocabulary = list(VOCABULARY)
        self.wheel = WHEEL
        self.ground_truth: dict = {}
        self.register_buffer("basis", torch.eye(self.config.hidden_size), persistent=True)
        self.register_buffer("raw_vectors", torch.zeros(len(EMOTIONS) + 1, self.config.hidden_size))
        self.params = CALIBRATED
        self.description = "shared"

    def slot_mask(self, positions: torch.Tensor) -> torch.Tensor | None:
        """``(T, V)`` additive logit mask of the output ``positions`` under the ``"slotted"``
        description (None under ``"shared"``). The output at position ``QUERY_POS + i`` predicts
        generated word ``i``: even ``i`` is a content slot (object + filler words), odd ``i`` a tone
        slot (emotion + filler words); prompt positions are not masked."""
        if self.description == "shared":
            return None
        kind = torch.tensor([0 if w in OBJECT_WORDS else 1 if WHEEL.category(w) is not None else 2
                             for w in self.vocabulary], device=positions.device)
        slot = positions - QUERY_POS
        gen = (slot >= 0)[:, None]
        content = (slot % 2 == 0)[:, None]
        banned = gen & ((content & (kind == 1)[None]) | (~content & (kind == 0)[None]))
        return torch.where(banned, SLOT_MASK_VALUE, 0.0)

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def forward(self, input_ids=None, inputs_embeds=None, cache=None, use_cache=False, **kwargs):
        """Logits of every position; ``cache`` (the list returned by an earlier call with
        ``use_cache=True``) continues a sequence from its cached keys and values."""
        h = self.model.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
        t = h.shape[1]
        cache = cache if cache is not None else (
            [[] for _ in self.model.layers] if use_cache else None)
        past = cache[0][0].shape[2] if cache and cache[0] else 0
        mask = torch.full((t, past + t), torch.finfo(h.dtype).min, dtype=h.dtype, device=h.device).triu(past + 1)
        for l, layer in enumerate(self.model.layers):
            h = layer(h, mask[None, None], None if cache is None else cache[l])
        logits = self.lm_head(h)
        mask = self.slot_mask(torch.arange(past, past + t, device=h.device))
        if mask is not None:
            logits = logits + mask.to(logits.dtype)
        return ToyOutput(logits, cache)

    def adapter(self):
        """An :class:`~icml26.emotion_circuits.HFAdapter` on this model (vocabulary and
        special-token exclusion set)."""
        from .hooks import HFAdapter

        allowed = torch.tensor([w not in SPECIALS for w in self.vocabulary])
        return HFAdapter(self, vocabulary=self.vocabulary, allowed_tokens=allowed)

    emotion_circuits_adapter = adapter

    @classmethod
    def planted(cls, seed: int = 0, params: ToyParams | None = None, description: str = "shared") -> "ToyLVLM":
        """Build the planted model; ``seed`` fixes the basis rotation, cue vectors, word vectors
        and distractor weights; ``params`` defaults to the frozen :data:`CALIBRATED` gains;
        ``description`` is one of :data:`DESCRIPTIONS` (same weights, different readout)."""
        check_int(seed, "seed", min_value=0)
        if description not in DESCRIPTIONS:
            raise ValueError(f"description must be one of {DESCRIPTIONS}, got {description!r}")
        params = CALIBRATED if params is None else params
        model = cls()
        model.params = params
        model.description = description
        _plant(model, np.random.default_rng([seed, 25]), params)
        return model.eval()


def _e(name: str, i: int = 0) -> int:
    return SUB[name].start + i


def _plant(model: ToyLVLM, rng: np.random.Generator, p: ToyParams) -> None:
    d, hd = D_MODEL, HEAD_DIM
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    raw, _ = np.linalg.qr(rng.standard_normal((8, len(EMOTIONS) + 1)))       # r_1..r_K, r_0 (last)
    raw_vecs = np.zeros((len(EMOTIONS) + 1, d))
    raw_vecs[:, SUB["raw"]] = raw.T
    nuis = SUB["nuis"]

    for l, layer in enumerate(model.model.layers):
        attn = layer.self_attn
        wq, wk, wv = (np.zeros((N_HEADS * hd, d)) for _ in range(3))
        wo = np.zeros((d, N_HEADS * hd))
        for c in range(N_HEADS):
            rows = slice(c * hd, (c + 1) * hd)
            q, k, v, o = wq[rows], wk[rows], wv[rows], wo[:, rows]
            head = (l, c)
            if head in PLANTED_SPECIFIC:
                e = PLANTED_SPECIFIC[head]
                q[0, _e("q")] = p.query_gain
                k[0, _e("cue", e)], k[0, _e("bos")] = p.lambda_cue, p.s_sink
                v[0, _e("cue", e)] = 1.0
                o[_e("agg", e), 0] = p.g_agg
            elif head == DECOY:
                q[0, _e("q")], k[0, _e("vis")] = p.query_gain, p.vis_key
                v[:8, SUB["obj"]] = np.eye(8)
                o[nuis.start:nuis.start + 8, :8] = np.eye(8)
            elif head == SHADOW:
                q[0, _e("q")] = p.query_gain
                k[0, SUB["cue"]], k[0, _e("bos")] = p.lambda_cue, p.s_sink
                v[:8, SUB["obj"]] = np.eye(8)
                o[nuis.start + 8:nuis.start + 16, :8] = np.eye(8)
            elif head == (7, 0):
                q[0, _e("gen")], k[0, _e("q")] = p.query_gain, 2.0
                v[:4, SUB["state"]] = np.eye(4)
                o[SUB["state"], :4] = np.eye(4)
            elif head == (7, 2):
                q[0, _e("gen")] = p.query_gain
                k[0, SUB["cue"]], k[0, _e("bos")] = p.lambda_cue, p.s_sink
                v[:4, SUB["cue"]] = np.eye(4)
                o[SUB["state"], :4] = p.g_general * np.eye(4)
            elif head == CONTENT:
                q[0, _e("gen")], q[0, _e("q")], k[0, _e("vis")] = p.query_gain, p.query_gain, p.vis_key
                v[:8, SUB["obj"]] = np.eye(8)
                o[SUB["obj"], :8] = np.eye(8)
            else:   # distractor: random maps inside nuis, small leakage everywhere
                for m, scale, leak in ((q, 0.3, p.leak), (k, 0.3, p.leak), (v, 0.0625, p.leak_ov)):
                    m[:, nuis] = scale * rng.standard_normal((hd, 16))
                    m += leak * rng.standard_normal(m.shape)
                o[nuis, :] = 0.0625 * rng.standard_normal((16, hd))
                o += p.leak_ov * rng.standard_normal(o.shape)
        for proj, w in ((attn.q_proj, wq), (attn.k_proj, wk), (attn.v_proj, wv)):
            proj.weight.data = torch.tensor(w @ basis.T, dtype=torch.float32)
        attn.o_proj.weight.data = torch.tensor(basis @ wo, dtype=torch.float32)

        up, bias, down = np.zeros((D_MLP, d)), np.zeros(D_MLP), np.zeros((d, D_MLP))
        first = 0
        if l == ADAPT_LAYER:
            for k in range(len(EMOTIONS)):
                up[k] = 4.0 * raw_vecs[k]
                bias[k] = -1.0
                down[_e("cue", k), k] = 1.0
            first = len(EMOTIONS)
        elif l == ESN_LAYER:
            for k in range(len(EMOTIONS)):
                up[k, _e("agg", k)] = 1.0
                bias[k] = -p.theta
                down[_e("state", k), k] = p.g_state
            first = len(EMOTIONS)
        for n in range(first, D_MLP):        # nuisance neurons, restricted to nuis
            up[n, nuis] = 0.5 * rng.standard_normal(16)
            bias[n] = -0.2
            down[nuis, n] = 0.1 * rng.standard_normal(16)
        layer.mlp.up_proj.weight.data = torch.tensor(up @ basis.T, dtype=torch.float32)
        layer.mlp.up_proj.bias.data = torch.tensor(bias, dtype=torch.float32)
        layer.mlp.down_proj.weight.data = torch.tensor(basis @ down, dtype=torch.float32)

    # Unembedding and token embeddings.
    n_vocab = len(VOCABULARY)
    w_out, b_out = np.zeros((n_vocab, d)), np.zeros(n_vocab)
    emb = np.zeros((n_vocab, d))
    words = rng.standard_normal((n_vocab, 12))
    words /= np.linalg.norm(words, axis=1, keepdims=True)
    for i, word in enumerate(VOCABULARY):
        emb[i, SUB["word"]], emb[i, _e("gen")] = words[i], 1.0
        cat = WHEEL._index.get(word)
        if cat is not None:
            w_out[i, _e("state", cat)] = p.g_out
            b_out[i] = p.b_emo + (p.delta_joy if cat == 0 else 0.0)
        elif word in OBJECT_WORDS:
            w_out[i, _e("obj", OBJECT_WORDS.index(word))] = p.g_obj
            b_out[i] = p.b_narr
        elif word in FILLER_WORDS:
            b_out[i] = p.b_narr
        else:
            b_out[i] = -30.0
    emb[VOCABULARY.index("<bos>")] = 0.0
    emb[VOCABULARY.index("<bos>"), _e("bos")] = 1.0
    emb[VOCABULARY.index("<q>")] = 0.0
    emb[VOCABULARY.index("<q>"), _e("q")] = 1.0
    model.lm_head.weight.data = torch.tensor(w_out @ basis.T, dtype=torch.float32)
    model.lm_head.bias.data = torch.tensor(b_out, dtype=torch.float32)
    model.model.embed_tokens.weight.data = torch.tensor(emb @ basis.T, dtype=torch.float32)
    model.basis.copy_(torch.tensor(basis, dtype=torch.float32))
    model.raw_vectors.copy_(torch.tensor(raw_vecs, dtype=torch.float32))
    model.ground_truth = {
        "specific_heads": dict(PLANTED_SPECIFIC), "general_heads": list(GENERAL_HEADS),
        "esn": [(ESN_LAYER, k) for k in range(len(EMOTIONS))],
        "adapt_neurons": [(ADAPT_LAYER, k) for k in range(len(EMOTIONS))],
        "decoy": DECOY, "shadow": SHADOW, "content_head": CONTENT, "critical_layers": [0, 3, 4, 6, 7]}


# -- data -------------------------------------------------------------------------------------

@dataclass
class Pairs:
    """Aligned counterfactual prompts ``X^+`` (emotional image) and ``X^-`` (neutral image).

    Attributes
    ----------
    emotional, neutral : FloatTensor (n, T0, d)
        Prompt embeddings (``inputs_embeds``), identical except for the emotion cue.
    labels : LongTensor (n,)
        Emotion index of each pair (into the wheel's categories).
    visual_mask : BoolTensor (T0,)
        Visual-token positions of the prompt.
    query_pos : int
        ``N``, the last prompt token (the query token).
    objects : LongTensor (n,), optional
        Dominant-object index (for the object-word utility metric).
    object_token_ids : LongTensor (n_objects,), optional
        Vocabulary id of each object's word.

    References
    ----------
    Zhang, Sun, Xie & Tian, "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
    Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980). Its counterfactual
    (emotional vs neutral image) prompt pairs.

    Examples
    --------
    >>> toy = ToyLVLM.planted(seed=0)
    >>> pairs = make_pairs(toy, n=4, seed=0)
    >>> pairs.emotional.shape == pairs.neutral.shape, pairs.labels.shape, int(pairs.visual_mask.sum()) > 0
    (True, torch.Size([4]), True)
    """

    emotional: torch.Tensor
    neutral: torch.Tensor
    labels: torch.Tensor
    visual_mask: torch.Tensor
    query_pos: int
    objects: torch.Tensor | None = None
    object_token_ids: torch.Tensor | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("emotional", "neutral"):
            x = getattr(self, name)
            if not isinstance(x, torch.Tensor) or x.ndim != 3:
                raise ValueError(f"{name} must be a (n, T, d) tensor of prompt embeddings, got "
                                 f"{getattr(x, 'shape', type(x).__name__)}")
            if not bool(torch.isfinite(x).all()):
                raise ValueError(f"{name} contains NaN or infinity")
        if self.emotional.shape != self.neutral.shape:
            raise ValueError("emotional and neutral prompts must be aligned (same n, length and width) "
                             f"for patching; got {tuple(self.emotional.shape)} vs {tuple(self.neutral.shape)}")
        if self.emotional.shape[0] == 0:
            raise ValueError("pairs are empty; expected at least one (emotional, neutral) pair")
        self.labels = torch.as_tensor(self.labels).long()
        if self.labels.shape != (self.emotional.shape[0],):
            raise ValueError(f"labels must have one entry per pair ({self.emotional.shape[0]}), "
                             f"got shape {tuple(self.labels.shape)}")
        self.visual_mask = torch.as_tensor(self.visual_mask).bool()
        if self.visual_mask.shape != (self.emotional.shape[1],):
            raise ValueError(f"visual_mask must have shape ({self.emotional.shape[1]},), "
                             f"got {tuple(self.visual_mask.shape)}")
        check_int(self.query_pos, "query_pos", min_value=0, max_value=self.emotional.shape[1] - 1)

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def subset(self, index) -> "Pairs":
        index = torch.as_tensor(index, dtype=torch.long)
        pick = (lambda x: None if x is None else x[index])
        return replace(self, emotional=self.emotional[index], neutral=self.neutral[index],
                       labels=self.labels[index], objects=pick(self.objects),
                       extra={k: v[index] for k, v in self.extra.items()})

    def split(self, n_first: int) -> tuple:
        return self.subset(range(n_first)), self.subset(range(n_first, len(self)))

    def to(self, device) -> "Pairs":
        """The pairs with every tensor on ``device``."""
        move = (lambda x: None if x is None else x.to(device))
        return replace(self, emotional=move(self.emotional), neutral=move(self.neutral),
                       labels=move(self.labels), visual_mask=move(self.visual_mask),
                       objects=move(self.objects), object_token_ids=move(self.object_token_ids),
                       extra={k: move(v) if isinstance(v, torch.Tensor) else v
                              for k, v in self.extra.items()})


def toy_images(n: int, seed: int, raw_vectors: torch.Tensor, noise: float, rng=None):
    """Visual tokens in the unrotated coordinates: ``(emotional, neutral, labels, objects, strength)``.

    Each of 16 patches is ``e_vis + e_obj_j + N(0, noise²)``; 10 patches carry the dominant
    object, the rest random objects; ``m ~ U{2..4}`` patches also carry ``c · r_k``
    (``c ~ U(0.3, 1.2)``) in the emotional image and ``c · r_0`` in the neutral one.
    """
    rng = np.random.default_rng([seed, 7]) if rng is None else rng
    k = len(EMOTIONS)
    labels = rng.integers(0, k, n)
    objects = rng.integers(0, 8, n)
    strength = rng.uniform(0.3, 1.2, n)
    base = np.zeros((n, N_VISUAL, D_MODEL))
    base[:, :, _e("vis")] = 1.0
    raw = to_numpy(raw_vectors)
    cue_mask = np.zeros((n, N_VISUAL), bool)
    for i in range(n):
        patch_obj = rng.integers(0, 8, N_VISUAL)
        patch_obj[rng.permutation(N_VISUAL)[:10]] = objects[i]
        base[i, np.arange(N_VISUAL), SUB["obj"].start + patch_obj] = 1.0
        cue_mask[i, rng.permutation(N_VISUAL)[:rng.integers(2, 5)]] = True
    base += noise * rng.standard_normal(base.shape)
    emo, neu = base.copy(), base.copy()
    emo += cue_mask[:, :, None] * strength[:, None, None] * raw[labels][:, None, :]
    neu += cue_mask[:, :, None] * strength[:, None, None] * raw[k][None, None, :]
    return emo, neu, labels, objects, strength


def make_pairs(toy: ToyLVLM, n: int = 400, seed: int = 0) -> Pairs:
    """``n`` counterfactual pairs for the ToyLVLM: ``[BOS] v_1..v_16 [q]`` with an emotional vs a
    neutral image of the same scene (see :func:`toy_images`), as prompt embeddings on the
    toy's device.

    Examples
    --------
    >>> toy = ToyLVLM.planted(seed=0)
    >>> pairs = make_pairs(toy, n=8, seed=1)
    >>> pairs.emotional.shape, pairs.query_pos, int(pairs.visual_mask.sum())
    (torch.Size([8, 18, 64]), 17, 16)
    """
    check_int(n, "n", min_value=1)
    check_int(seed, "seed", min_value=0)
    emo, neu, labels, objects, strength = toy_images(n, seed, toy.raw_vectors, toy.params.noise)
    basis = to_numpy(toy.basis)
    device = toy.basis.device
    emb = toy.model.embed_tokens.weight.detach()
    bos = emb[VOCABULARY.index("<bos>")].expand(n, 1, -1)
    q = emb[VOCABULARY.index("<q>")].expand(n, 1, -1)

    def prompt(vis):
        return torch.cat([bos, torch.tensor(vis @ basis.T, dtype=torch.float32, device=device), q], 1)

    visual = torch.zeros(N_VISUAL + 2, dtype=torch.bool)
    visual[1:N_VISUAL + 1] = True
    pairs = Pairs(prompt(emo), prompt(neu), torch.tensor(labels), visual, QUERY_POS,
                  objects=torch.tensor(objects),
                  object_token_ids=torch.tensor([VOCABULARY.index(w) for w in OBJECT_WORDS]),
                  extra={"strength": torch.tensor(strength, dtype=torch.float32)})
    return pairs.to(device)


# -- calibration ------------------------------------------------------------------------------

CALIBRATION_GRID = {"g_agg": (1.0,), "g_state": (1.0, 2.0), "g_out": (2.0, 3.0),
                    "b_emo": (-0.5, 0.0), "delta_joy": (1.5, 2.0), "s_sink": (0.7, 0.85)}


def calibrate(grid: dict | None = None, n: int = 200, seed: int = 0, target: float = 0.40):
    """The calibration rule: the grid point (seed-0 model, ``n`` pairs) whose vanilla sample HIT is
    in [0.30, 0.50] with joy hallucination ≥ 0.15 on non-joy images, closest to ``target`` HIT.

    Run once; its result is frozen in :data:`CALIBRATED` (no re-tuning against attribution results).

    Returns
    -------
    (ToyParams, list of dict)
        The chosen gains and every grid point's (params, HIT, hallucination).
    """
    from .circuits import behaviour

    grid = CALIBRATION_GRID if grid is None else grid
    names = list(grid)
    rows, best = [], None
    for values in itertools.product(*(grid[k] for k in names)):
        params = replace(ToyParams(), **dict(zip(names, values)))
        toy = ToyLVLM.planted(seed=seed, params=params)
        pairs = make_pairs(toy, n=n, seed=10_000 + seed)
        stats = behaviour(toy.adapter(), pairs, WHEEL, N_GENERATED, seed=seed)
        row = dict(zip(names, values), hit=stats["HIT"], halluc=stats["joy_hallucination"])
        rows.append(row)
        ok = 0.30 <= row["hit"] <= 0.50 and row["halluc"] >= 0.15
        if ok and (best is None or abs(row["hit"] - target) < abs(best[1]["hit"] - target)):
            best = (params, row)
    if best is None:
        raise RuntimeError(f"{rows}: "
                           "no calibration grid point meets HIT in [0.30, 0.50] and hallucination >= 0.15")
    return best[0], rows
