"""Star-graph generator/evaluator, stdlib corpus, MTP/DS-MTP baselines, negative control."""

import numpy as np
import pytest
import torch

from icml26.top import (CharTokenizer, DSMTPForCausalLM, GPTConfig, MTPForCausalLM, causal_lm_loss,
                        corpus_sha1, evaluate_star_graph, load_stdlib_corpus, make_star_graph_dataset,
                        shift_labels, split_corpus)
from icml26.top.baselines import _future_targets
from icml26.top.experiment import UnrelatedTOPLoss, shuffle_window_scores
from icml26.top.token_order import TOPLoss

IGN = -100


def parse_graph(row, ds):
    n = ds.num_nodes
    prefix = row[: ds.prefix_len].tolist()
    edge_part = prefix[: prefix.index(n + 2)]
    edges = [tuple(edge_part[i : i + 2]) for i in range(0, len(edge_part), 3)]
    source, goal = prefix[-3], prefix[-2]
    return edges, source, goal, row[ds.prefix_len :].tolist()


def test_star_graph_structure_and_ground_truth():
    ds = make_star_graph_dataset(50, degree=3, path_len=5, num_nodes=20, seed=1)
    assert ds.prefix_len == 3 * 3 * 4 + 3 and ds.tokens.shape == (50, ds.prefix_len + 5)
    for row in ds.tokens:
        edges, source, goal, path = parse_graph(row, ds)
        assert len(edges) == 3 * 4 and path[0] == source and path[-1] == goal
        assert all((a, b) in edges for a, b in zip(path, path[1:]))
        assert sum(1 for a, _ in edges if a == source) == 3
        nodes = [v for e in edges for v in e]
        assert len(set(nodes)) == 3 * 4 + 1  # arms use fresh nodes


def test_star_graph_is_deterministic_per_seed():
    a = make_star_graph_dataset(5, 2, 4, 12, seed=7).tokens
    assert torch.equal(a, make_star_graph_dataset(5, 2, 4, 12, seed=7).tokens)
    assert not torch.equal(a, make_star_graph_dataset(5, 2, 4, 12, seed=8).tokens)


def test_star_labels_ignore_prefix_and_hold_path_from_equals_sign():
    ds = make_star_graph_dataset(4, 2, 4, 12, seed=0)
    labels = ds.labels
    assert (labels[:, : ds.prefix_len - 1] == IGN).all()
    assert torch.equal(labels[:, ds.prefix_len - 1 :], ds.paths)
    hf, lookahead = ds.hf_labels()
    assert torch.equal(shift_labels(hf, lookahead)[:, :-1], labels)


class Oracle(torch.nn.Module):
    """Knows every graph: puts all mass on the true next token (and random mass elsewhere)."""

    def __init__(self, ds, wrong_from=None):
        super().__init__()
        self.ds, self.wrong_from = ds, wrong_from
        self.index = {tuple(r[: ds.prefix_len].tolist()): r for r in ds.tokens}

    def forward(self, ids):
        logits = torch.zeros(ids.shape[0], ids.shape[1], self.ds.vocab_size)
        for b, row in enumerate(ids):
            full = self.index[tuple(row[: self.ds.prefix_len].tolist())]
            for t in range(ids.shape[1]):
                token = int(full[t + 1])
                if self.wrong_from is not None and t + 1 >= self.ds.prefix_len + self.wrong_from:
                    token = (token + 1) % self.ds.num_nodes
                logits[b, t, token] = 1.0
        return type("Out", (), {"logits": logits})()


def test_evaluator_scores_oracle_as_perfect():
    ds = make_star_graph_dataset(20, 2, 4, 12, seed=3)
    result = evaluate_star_graph(Oracle(ds), ds, batch_size=7)
    assert result["exact"] == 1.0 and result["per_token"] == [1.0] * 4 and result["teacher_forced"] == [1.0] * 4


def test_evaluator_detects_wrong_tokens():
    ds = make_star_graph_dataset(10, 2, 4, 12, seed=3)
    result = evaluate_star_graph(Oracle(ds, wrong_from=2), ds)
    assert result["exact"] == 0.0 and result["teacher_forced"] == [1.0, 1.0, 0.0, 0.0]


def test_stdlib_language_reference_is_deterministic_and_tokenizes():
    text = load_stdlib_corpus(docstrings=False)
    assert len(text) > 300_000 and corpus_sha1(text) == corpus_sha1(load_stdlib_corpus(docstrings=False))
    tok = CharTokenizer()
    ids = tok.encode(text[:1000])
    assert tok.vocab_size == 100 and ids.max() < 100
    assert tok.decode(ids) == "".join(c if c in tok.alphabet else "?" for c in text[:1000])


def test_split_corpus_is_contiguous_90_5_5():
    train, val, test = split_corpus(np.arange(1000))
    assert (len(train), len(val), len(test)) == (900, 50, 50) and val[0] == 900


def tiny_config(n_layer=3):
    return GPTConfig(vocab_size=9, block_size=16, n_layer=n_layer, n_head=2, n_embd=8)


def test_future_targets_shift_by_offset_and_pad():
    row = torch.tensor([[1, 2, 3, 4, IGN]])
    assert _future_targets(row, 2, 4, IGN).tolist() == [[2, 3, 4, IGN]]


def test_mtp_loss_is_sum_of_head_cross_entropies():
    torch.manual_seed(0)
    model = MTPForCausalLM(tiny_config(), n_future=2)
    ids = torch.randint(0, 9, (2, 6))
    out = model(ids, labels=ids)
    trunk = model._trunk(ids)
    row = shift_labels(ids, None)
    head2 = model.lm_head(model.transformer.ln_f(model.heads[1](trunk)))
    direct2 = causal_lm_loss(head2, _future_targets(row, 2, 6, IGN))
    assert out.head_losses[1].item() == pytest.approx(direct2.item(), rel=1e-5)
    assert out.loss.item() == pytest.approx(out.head_losses.sum().item(), rel=1e-6)
    assert torch.allclose(out.logits, model(ids).logits)


def test_dsmtp_loss_is_mean_and_module_one_gives_the_logits():
    torch.manual_seed(0)
    model = DSMTPForCausalLM(tiny_config(), n_future=2)
    ids = torch.randint(0, 9, (2, 6))
    out = model(ids, labels=ids)
    assert out.loss.item() == pytest.approx(out.head_losses.mean().item(), rel=1e-6)
    assert torch.allclose(out.logits, model(ids).logits)
    out.loss.backward()
    assert model.projections[0].weight.grad.abs().sum() > 0


def test_shuffled_scores_keep_multiset_and_absent_slots():
    score = torch.tensor([[[4.0, 3.0, float("-inf"), 2.0, 1.0]] * 50])
    shuffled = shuffle_window_scores(score, torch.Generator().manual_seed(0))
    assert torch.isinf(shuffled[..., 2]).all()
    assert torch.equal(shuffled.sort(-1).values, score.sort(-1).values)
    assert not torch.equal(shuffled, score)


def test_unrelated_targets_are_the_next_rows_and_need_two_rows():
    labels = torch.randint(0, 6, (3, 10), generator=torch.Generator().manual_seed(2))
    loss = UnrelatedTOPLoss(window=5)
    idx, score = loss.targets(labels, 6, 5, 5)
    own_idx, own_score = TOPLoss(window=5).targets(labels, 6, 5, 5)
    for row in range(3):
        assert torch.equal(idx[row], own_idx[row - 1]) and torch.equal(score[row], own_score[row - 1])
    with pytest.raises(ValueError, match="at least 2 rows"):
        loss.targets(labels[:1], 6, 5, 5)
