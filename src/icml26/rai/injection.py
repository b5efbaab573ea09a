"""Risk Awareness Injection (RAI): the Unsafe Prototype Subspace and the hook-based,
training-free modulation of the highest-risk visual tokens of a LLaVA-style model.

Reference: Mengxuan Wang, Yuxin Chen, Gang Xu, Tao He, Hongjie Jiang, Ming Li, "Risk Awareness
Injection: Calibrating Vision-Language Models for Safety without Compromising Utility", ICML 2026
(arXiv:2602.03402).

Notes
-----
Paper notation → code: prototypes ``û_k`` → rows of :attr:`UnsafePrototypeSubspace.U`;
scores ``s_{v,k} = ⟨h_v, û_k⟩ / ‖h_v‖`` → ``info["scores"]``; risk ``r_v = max_k s_{v,k}`` →
``info["risk"]``; ratio ``ρ`` → ``ratio``; gate ``τ`` → ``tau``; strength ``λ`` → ``strength``.
The modulation is ``h'_v = h_v + λ Σ_{k : s_{v,k} > τ} s_{v,k} û_k`` for the
``m = max(1, ⌈ρ N_v⌉)`` visual tokens with the largest ``r_v`` (and ``r_v > τ``), applied once at
prefill to the input of decoder layer ``layer`` (layer 0 = the LLM input sequence).
"""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager
from typing import Callable, Sequence

import torch

from icml26.core.validation import check_choice, check_int, check_scalar_in
from icml26.zoo.hf import decoder_layers  # one lookup for every hooked HF model (re-exported)

__all__ = ["DEFAULT_KEYWORDS", "UnsafePrototypeSubspace", "RiskAwarenessInjection", "TokenReplacement",
           "decoder_layers"]

#: Nine category words covering the six risk categories (illegal activity, malware/hacking,
#: pornography, hate speech, physical harm, fraud). The paper's exact list is not published;
#: this one is our choice (K = 9 as in the paper).
DEFAULT_KEYWORDS = ("crime", "hacking", "porn", "hate", "weapon", "violence", "fraud", "theft", "abuse")

EPS = 1e-8  # added to norms so a zero-norm visual token has cosine 0, never NaN


