"""The emotion wheel and the diffuse hit-rate metrics of VEENA.

Zhang, Sun, Xie, Tian. "Interpreting and Enhancing Emotional Circuits in Large
Vision-Language Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980).

* token hit rate ``𝓗(X, y)`` = (generated words whose wheel category is ``y``) / (generated words);
* sample ``HIT`` = ``y`` belongs to the predicted emotion set. Resolution (not from the paper):
  the predicted set of one description is the set of wheel categories mentioned most often
  (ties all kept; no emotion word gives the empty set).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import torch

__all__ = ["EmotionWheel", "hit_rate", "sample_hit", "predicted_emotions", "category_counts"]


class EmotionWheel:
    """A standardised emotion wheel: synonym words grouped into categories.

    Parameters
    ----------
    categories : mapping of str to sequence of str
        ``{"joy": ["happy", "cheerful", ...], ...}``; a word may belong to one category only.

    Attributes
    ----------
    emotions : list of str
        The category names, in the given order (category ``k`` is ``emotions[k]``).

    References
    ----------
    Zhang, Sun, Xie & Tian, "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
    Models via Cross-Modal Information Flow", ICML 2026 (arXiv:2605.21980). The wheel of emotion
    categories follows Plutchik, "Emotion: A Psychoevolutionary Synthesis", Harper & Row, 1980.

    Examples
    --------
    >>> wheel = EmotionWheel({"joy": ["happy"], "sadness": ["sad", "gloomy"]})
    >>> wheel.category("gloomy"), wheel.category("table")
    ('sadness', None)
    """

    def __init__(self, categories: Mapping[str, Sequence[str]]):
        if not isinstance(categories, Mapping) or not categories:
            raise ValueError("categories must be a non-empty mapping of emotion -> synonym words")
        self.emotions = [str(k) for k in categories]
        self._index: dict[str, int] = {}
        for k, (name, words) in enumerate(categories.items()):
            if isinstance(words, str) or not list(words):
                raise ValueError(f"categories[{name!r}] must be a non-empty list of words, got {words!r}")
            for word in words:
                if word in self._index:
                    raise ValueError(f"word {word!r} appears in two categories of the wheel")
                self._index[str(word)] = k

    def __len__(self) -> int:
        return len(self.emotions)

    def category(self, word: str) -> str | None:
        """The category of ``word``, or None for a word the wheel does not know."""
        k = self._index.get(word)
        return None if k is None else self.emotions[k]

    def index(self, emotion: str) -> int:
        """Position of ``emotion`` in :attr:`emotions` (ValueError naming it otherwise)."""
        if emotion not in self.emotions:
            raise ValueError(f"emotion must be one of {self.emotions}, got {emotion!r}")
        return self.emotions.index(emotion)

    def category_ids(self, vocabulary: Sequence[str]) -> torch.Tensor:
        """LongTensor ``(V,)``: category index of each vocabulary entry, -1 for non-emotion words."""
        return torch.tensor([self._index.get(w, -1) for w in vocabulary], dtype=torch.long)


def _check_generated(tokens, labels, n_categories: int):
    tokens = torch.as_tensor(tokens)
    labels = torch.as_tensor(labels)
    for name, t in (("categories", tokens), ("labels", labels)):
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            raise TypeError(f"{name} must be an integer tensor of category indices, got {t.dtype}")
    if tokens.ndim != 2:
        raise ValueError(f"categories must be 2-D (samples, generated words), got shape {tuple(tokens.shape)}")
    if labels.ndim != 1 or labels.shape[0] != tokens.shape[0]:
        raise ValueError(f"labels must be 1-D with one label per sample of categories "
                         f"({tokens.shape[0]}), got shape {tuple(labels.shape)}")
    if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= n_categories):
        raise ValueError(f"labels must be category indices in [0, {n_categories}), got "
                         f"[{int(labels.min())}, {int(labels.max())}]")
    return tokens.long(), labels.long()


def category_counts(categories: torch.Tensor, n_categories: int) -> torch.Tensor:
    """``(B, K)`` counts of each wheel category among each sample's generated words
    (``categories`` holds one category index per word, -1 for non-emotion words)."""
    categories = torch.as_tensor(categories).long()
    counts = torch.zeros(categories.shape[0], n_categories + 1, dtype=torch.long,
                         device=categories.device)
    counts.scatter_add_(1, categories.clamp(min=-1) + 1, torch.ones_like(categories))
    return counts[:, 1:]


def hit_rate(categories, labels, n_categories: int, *, return_flags: bool = False):
    """Per-sample token hit rate ``𝓗``: share of generated words in the label's wheel category.

    Parameters
    ----------
    categories : LongTensor of shape (B, T)
        Wheel category index of each generated word (-1 for words outside the wheel; they
        count in the denominator and never hit). A padding value of -2 marks "no word".
    labels : LongTensor of shape (B,)
    n_categories : int
    return_flags : bool
        Also return a bool tensor flagging samples with zero generated words (their 𝓗 is 0).

    Returns
    -------
    FloatTensor of shape (B,) (and the flags)

    Examples
    --------
    >>> hit_rate(torch.tensor([[0, 0, -1, 1]]), torch.tensor([0]), 2)
    tensor([0.5000])
    """
    cats, labels = _check_generated(categories, labels, n_categories)
    words = (cats >= -1).sum(1)
    hits = (cats == labels[:, None]).sum(1).float()
    empty = words == 0
    rate = torch.where(empty, torch.zeros_like(hits), hits / words.clamp(min=1).float())
    return (rate, empty) if return_flags else rate


def predicted_emotions(categories, n_categories: int) -> torch.Tensor:
    """``(B, K)`` bool: the predicted emotion set of each description (Resolution, not from
    the paper): the categories mentioned most often, ties kept, empty when none is mentioned."""
    counts = category_counts(torch.as_tensor(categories).clamp(min=-1), n_categories)
    top = counts.max(1, keepdim=True).values
    return (counts == top) & (top > 0)


def sample_hit(categories, labels, n_categories: int) -> torch.Tensor:
    """Per-sample ``HIT`` (float 0/1): the label is in the predicted emotion set.

    Examples
    --------
    >>> sample_hit(torch.tensor([[0, 1, 1], [1, 0, -1]]), torch.tensor([0, 0]), 2)
    tensor([0., 1.])
    """
    cats, labels = _check_generated(categories, labels, n_categories)
    pred = predicted_emotions(cats, n_categories)
    return pred.gather(1, labels[:, None]).squeeze(1).float()
