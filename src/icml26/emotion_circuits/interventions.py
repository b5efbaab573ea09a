"""VEENA: training-free inference-time intervention on the located emotion circuit.

* VEE (Visual Emotion Enhancement): in the located heads, multiply the post-softmax attention
  from the query to visual keys by ``β`` and renormalise — prefill (query token ``t = N``) in the
  middle heads ``C_mid``, decoding (``t > N``) in the deep heads ``C_deep``. Implemented in its
  exact form, ``+ ln β`` on the visual-key logits, through the attention function registered in
  ``transformers``' ``ALL_ATTENTION_FUNCTIONS``.
* ENA (Emotional Neuron Augmentation): multiply the located explicit-state neurons by ``γ`` at
  every ``t ≥ N``.

Zhang, Sun, Xie, Tian, "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980), Stage III.
"""

from __future__ import annotations

import contextlib
import numbers

import torch

from icml26.core.validation import check_int

from .hooks import AttentionBoost, HFAdapter, NeuronScale, check_heads

__all__ = ["VEENA"]


def _check_factor(value, name: str, strictly_positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value:
        raise TypeError(f"{name} must be a real number, got {value!r}")
    if strictly_positive and not value > 0:
        raise ValueError(f"{name} must be > 0 (1 = no change), got {value}")
    if not strictly_positive and value < 0:
        raise ValueError(f"{name} must be >= 0 (1 = no change), got {value}")
    return float(value)


class VEENA:
    """VEE + ENA on a located circuit.

    Parameters
    ----------
    mid_heads, deep_heads : list of (layer, head)
        Heads re-weighted at prefill (query token) and at decoding steps.
    neurons : list of (layer, neuron)
        Explicit-state neurons amplified at ``t ≥ N``.
    beta : float > 0
        Visual attention factor (1 = VEE off).
    gamma : float >= 0
        Neuron factor (1 = ENA off; 0 ablates).

    References
    ----------
    Zhang, Sun, Xie & Tian, "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
    Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980).

    Examples
    --------
    >>> from icml26.emotion_circuits import ToyLVLM, make_pairs
    >>> toy = ToyLVLM.planted(seed=0); pairs = make_pairs(toy, n=2, seed=0)
    >>> veena = VEENA(mid_heads=[(3, 0)], deep_heads=[(7, 2)], neurons=[(6, 0)], beta=2.0, gamma=2.0)
    >>> with veena.applied(toy, visual_mask=pairs.visual_mask, query_pos=pairs.query_pos):
    ...     logits = toy(inputs_embeds=pairs.emotional).logits
    >>> logits.shape
    torch.Size([2, 18, 30])
    """

    def __init__(self, mid_heads=(), deep_heads=(), neurons=(), beta: float = 2.0, gamma: float = 2.0):
        self.mid_heads = [tuple(h) for h in mid_heads]
        self.deep_heads = [tuple(h) for h in deep_heads]
        self.neurons = [tuple(n) for n in neurons]
        self.beta = _check_factor(beta, "beta", strictly_positive=True)
        self.gamma = _check_factor(gamma, "gamma", strictly_positive=False)

    def edits(self, model, visual_mask: torch.Tensor, query_pos: int) -> list:
        """The hook edits for ``model`` (an HF model, ToyLVLM or :class:`HFAdapter`)."""
        adapter = HFAdapter.wrap(model)
        mid = check_heads(self.mid_heads, adapter.n_layers, adapter.n_heads, "mid_heads")
        deep = check_heads(self.deep_heads, adapter.n_layers, adapter.n_heads, "deep_heads")
        neurons = check_heads(self.neurons, adapter.n_layers, adapter.n_neurons, "neurons", "neuron", "MLP neurons")
        check_int(query_pos, "query_pos", min_value=0)
        edits = []
        if self.beta != 1.0 and (mid or deep):
            edits.append(AttentionBoost(mid, deep, self.beta, query_pos, torch.as_tensor(visual_mask).bool()))
        if self.gamma != 1.0:
            for layer in sorted({l for l, _ in neurons}):
                edits.append(NeuronScale(layer, [n for l, n in neurons if l == layer], self.gamma, query_pos))
        return edits

    @contextlib.contextmanager
    def applied(self, model, visual_mask: torch.Tensor | None = None, query_pos: int | None = None,
                input_ids: torch.Tensor | None = None):
        """Install VEE and ENA on ``model`` for the block (``model.generate`` works inside).

        Give ``visual_mask`` ((T0,) or (B, T0) bool) and ``query_pos`` (last prompt token), or
        ``input_ids`` with an adapter that has a ``visual_token_mask_fn`` (query = last token).
        """
        adapter = HFAdapter.wrap(model)
        if visual_mask is None:
            if input_ids is None:
                raise ValueError("give visual_mask and query_pos, or input_ids")
            visual_mask = adapter.visual_mask(input_ids)
            query_pos = input_ids.shape[1] - 1 if query_pos is None else query_pos
        if query_pos is None:
            raise ValueError("query_pos is required with visual_mask")
        with adapter.hooks(self.edits(adapter, visual_mask, query_pos)):
            yield adapter

    def __repr__(self) -> str:
        return (f"VEENA(mid_heads={self.mid_heads}, deep_heads={self.deep_heads}, "
                f"neurons={len(self.neurons)}, beta={self.beta}, gamma={self.gamma})")