class UnsafePrototypeSubspace:
    """Unit prototypes ``U ∈ R^{K×d}`` built from a language model's own input embeddings.

    Parameters
    ----------
    prototypes : Tensor of shape (K, d)
        Raw prototype vectors (normalised to unit rows here); ``K >= 1``, finite, non-zero rows.
    keywords : sequence of str, optional
        The words the rows came from (for display).

    Attributes
    ----------
    U : Tensor of shape (K, d)
        Unit prototypes ``û_k`` (float32).
    keywords : tuple of str

    Notes
    -----
    ``u_k = mean_{j ∈ tok(w_k)} E[j]``; ``û_k = u_k / ‖u_k‖``. With ``center=True`` (a
    Resolution, not from the paper) the vocabulary's mean embedding ``ē`` is subtracted first,
    removing the common offset that inflates all cosines.

    References
    ----------
    Wang, Chen, Xu, He, Jiang & Li, "Risk Awareness Injection: Calibrating Vision-Language Models
    for Safety without Compromising Utility", ICML 2026 (arXiv:2602.03402). Its unsafe prototype
    subspace (Section 3).

    Examples
    --------
    >>> ups = UnsafePrototypeSubspace(torch.eye(3)[:2] * 5.0, keywords=("a", "b"))
    >>> ups.U.norm(dim=1)
    tensor([1., 1.])
    """

    def __init__(self, prototypes: torch.Tensor, keywords: Sequence[str] | None = None):
        if not isinstance(prototypes, torch.Tensor):
            raise TypeError(f"prototypes must be a torch.Tensor, got {type(prototypes).__name__}")
        if prototypes.ndim != 2:
            raise ValueError(f"prototypes must have shape (K, d), got {tuple(prototypes.shape)}")
        if prototypes.shape[0] == 0:
            raise ValueError("prototypes must hold at least one prototype (K >= 1), got K = 0")
        P = prototypes.detach().to(torch.float32)
        if not torch.isfinite(P).all():
            raise ValueError("prototypes contain NaN or infinity")
        norms = P.norm(dim=1, keepdim=True)
        if (norms <= EPS).any():
            raise ValueError("prototypes contain a zero-norm row; each prototype needs a direction")
        self.U = P / norms
        self.keywords = tuple(keywords) if keywords is not None else tuple(f"p{k}" for k in range(len(P)))
        if len(self.keywords) != len(P):
            raise ValueError(f"keywords has {len(self.keywords)} entries for {len(P)} prototypes")

    @property
    def n_prototypes(self) -> int:
        return int(self.U.shape[0])

    @property
    def dim(self) -> int:
        return int(self.U.shape[1])

    @classmethod
    def from_embeddings(cls, embeddings: torch.Tensor, token_ids: Sequence[Sequence[int]],
                        keywords: Sequence[str] | None = None, center: bool = False):
        """Prototypes as means of embedding rows.

        Parameters
        ----------
        embeddings : Tensor of shape (V, d)
            The input embedding matrix ``E``.
        token_ids : sequence of sequences of int
            Sub-token ids of each keyword (each non-empty).
        keywords : sequence of str, optional
        center : bool
            Subtract the mean embedding ``ē`` (Resolution, off by default).
        """
        if not isinstance(embeddings, torch.Tensor) or embeddings.ndim != 2:
            raise ValueError("embeddings must be a 2-D tensor (vocab, dim)")
        if len(token_ids) == 0:
            raise ValueError("keywords must hold at least one word (K >= 1), got K = 0")
        E = embeddings.detach().to(torch.float32)
        rows = []
        for k, ids in enumerate(token_ids):
            ids = list(ids)
            if not ids or min(ids) < 0 or max(ids) >= E.shape[0]:
                raise ValueError(f"token_ids[{k}] must be non-empty ids in [0, {E.shape[0]}), got {ids}")
            rows.append(E[ids].mean(dim=0))
        P = torch.stack(rows)
        if center:
            P = P - E.mean(dim=0, keepdim=True)
        return cls(P, keywords)

    @classmethod
    def from_model(cls, model, tokenizer, keywords: Sequence[str] = DEFAULT_KEYWORDS,
                   center: bool = False):
        """Prototypes from ``model``'s input embeddings of ``keywords`` tokenized by ``tokenizer``.

        Multi-token keywords are averaged over their sub-tokens; a keyword whose sub-tokens are
        all the unknown token raises (listing every such word).

        Parameters
        ----------
        model : transformers.PreTrainedModel
            Anything with ``get_input_embeddings()``.
        tokenizer : transformers tokenizer
        keywords : sequence of str
            The unsafe lexicon (default :data:`DEFAULT_KEYWORDS`, K = 9).
        center : bool
            Resolution (not from the paper): subtract the mean embedding.

        Returns
        -------
        UnsafePrototypeSubspace
        """
        if isinstance(keywords, str):
            raise TypeError("keywords must be a sequence of words, not one string")
        keywords = list(keywords)
        if not keywords:
            raise ValueError("keywords must hold at least one word (K >= 1), got K = 0")
        unk = getattr(tokenizer, "unk_token_id", None)
        token_ids, unknown = [], []
        for word in keywords:
            if not isinstance(word, str) or not word.strip():
                raise ValueError(f"keywords must be non-empty strings, got {word!r}")
            ids = [i for i in tokenizer.encode(word, add_special_tokens=False)]
            if not ids or all(i == unk for i in ids):
                unknown.append(word)
            token_ids.append([i for i in ids if i != unk])
        if unknown:
            raise ValueError(f"keywords not in the tokenizer's vocabulary (all sub-tokens unknown): {unknown}")
        return cls.from_embeddings(model.get_input_embeddings().weight, token_ids, keywords, center)

    @classmethod
    def random(cls, n_prototypes: int, dim: int, seed: int = 0):
        """``n_prototypes`` random unit directions in ``R^dim`` (the random-prototype control)."""
        check_int(n_prototypes, "n_prototypes", min_value=1)
        check_int(dim, "dim", min_value=1)
        generator = torch.Generator().manual_seed(check_int(seed, "seed", min_value=0))
        return cls(torch.randn(n_prototypes, dim, generator=generator),
                   tuple(f"random{k}" for k in range(n_prototypes)))

    def subset(self, n: int):
        """The first ``n`` prototypes (the K ablation)."""
        check_int(n, "n", min_value=1, max_value=self.n_prototypes)
        return UnsafePrototypeSubspace(self.U[:n], self.keywords[:n])

    def projector(self) -> torch.Tensor:
        """``P_U = Uᵀ (U Uᵀ)⁺ U``, the orthogonal projector onto ``span(U)`` (d × d)."""
        return self.U.T @ torch.linalg.pinv(self.U @ self.U.T) @ self.U

    def __repr__(self) -> str:
        return f"UnsafePrototypeSubspace(K={self.n_prototypes}, d={self.dim}, keywords={list(self.keywords)})"


