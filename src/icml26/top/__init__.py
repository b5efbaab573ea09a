"""Token Order Prediction (TOP) — Zuhri, Fuadi & Aji, ICML 2026 (arXiv:2508.19228).

An auxiliary language-modelling objective: one extra unembedding head ranks the vocabulary
by how soon each token next appears (ListNet loss); dropped at inference.
"""

from icml26.top.baselines import DSMTPForCausalLM, MTPForCausalLM, MTPOutput
from icml26.top.data import (CharTokenizer, StarGraphDataset, corpus_sha1, evaluate_star_graph,
                             load_stdlib_corpus, make_star_graph_dataset, split_corpus)
from icml26.top.gpt import GPTConfig, TinyGPT
from icml26.top.token_order import (DENSE_TARGET_CAP, TOPForCausalLM, TOPHead, TOPLoss, TOPOutput,
                                    causal_lm_loss, listnet_loss, ndcg_at_k, shift_labels,
                                    sparse_listnet_loss, top_targets, top_targets_sparse)

__all__ = [
    "top_targets", "top_targets_sparse", "listnet_loss", "sparse_listnet_loss", "causal_lm_loss",
    "shift_labels", "ndcg_at_k", "DENSE_TARGET_CAP", "TOPHead", "TOPLoss", "TOPOutput",
    "TOPForCausalLM", "MTPForCausalLM", "DSMTPForCausalLM", "MTPOutput", "GPTConfig", "TinyGPT",
    "make_star_graph_dataset", "evaluate_star_graph", "StarGraphDataset", "load_stdlib_corpus",
    "corpus_sha1", "CharTokenizer", "split_corpus",
]
