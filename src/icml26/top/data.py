"""Data for the TOP reproduction: the star-graph path-finding task and a stdlib text corpus.

* :func:`make_star_graph_dataset` / :func:`evaluate_star_graph` — the synthetic task of
  Bachmann & Nagarajan (2024) on which the TOP paper reports that TOP succeeds where NTP,
  MTP and DS-MTP stay at the Clever-Hans plateau. The generator mirrors the reference
  ``Next-Token-Failures`` code (spec §5) and carries exact ground truth.
* :func:`load_stdlib_corpus` + :class:`CharTokenizer` — English prose shipped with Python
  itself (the language reference topics and stdlib docstrings), so the text LM needs no
  download. :func:`corpus_sha1` fingerprints it for the results. These come from
  :mod:`icml26.zoo.corpus`, shared with the other language-model methods.

References
----------
Zuhri, Fuadi & Aji, ICML 2026 (arXiv:2508.19228); Bachmann & Nagarajan, "The pitfalls of
next-token prediction", ICML 2024.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from icml26.core.validation import check_int
from icml26.zoo.corpus import CharTokenizer, corpus_sha1, load_stdlib_corpus, split_corpus

__all__ = ["StarGraphDataset", "make_star_graph_dataset", "evaluate_star_graph",
           "load_stdlib_corpus", "corpus_sha1", "CharTokenizer", "split_corpus"]


# -- star graph -----------------------------------------------------------------------

@dataclass
class StarGraphDataset:
    """Tokenised star graphs ``u v | u v | ... / s g = s p_1 ... g`` (commas dropped).

    Attributes
    ----------
    tokens : LongTensor of shape (n, prefix_len + path_len)
    prefix_len : int
        Tokens up to and including ``=`` (``3 d (l-1) + 3``).
    degree, path_len, num_nodes : int
    vocab_size : int
        ``num_nodes + 4``: nodes, then ``|``, ``=``, ``/``, ``$``.
    ignore_index : int

    References
    ----------
    Bachmann & Nagarajan, "The Pitfalls of Next-Token Prediction", ICML 2024 (the star-graph task).
    Zuhri, Fuadi & Aji, "Predicting the Order of Upcoming Tokens Improves Language Modeling", ICML
    2026 (arXiv:2508.19228).

    Examples
    --------
    >>> from icml26.top import make_star_graph_dataset
    >>> data = make_star_graph_dataset(n=4, degree=2, path_len=4, num_nodes=12, seed=0)
    >>> len(data), data.vocab_size, data.tokens.shape[1] == data.prefix_len + data.path_len
    (4, 16, True)
    """

    tokens: torch.Tensor
    prefix_len: int
    degree: int
    path_len: int
    num_nodes: int
    ignore_index: int = -100

    @property
    def vocab_size(self) -> int:
        return self.num_nodes + 4

    def __len__(self) -> int:
        return self.tokens.shape[0]

    @property
    def input_ids(self) -> torch.Tensor:
        """Model input: ``tokens[:, :-1]``."""
        return self.tokens[:, :-1]

    @property
    def labels(self) -> torch.Tensor:
        """Per-position targets: ignore on the prefix, path tokens from the ``=`` position on."""
        return self._masked()[:, 1:]

    @property
    def paths(self) -> torch.Tensor:
        return self.tokens[:, self.prefix_len:]

    def _masked(self) -> torch.Tensor:
        masked = self.tokens.clone()
        masked[:, : self.prefix_len] = self.ignore_index
        return masked

    def hf_labels(self):
        """``(labels, lookahead_labels)`` in the Hugging Face convention for the wrappers."""
        masked = self._masked()
        return masked[:, :-1], masked[:, -1:]


def make_star_graph_dataset(n: int, degree: int, path_len: int, num_nodes: int, seed: int,
                            ignore_index: int = -100) -> StarGraphDataset:
    """Sample ``n`` star graphs G(degree, path_len, num_nodes).

    Generative process (per graph): source ``s`` and goal ``g != s`` uniform; ``l - 2``
    distinct intermediate nodes; ``d - 1`` other arms of ``l - 1`` fresh nodes chained from
    ``s``; the ``d (l - 1)`` directed edges are shuffled. One uniform random permutation of
    the nodes per graph supplies all of these draws.

    Parameters
    ----------
    n : int
        Number of graphs.
    degree : int
        d >= 1, arms leaving the source.
    path_len : int
        l >= 2, nodes on the source -> goal path (both included).
    num_nodes : int
        N >= d (l - 1) + 1.
    seed : int

    Returns
    -------
    StarGraphDataset

    Examples
    --------
    >>> ds = make_star_graph_dataset(3, degree=2, path_len=4, num_nodes=12, seed=0)
    >>> ds.tokens.shape, ds.prefix_len
    (torch.Size([3, 25]), 21)

    References
    ----------
    Bachmann & Nagarajan, ICML 2024; Zuhri et al., ICML 2026 (arXiv:2508.19228).
    """
    check_int(n, "n", min_value=1)
    check_int(degree, "degree", min_value=1)
    check_int(path_len, "path_len", min_value=2)
    check_int(num_nodes, "num_nodes", min_value=2)
    check_int(seed, "seed", min_value=0)
    need = degree * (path_len - 1) + 1
    if num_nodes < need:
        raise ValueError(f"num_nodes must be >= degree*(path_len-1)+1 = {need}, got {num_nodes}")
    rng = np.random.default_rng(seed)
    perm = np.argsort(rng.random((n, num_nodes)), axis=1)
    source, goal = perm[:, 0], perm[:, 1]
    path = np.concatenate([perm[:, :1], perm[:, 2 : path_len], perm[:, 1:2]], axis=1)
    edges = [np.stack([path[:, i], path[:, i + 1]], axis=1) for i in range(path_len - 1)]
    arm_nodes = perm[:, path_len : path_len + (degree - 1) * (path_len - 1)]
    for arm in range(degree - 1):
        chain = np.concatenate([source[:, None], arm_nodes[:, arm * (path_len - 1):(arm + 1) * (path_len - 1)]], axis=1)
        edges += [np.stack([chain[:, i], chain[:, i + 1]], axis=1) for i in range(path_len - 1)]
    edges = np.stack(edges, axis=1)                                  # (n, m, 2)
    order = np.argsort(rng.random(edges.shape[:2]), axis=1)
    edges = np.take_along_axis(edges, order[:, :, None], axis=1)
    bar, eq, slash = num_nodes, num_nodes + 1, num_nodes + 2
    n_edges = edges.shape[1]
    edge_tokens = np.concatenate([edges, np.full((n, n_edges, 1), bar)], axis=2).reshape(n, -1)[:, :-1]
    tokens = np.concatenate([edge_tokens, np.full((n, 1), slash), source[:, None], goal[:, None],
                             np.full((n, 1), eq), path], axis=1)
    prefix_len = 3 * n_edges - 1 + 4
    return StarGraphDataset(torch.as_tensor(tokens, dtype=torch.long), prefix_len, degree,
                            path_len, num_nodes, ignore_index)


@torch.no_grad()
def evaluate_star_graph(model, dataset: StarGraphDataset, batch_size: int = 256) -> dict:
    """Greedy-decode the path after each prefix and score it.

    Parameters
    ----------
    model : callable
        ``model(input_ids).logits`` of shape (B, T, V) (any wrapper in this package, or a
        Hugging Face causal LM). Its graphs are decoded on the device of the model's
        parameters.
    dataset : StarGraphDataset
    batch_size : int

    Returns
    -------
    dict
        ``exact``: fraction of graphs whose whole greedy path is right; ``per_token``:
        greedy accuracy at each path index; ``teacher_forced``: accuracy at each path index
        when the true previous path tokens are given.
    """
    check_int(batch_size, "batch_size", min_value=1)
    was_training = getattr(model, "training", False)
    if hasattr(model, "eval"):
        model.eval()
    prefix, length = dataset.prefix_len, dataset.path_len
    param = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
    device = param.device if param is not None else dataset.tokens.device   # the model's device
    exact = 0
    greedy_hits = torch.zeros(length, device=device)
    forced_hits = torch.zeros(length, device=device)
    for start in range(0, len(dataset), batch_size):
        tokens = dataset.tokens[start : start + batch_size].to(device)
        truth = tokens[:, prefix:]
        forced = model(tokens[:, :-1]).logits[:, prefix - 1 :].argmax(-1)
        forced_hits += (forced == truth).float().sum(0)
        ids = tokens[:, :prefix]
        for _ in range(length):
            nxt = model(ids).logits[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, nxt], dim=1)
        hits = ids[:, prefix:] == truth
        greedy_hits += hits.float().sum(0)
        exact += int(hits.all(1).sum())
    if was_training and hasattr(model, "train"):
        model.train()
    n = len(dataset)
    return {"exact": exact / n, "per_token": (greedy_hits / n).tolist(),
            "teacher_forced": (forced_hits / n).tolist()}


# -- stdlib text corpus ---------------------------------------------------------------
# The corpus, its fingerprint, the split and the char tokenizer live in icml26.zoo.corpus
# (shared with the other language-model methods); re-exported here unchanged. TOP builds the
# corpus in-process (load_stdlib_corpus), which is the text its recorded SHA-1 describes.