def _blocks(positions: torch.Tensor, tokens_per_image: int | None) -> list[torch.Tensor]:
    """Split sorted visual-token positions of one row into image blocks (contiguous runs,
    cut further into chunks of ``tokens_per_image`` when given)."""
    if positions.numel() == 0:
        return []
    breaks = torch.nonzero(positions[1:] - positions[:-1] != 1).flatten() + 1
    runs = torch.tensor_split(positions, breaks.tolist())
    if tokens_per_image is None:
        return list(runs)
    return [chunk for run in runs for chunk in torch.split(run, tokens_per_image)]


class RiskAwarenessInjection:
    """Training-free RAI: score visual tokens against unsafe prototypes, modulate the top ones.

    Parameters
    ----------
    subspace : UnsafePrototypeSubspace
    ratio : float in (0, 1]
        Share ``ρ`` of an image's visual tokens to modulate: ``m = max(1, ⌈ρ N_v⌉)``.
    tau : float in [-1, 1)
        Cosine gate ``τ``: only tokens with ``r_v > τ`` are modulated, only categories with
        ``s_{v,k} > τ`` injected (default 0: pure top-m with positive cosines).
    strength : float >= 0
        ``λ``; ``0`` is a bit-exact no-op.
    layer : int >= 0
        Decoder layer whose *input* is modulated (0 = the LLM input; deeper layers are
        off-manifold for embedding-space prototypes and warn at :meth:`attach`).
    mode : {"additive", "projection"}
        ``"additive"`` (paper): ``h + λ Σ s_k û_k``; ``"projection"`` (Resolution, not from the
        paper): ``h + λ P_U h``.
    scale : {"absolute", "relative"}
        ``"relative"`` (Resolution, not from the paper) multiplies the injection by ``‖h_v‖``.
    tokens_per_image : int, optional
        Cut runs of visual tokens into images of this many tokens (default: each contiguous
        run is one image).

    Attributes
    ----------
    last_selection_ : list of dict
        After a prefill under :meth:`attach`: per image block, ``row``, ``positions`` (in the
        sequence), ``selected`` (indices within the block), ``risk`` (all ``r_v``).

    References
    ----------
    Wang, Chen, Xu, He, Jiang & Li, "Risk Awareness Injection: Calibrating Vision-Language Models
    for Safety without Compromising Utility", ICML 2026 (arXiv:2602.03402).

    Examples
    --------
    >>> ups = UnsafePrototypeSubspace(torch.eye(4)[:2])
    >>> rai = RiskAwarenessInjection(ups, ratio=0.25)
    >>> h = torch.tensor([[1.0, 0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0], [0.6, 0, 0.8, 0]])
    >>> h_mod, info = rai.modulate(h)
    >>> info["selected"].tolist(), h_mod[0].tolist()
    ([0], [2.0, 0.0, 0.0, 0.0])
    """

    def __init__(self, subspace: UnsafePrototypeSubspace, ratio: float = 0.01, tau: float = 0.0,
                 strength: float = 1.0, layer: int = 0, mode: str = "additive",
                 scale: str = "absolute", tokens_per_image: int | None = None):
        if not isinstance(subspace, UnsafePrototypeSubspace):
            raise TypeError(f"subspace must be an UnsafePrototypeSubspace, got {type(subspace).__name__}")
        self.subspace = subspace
        self.ratio = check_scalar_in(ratio, "ratio", low=0.0, high=1.0, low_inclusive=False)
        self.tau = check_scalar_in(tau, "tau", low=-1.0, high=1.0, high_inclusive=False)
        self.strength = check_scalar_in(strength, "strength", low=0.0)
        self.layer = check_int(layer, "layer", min_value=0)
        self.mode = check_choice(mode, "mode", ("additive", "projection"))
        self.scale = check_choice(scale, "scale", ("absolute", "relative"))
        self.tokens_per_image = (None if tokens_per_image is None
                                 else check_int(tokens_per_image, "tokens_per_image", min_value=1))
        self.last_selection_: list[dict] = []
        self._projector = subspace.projector() if mode == "projection" else None

    # -- the math on a block of visual tokens -------------------------------------------
    def n_selected(self, n_visual: int) -> int:
        """``m = max(1, ⌈ρ N_v⌉)`` (capped at ``N_v``)."""
        return min(n_visual, max(1, math.ceil(self.ratio * n_visual - 1e-9)))

    def scores(self, h: torch.Tensor) -> torch.Tensor:
        """Cosines ``s_{v,k}`` of visual tokens ``h`` (..., N_v, d) with the prototypes, in float32."""
        h32 = h.to(torch.float32)
        U = self.subspace.U.to(h32.device)
        return (h32 @ U.T) / (h32.norm(dim=-1, keepdim=True) + EPS)

    def select(self, h: torch.Tensor) -> dict:
        """Scores, risk and the selected tokens of one image's visual tokens ``h`` (N_v, d):
        the ``m`` largest ``r_v``, kept only where ``r_v > τ``."""
        S = self.scores(h)                                   # (N_v, K)
        risk = S.max(dim=-1).values                          # (N_v,)
        if h.shape[0] == 0:
            return {"scores": S, "risk": risk, "selected": torch.zeros(0, dtype=torch.long)}
        top = torch.topk(risk, self.n_selected(h.shape[0])).indices
        return {"scores": S, "risk": risk, "selected": top[risk[top] > self.tau]}

    def modulate(self, h: torch.Tensor):
        """Modulate one image's (or a batch of images') visual tokens.

        Parameters
        ----------
        h : Tensor of shape (N_v, d) or (B, N_v, d)
            Visual tokens at the hooked layer.

        Returns
        -------
        h_mod : Tensor, same shape and dtype as ``h``
        info : dict
            ``scores`` (…, N_v, K), ``risk`` (…, N_v), ``selected`` (indices of the modulated
            tokens; a list of tensors for batched input).
        """
        if not isinstance(h, torch.Tensor) or h.ndim not in (2, 3):
            raise ValueError(f"h must be a tensor of shape (N_v, d) or (B, N_v, d), got "
                             f"{getattr(h, 'shape', type(h).__name__)}")
        if h.shape[-1] != self.subspace.dim:
            raise ValueError(f"h has width {h.shape[-1]} but the prototypes have width "
                             f"{self.subspace.dim}; build the prototypes from this model")
        if h.ndim == 3:
            outs = [self.modulate(block) for block in h]
            return (torch.stack([o[0] for o in outs]),
                    {"scores": torch.stack([o[1]["scores"] for o in outs]),
                     "risk": torch.stack([o[1]["risk"] for o in outs]),
                     "selected": [o[1]["selected"] for o in outs]})
        info = self.select(h)
        S, selected = info["scores"], info["selected"]
        if self.strength == 0.0 or selected.numel() == 0:
            return h, info
        hs = h[selected].to(torch.float32)                   # (m, d)
        if self.mode == "additive":
            weights = S[selected] * (S[selected] > self.tau)  # (m, K): only active categories
            inject = weights @ self.subspace.U.to(hs.device)
        else:
            inject = hs @ self._projector.to(hs.device)
        if self.scale == "relative":
            inject = inject * hs.norm(dim=-1, keepdim=True)
        out = h.clone()
        out[selected] = (hs + self.strength * inject).to(h.dtype)
        return out, info

    def _modulate_block(self, h: torch.Tensor, row: int):
        """The hook's call on one image block of batch row ``row`` (subclasses may use ``row``)."""
        return self.modulate(h)

    # -- hooks on a Hugging Face model ---------------------------------------------------
    @contextmanager
    def attach(self, model, visual_mask: Callable[[torch.Tensor], torch.Tensor] | None = None):
        """Register the hooks on ``model`` for the duration of a ``with`` block.

        A pre-hook on the top-level ``forward`` reads ``input_ids`` and computes the visual-token
        mask (``input_ids == model.config.image_token_id`` unless ``visual_mask`` is given); a
        pre-hook on decoder layer ``layer`` modulates the visual tokens at prefill only (not when
        the cache already holds tokens, so decoding steps are untouched).

        Parameters
        ----------
        model : transformers.PreTrainedModel
            A LLaVA-style model (``LlavaForConditionalGeneration``, Qwen-VL, …).
        visual_mask : callable, optional
            ``visual_mask(input_ids) -> BoolTensor`` of the same shape.

        Yields
        ------
        RiskAwarenessInjection
            ``self``.
        """
        layers = decoder_layers(model)
        check_int(self.layer, "layer", min_value=0, max_value=len(layers) - 1)
        hidden = model.get_input_embeddings().weight.shape[1]
        if hidden != self.subspace.dim:
            raise ValueError(f"the prototypes have width {self.subspace.dim} but the model's hidden "
                             f"size is {hidden}")
        if visual_mask is None:
            token_id = getattr(model.config, "image_token_id", None)
            if token_id is None:
                token_id = getattr(model.config, "image_token_index", None)
            if token_id is None:
                raise ValueError("model.config has no image_token_id; pass visual_mask=callable(input_ids)")
            visual_mask = lambda ids: ids == token_id  # noqa: E731
        elif not callable(visual_mask):
            raise TypeError("visual_mask must be callable(input_ids) -> BoolTensor")
        if self.layer > 0:
            warnings.warn(f"RAI at layer {self.layer}: embedding-space prototypes are off-manifold "
                          "for deeper residual streams", UserWarning, stacklevel=3)
        state = {"mask": None}

        def capture(module, args, kwargs):
            ids = kwargs.get("input_ids", args[0] if args else None)
            state["mask"] = None if ids is None else visual_mask(ids)
            past = kwargs.get("past_key_values", kwargs.get("cache"))
            if past is None or past.get_seq_length() == 0:
                self.last_selection_ = []  # a new prefill: forget the previous selection

        def inject(module, args, kwargs):
            hidden_states = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
            mask = state["mask"]
            cache = kwargs.get("cache", kwargs.get("past_key_values"))
            if mask is None or mask.shape != hidden_states.shape[:2] or not bool(mask.any()):
                return None
            if cache is not None and cache.get_seq_length(self.layer) > 0:
                return None  # a decoding step (or continued prefill): already modulated
            hs = hidden_states.clone()
            selection = []
            for row in range(hs.shape[0]):
                for positions in _blocks(torch.nonzero(mask[row]).flatten(), self.tokens_per_image):
                    new, info = self._modulate_block(hs[row, positions], row)
                    hs[row, positions] = new
                    selection.append({"row": row, "positions": positions, "selected": info["selected"],
                                      "risk": info["risk"]})
            self.last_selection_ = selection
            state["mask"] = None
            if "hidden_states" in kwargs:
                kwargs = dict(kwargs, hidden_states=hs)
                return args, kwargs
            return (hs, *args[1:]), kwargs

        handles = [model.register_forward_pre_hook(capture, with_kwargs=True),
                   layers[self.layer].register_forward_pre_hook(inject, with_kwargs=True)]
        try:
            yield self
        finally:
            for handle in handles:
                handle.remove()

    def __repr__(self) -> str:
        return (f"RiskAwarenessInjection(K={self.subspace.n_prototypes}, ratio={self.ratio}, tau={self.tau}, "
                f"strength={self.strength}, layer={self.layer}, mode={self.mode!r}, scale={self.scale!r})")


