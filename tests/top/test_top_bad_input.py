"""Bad input (spec §9): clear errors naming the argument, or defined zero loss."""

import pytest
import torch

from icml26.top import (DSMTPForCausalLM, GPTConfig, MTPForCausalLM, TOPForCausalLM, TOPHead, TOPLoss,
                        listnet_loss, make_star_graph_dataset, top_targets, top_targets_sparse)


@pytest.mark.parametrize("fn", [top_targets, top_targets_sparse])
def test_window_below_one_is_rejected(fn):
    with pytest.raises(ValueError, match="window"):
        fn(torch.zeros(1, 5, dtype=torch.long), 4, 0)


@pytest.mark.parametrize("fn", [top_targets, top_targets_sparse])
def test_vocab_size_below_two_is_rejected(fn):
    with pytest.raises(ValueError, match="vocab_size"):
        fn(torch.zeros(1, 5, dtype=torch.long), 1, 2)


def test_float_labels_are_a_type_error():
    with pytest.raises(TypeError, match="labels"):
        top_targets(torch.zeros(1, 5), 4, 2)


def test_labels_outside_vocabulary_are_rejected():
    with pytest.raises(ValueError, match=r"labels holds id 9 outside \[0, 4\)"):
        top_targets(torch.tensor([[0, 1, 9, 2]]), 4, 2)


def test_negative_label_other_than_ignore_index_is_rejected():
    with pytest.raises(ValueError, match="ignore_index"):
        top_targets_sparse(torch.tensor([[0, -1, 2, 2]]), 4, 2)


def test_row_too_short_for_window_asks_for_seq_len():
    with pytest.raises(ValueError, match="seq_len"):
        top_targets(torch.zeros(1, 3, dtype=torch.long), 4, 3)


def test_seq_len_longer_than_row_is_rejected():
    with pytest.raises(ValueError, match="seq_len"):
        top_targets(torch.zeros(1, 3, dtype=torch.long), 4, 2, seq_len=5)


def test_dense_targets_refuse_above_memory_cap():
    with pytest.raises(MemoryError, match="top_targets_sparse"):
        top_targets(torch.zeros(2, 10, dtype=torch.long), 100, 5, max_elements=999)


def test_listnet_shape_mismatch_is_rejected():
    with pytest.raises(ValueError, match="same shape"):
        listnet_loss(torch.zeros(2, 4), torch.zeros(2, 5))


def test_listnet_nan_targets_are_rejected():
    with pytest.raises(ValueError, match="targets"):
        listnet_loss(torch.zeros(1, 3), torch.tensor([[0.0, float("nan"), 1.0]]))


def test_top_loss_rejects_labels_shorter_than_sequence():
    with pytest.raises(ValueError, match="labels"):
        TOPLoss(window=2)(torch.zeros(1, 5, 4), torch.zeros(1, 3, dtype=torch.long),
                          torch.nn.Linear(4, 3), TOPHead(4, 3))


def test_wrapper_rejects_labels_of_other_shape():
    from icml26.top import TinyGPT

    model = TOPForCausalLM(TinyGPT(GPTConfig(vocab_size=5, block_size=8, n_layer=1, n_head=1, n_embd=4)))
    with pytest.raises(ValueError, match="labels"):
        model(torch.zeros(1, 4, dtype=torch.long), labels=torch.zeros(1, 3, dtype=torch.long))


def test_wrapper_rejects_non_causal_lm():
    with pytest.raises(TypeError, match="get_decoder"):
        TOPForCausalLM(torch.nn.Linear(2, 2))


def test_top_head_rejects_bad_sizes():
    with pytest.raises(ValueError, match="vocab_size"):
        TOPHead(8, 1)


@pytest.mark.parametrize("cls", [MTPForCausalLM, DSMTPForCausalLM])
def test_n_future_must_leave_a_trunk(cls):
    with pytest.raises(ValueError, match="n_future"):
        cls(GPTConfig(vocab_size=5, block_size=8, n_layer=2, n_head=1, n_embd=4), n_future=2)


@pytest.mark.parametrize("kwargs,name", [({"num_nodes": 6}, "num_nodes"), ({"degree": 0}, "degree"),
                                         ({"path_len": 1}, "path_len")])
def test_star_graph_parameters_are_checked(kwargs, name):
    args = {"n": 2, "degree": 2, "path_len": 4, "num_nodes": 12, "seed": 0, **kwargs}
    with pytest.raises(ValueError, match=name):
        make_star_graph_dataset(**args)