class TokenReplacement(RiskAwarenessInjection):
    """Positive control (not from the paper): put a known direction where RAI would inject.

    The ``m`` visual tokens that RAI selects (same prototypes, ``ratio``, ``tau``) are replaced by
    a target direction rescaled to each token's norm, ``h'_v = ‖h_v‖ · t / ‖t‖``. With ``t`` the
    input embedding of the image's own unsafe word, this is the strongest layer-0 edit of those
    tokens that still looks like a word to the language model: if it does not make the model
    refuse, no injection at those tokens can (the world gives no pathway).

    Parameters
    ----------
    subspace, ratio, tau, layer, tokens_per_image
        As in :class:`RiskAwarenessInjection` (they fix which tokens are replaced); ``tau``
        defaults to ``-1`` so exactly ``m`` tokens are replaced.

    Attributes
    ----------
    targets : Tensor of shape (B, d) or None
        One target direction per batch row, set before each prefill under :meth:`attach`.

    References
    ----------
    Wang, Chen, Xu, He, Jiang & Li, "Risk Awareness Injection: Calibrating Vision-Language Models
    for Safety without Compromising Utility", ICML 2026 (arXiv:2602.03402). A selection control of
    our own built on its token selection, not from the paper.

    Examples
    --------
    >>> ups = UnsafePrototypeSubspace(torch.eye(3)[:1])
    >>> h = torch.tensor([[3.0, 4.0, 0.0], [0.0, 1.0, 0.0]])
    >>> TokenReplacement(ups, ratio=0.5).modulate(h, torch.tensor([0.0, 0.0, 2.0]))[0].tolist()
    [[0.0, 0.0, 5.0], [0.0, 1.0, 0.0]]
    """

    def __init__(self, subspace: UnsafePrototypeSubspace, ratio: float = 0.01, tau: float = -1.0,
                 layer: int = 0, tokens_per_image: int | None = None):
        super().__init__(subspace, ratio=ratio, tau=tau, strength=1.0, layer=layer,
                         tokens_per_image=tokens_per_image)
        self.targets: torch.Tensor | None = None

    def modulate(self, h: torch.Tensor, target: torch.Tensor | None = None):
        """Replace RAI's selected tokens of one image ``h`` (N_v, d) by ``target`` (d,) at their norms.

        Returns
        -------
        h_mod : Tensor, same shape and dtype as ``h``
        info : dict
            As :meth:`RiskAwarenessInjection.modulate`.
        """
        if not isinstance(h, torch.Tensor) or h.ndim != 2:
            raise ValueError(f"h must be a tensor of shape (N_v, d), got {getattr(h, 'shape', type(h).__name__)}")
        if not isinstance(target, torch.Tensor) or target.shape != (h.shape[-1],):
            raise ValueError(f"target must be a tensor of shape ({h.shape[-1]},), got "
                             f"{getattr(target, 'shape', type(target).__name__)}")
        t32 = target.to(torch.float32)
        if not torch.isfinite(t32).all() or float(t32.norm()) <= EPS:
            raise ValueError("target must be finite with a non-zero norm")
        if h.shape[-1] != self.subspace.dim:
            raise ValueError(f"h has width {h.shape[-1]} but the prototypes have width {self.subspace.dim}")
        info = self.select(h)
        selected = info["selected"]
        out = h.clone()
        if selected.numel():
            norms = h[selected].to(torch.float32).norm(dim=-1, keepdim=True)
            out[selected] = (norms * (t32 / t32.norm()).to(h.device)).to(h.dtype)
        return out, info

    def _modulate_block(self, h: torch.Tensor, row: int):
        if self.targets is None or row >= len(self.targets):
            raise ValueError(f"TokenReplacement.targets must hold one target per batch row (row {row} "
                             f"needed, got {None if self.targets is None else len(self.targets)})")
        return self.modulate(h, self.targets[row])
