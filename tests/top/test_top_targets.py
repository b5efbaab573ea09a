"""TOP targets, ListNet loss, heads and wrappers: math vs direct computation, invariants."""

import math

import pytest
import torch

from icml26.top import (TOPForCausalLM, TOPHead, TOPLoss, causal_lm_loss, listnet_loss, ndcg_at_k,
                        shift_labels, sparse_listnet_loss, top_targets, top_targets_sparse)
from icml26.top.gpt import GPTConfig, TinyGPT

IGN = -100


def direct_targets(labels, vocab, window, seq_len, inclusive=False):
    """The definition, one position at a time: score W + 1 - k at the first offset k."""
    batch, length = labels.shape
    out = torch.full((batch, seq_len, vocab), float("-inf"))
    span = window + 1 if inclusive else window
    for b in range(batch):
        for t in range(seq_len):
            seen = set()
            for k in range(1, span + 1):
                j = t + k - 1
                if j >= length:
                    break
                v = int(labels[b, j])
                if v == IGN or v in seen:
                    continue
                seen.add(v)
                out[b, t, v] = window + 1 - k
    return out


def random_labels(batch, length, vocab, seed, ignore_frac=0.2):
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, vocab, (batch, length), generator=gen)
    mask = torch.rand((batch, length), generator=gen) < ignore_frac
    return torch.where(mask, IGN, labels)


def sparse_to_dense(idx, score, vocab):
    dense = torch.full((*idx.shape[:-1], vocab), float("-inf"))
    return dense.scatter_reduce(-1, idx, score, reduce="amax")


@pytest.mark.parametrize("window,seq_len,inclusive", [(1, 9, False), (4, 8, False), (7, 5, True),
                                                      (12, 12, False), (3, 10, True)])
def test_dense_targets_match_direct_loop(window, seq_len, inclusive):
    labels = random_labels(3, seq_len + window + (1 if inclusive else 0), 6, seed=window)
    got = top_targets(labels, 6, window, seq_len=seq_len, inclusive=inclusive)
    assert torch.equal(got, direct_targets(labels, 6, window, seq_len, inclusive))


@pytest.mark.parametrize("window,seq_len", [(1, 9), (5, 8), (16, 16)])
def test_sparse_targets_match_dense(window, seq_len):
    labels = random_labels(2, seq_len + window, 5, seed=3)
    idx, score = top_targets_sparse(labels, 5, window, seq_len=seq_len)
    assert idx.shape == (2, seq_len, window)
    assert torch.equal(sparse_to_dense(idx, score, 5), top_targets(labels, 5, window, seq_len=seq_len))


def test_default_seq_len_is_row_minus_window_as_in_reference():
    labels = random_labels(2, 12, 7, seed=1)
    assert top_targets(labels, 7, 4).shape == (2, 8, 7)


def test_short_row_is_padded_not_wrapped():
    labels = torch.tensor([[1, 2, 3]])
    got = top_targets(labels, 5, window=4, seq_len=3)
    assert got[0, 2].tolist() == [float("-inf")] * 3 + [4.0, float("-inf")]


def test_distinct_window_gives_geometric_distribution():
    window = 6
    labels = torch.arange(window).view(1, -1).repeat(1, 2)
    q = torch.softmax(top_targets(labels, 12, window, seq_len=1)[0, 0], dim=-1)
    expected = (1 - math.exp(-1)) / (1 - math.exp(-window))
    assert q[0].item() == pytest.approx(expected, rel=1e-6)


def test_fp16_targets_round_large_scores():
    labels = torch.arange(3000).view(1, -1) % 2900
    exact = top_targets(labels, 2900, 2500, seq_len=1)
    rounded = top_targets(labels, 2900, 2500, seq_len=1, fp16_targets=True)
    finite = torch.isfinite(exact)
    assert not torch.equal(exact[finite], rounded[finite])
    assert exact[0, 0, 0].item() == 2500.0


def test_listnet_matches_direct_formula():
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(4, 7, generator=gen)
    targets = torch.randn(4, 7, generator=gen)
    targets[0, :3] = float("-inf")
    direct = []
    for u, s in zip(scores, targets):
        finite = torch.isfinite(s)
        q = torch.softmax(s[finite], 0)
        direct.append(-(q * torch.log_softmax(u, 0)[finite]).sum())
    assert listnet_loss(scores, targets).item() == pytest.approx(torch.stack(direct).mean().item(), rel=1e-6)


def test_listnet_single_finite_target_is_negative_log_prob():
    scores = torch.tensor([[0.3, -1.0, 2.0]])
    targets = torch.tensor([[float("-inf"), 5.0, float("-inf")]])
    assert listnet_loss(scores, targets).item() == pytest.approx(-torch.log_softmax(scores, -1)[0, 1].item())


def test_listnet_empty_rows_are_zero_and_excluded_from_mean():
    scores = torch.randn(3, 4, requires_grad=True)
    targets = torch.full((3, 4), float("-inf"))
    targets[0, 1] = 1.0
    per_row = listnet_loss(scores, targets, reduction="none")
    assert per_row[1:].tolist() == [0.0, 0.0]
    assert listnet_loss(scores, targets).item() == pytest.approx(per_row[0].item())
    all_empty = listnet_loss(scores, torch.full((3, 4), float("-inf")))
    all_empty.backward()
    assert all_empty.item() == 0.0 and torch.all(scores.grad == 0)


def test_listnet_gradient_is_softmax_difference():
    scores = torch.randn(2, 6, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([[3.0, 2.0, 1.0, float("-inf"), float("-inf"), 0.5]] * 2, dtype=torch.float64)
    listnet_loss(scores, targets, reduction="sum").backward()
    q = torch.softmax(targets, -1)
    expected = torch.softmax(scores.detach(), -1) - q
    assert torch.allclose(scores.grad, expected, atol=1e-6)


def test_listnet_gradcheck():
    scores = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([[1.0, 2.0, float("-inf"), 0.0, float("-inf")]] * 3)
    assert torch.autograd.gradcheck(lambda u: listnet_loss(u.float(), targets).double(), (scores,),
                                    eps=1e-3, atol=1e-3)


def test_sparse_listnet_equals_dense_listnet():
    labels = random_labels(2, 20, 9, seed=5)
    scores = torch.randn(2, 10, 9)
    idx, score = top_targets_sparse(labels, 9, 10, seq_len=10)
    dense = top_targets(labels, 9, 10, seq_len=10)
    assert sparse_listnet_loss(scores, idx, score).item() == pytest.approx(listnet_loss(scores, dense).item(), rel=1e-6)


def test_half_precision_scores_give_finite_loss():
    scores = (torch.randn(2, 5, 50) * 30).half()
    targets = top_targets(random_labels(2, 10, 50, seed=2), 50, 5)
    assert math.isfinite(listnet_loss(scores, targets).item())


def _untied_tiny_gpt(vocab=11):
    return TinyGPT(GPTConfig(vocab_size=vocab, block_size=16, n_layer=1, n_head=2, n_embd=8,
                             tie_embeddings=False))


def test_top_gradient_reaches_top_head_and_trunk_not_lm_head():
    torch.manual_seed(0)
    model = TOPForCausalLM(_untied_tiny_gpt(), window=4)
    ids = torch.randint(0, 11, (2, 8))
    out = model(ids, labels=ids, lookahead_labels=torch.randint(0, 11, (2, 4)))
    out.top_loss.backward()
    assert model.top_head.weight.grad.abs().sum() > 0
    assert model.model.transformer.blocks[0].qkv.weight.grad.abs().sum() > 0
    assert model.model.lm_head.weight.grad is None or model.model.lm_head.weight.grad.abs().sum() == 0


def test_ntp_gradient_does_not_reach_top_head():
    torch.manual_seed(0)
    model = TOPForCausalLM(_untied_tiny_gpt(), window=4)
    ids = torch.randint(0, 11, (2, 8))
    model(ids, labels=ids).ntp_loss.backward()
    assert model.top_head.weight.grad is None or model.top_head.weight.grad.abs().sum() == 0
    assert model.model.lm_head.weight.grad.abs().sum() > 0


def test_total_loss_is_unweighted_sum_by_default():
    torch.manual_seed(1)
    model = TOPForCausalLM(_untied_tiny_gpt(), window=3)
    ids = torch.randint(0, 11, (2, 6))
    out = model(ids, labels=ids)
    assert out.loss.item() == pytest.approx(out.ntp_loss.item() + out.top_loss.item(), rel=1e-6)


def test_top_loss_equals_listnet_on_dense_targets():
    torch.manual_seed(2)
    hidden, lm_head, top_head = torch.randn(2, 6, 8), torch.nn.Linear(8, 5), TOPHead(8, 5)
    row = random_labels(2, 10, 5, seed=4)
    out = TOPLoss(window=4)(hidden, row, lm_head, top_head)
    dense = top_targets(row, 5, 4, seq_len=6)
    assert out.top_loss.item() == pytest.approx(listnet_loss(top_head(hidden), dense).item(), rel=1e-6)
    assert out.ntp_loss.item() == pytest.approx(
        torch.nn.functional.cross_entropy(lm_head(hidden).reshape(-1, 5), row[:, :6].reshape(-1)).item(), rel=1e-6)


def test_all_ignored_labels_give_zero_losses_not_nan():
    hidden = torch.randn(1, 4, 8, requires_grad=True)
    out = TOPLoss(window=2)(hidden, torch.full((1, 6), IGN), torch.nn.Linear(8, 5), TOPHead(8, 5))
    out.loss.backward()
    assert out.loss.item() == 0.0 and torch.isfinite(hidden.grad).all()


def test_wraps_hugging_face_llama_and_keeps_its_logits():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2)
    llama = LlamaForCausalLM(cfg).eval()
    wrapped = TOPForCausalLM(llama, window=4)
    ids = torch.randint(0, 32, (2, 8))
    out = wrapped(ids, labels=ids, lookahead_labels=torch.randint(0, 32, (2, 4)))
    assert torch.allclose(out.logits, llama(ids).logits, atol=1e-5)
    assert out.top_logits.shape == (2, 8, 32) and out.loss.item() > 0
    assert wrapped.top_head.proj.weight.std().item() == pytest.approx(cfg.initializer_range, rel=0.3)


def test_inference_skips_top_head():
    model = TOPForCausalLM(_untied_tiny_gpt(), window=4)
    out = model(torch.randint(0, 11, (1, 5)))
    assert out.top_logits is None and out.loss is None


def test_shift_labels_continues_into_lookahead():
    assert shift_labels(torch.tensor([[1, 2, 3]]), torch.tensor([[4]])).tolist() == [[2, 3, 4, IGN]]


def test_causal_lm_loss_ignores_ignored_positions():
    logits = torch.randn(1, 3, 4)
    targets = torch.tensor([[1, IGN, 2]])
    expected = torch.nn.functional.cross_entropy(logits[0, [0, 2]], torch.tensor([1, 2]))
    assert causal_lm_loss(logits, targets).item() == pytest.approx(expected.item(), rel=1e-6)


def test_ndcg_matches_direct_computation():
    scores = torch.tensor([[0.9, 0.1, 0.8, 0.3]])
    inf = float("-inf")
    targets = torch.tensor([[1.0, 2.0, inf, inf]])
    dcg = 1 / math.log2(2) + 0 / math.log2(3) + 0 / math.log2(4)  # ranks: 0, 2, 3
    ideal = 1 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(scores, targets, k=3)[0].item() == pytest.approx(dcg / ideal, rel=1e-6)
    assert ndcg_at_k(torch.tensor([[0., 0., 1., 1.]]), targets, k=2)[0].item() == 0.0


def _graded_ndcg_loop(scores, targets, k, exponential=False):
    """Direct per-row graded NDCG: gain = finite target score (or 2**score - 1), sorted ideal."""
    out = []
    for u, s in zip(scores.tolist(), targets.tolist()):
        gains = [(2.0 ** g - 1 if exponential else g) if math.isfinite(g) else 0.0 for g in s]
        ranked = sorted(range(len(u)), key=lambda v: -u[v])[:k]
        dcg = sum(gains[v] / math.log2(r + 2) for r, v in enumerate(ranked))
        ideal = sum(g / math.log2(r + 2) for r, g in enumerate(sorted(gains, reverse=True)[:k]))
        out.append(dcg / ideal if ideal > 0 else float("nan"))
    return out


def _window_targets_and_scores(seed):
    """Real TOP targets of random label rows (V = 12, W = 8) and random scores of their shape."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 12, (3, 20), generator=gen)
    targets = top_targets(labels, vocab_size=12, window=8, seq_len=12).reshape(-1, 12)
    return targets, torch.randn(targets.shape, generator=gen)


def test_graded_ndcg_matches_direct_loop_on_real_targets():
    targets, scores = _window_targets_and_scores(5)
    got = ndcg_at_k(scores, targets, k=5, gain="graded")
    assert got.tolist() == pytest.approx(_graded_ndcg_loop(scores, targets, 5), rel=1e-5)
    # ranking by the targets themselves is ideal; binary gain ignores the order inside the window
    assert torch.allclose(ndcg_at_k(targets.nan_to_num(neginf=-1e9), targets, k=5, gain="graded"),
                          torch.ones(len(targets)))
    reversed_order = torch.where(torch.isfinite(targets), 100.0 - targets, -1e9)
    assert (ndcg_at_k(reversed_order, targets, k=5, gain="graded") < 1.0).any()
    assert torch.allclose(ndcg_at_k(reversed_order, targets, k=5), torch.ones(len(targets)))


def test_exponential_ndcg_matches_direct_loop_and_weighs_the_nearest_tokens():
    targets, scores = _window_targets_and_scores(6)
    got = ndcg_at_k(scores, targets, k=5, gain="exponential")
    assert got.tolist() == pytest.approx(_graded_ndcg_loop(scores, targets, 5, exponential=True), rel=1e-5)
    # W = 128: 2**128 overflows float32; the gains are float64
    big = torch.tensor([[128.0, 1.0, float("-inf")]])
    assert ndcg_at_k(torch.tensor([[3.0, 2.0, 1.0]]), big, k=2, gain="exponential").item() == 1.0
    assert ndcg_at_k(torch.tensor([[2.0, 3.0, 1.0]]), big, k=2, gain="exponential").item() < 0.7


def test_ndcg_rejects_unknown_gain_and_nonpositive_graded_scores():
    with pytest.raises(ValueError, match="gain"):
        ndcg_at_k(torch.zeros(1, 3), torch.zeros(1, 3), gain="exp2")
    with pytest.raises(ValueError, match="positive"):
        ndcg_at_k(torch.zeros(1, 3), torch.tensor([[0.0, 1.0, float("-inf")]]), gain="graded")


def test_top_loss_on_labelled_positions_only_matches_direct_mean():
    torch.manual_seed(0)
    hidden, lm_head, head = torch.randn(2, 6, 8), torch.nn.Linear(8, 7), TOPHead(8, 7)
    labels = torch.randint(0, 7, (2, 12))
    labels[:, :3] = IGN                                  # a prefix without next-token labels
    out = TOPLoss(window=6, positions="labelled")(hidden, labels, lm_head, head)
    idx, score = top_targets_sparse(labels, 7, 6, seq_len=6)
    rows = sparse_listnet_loss(head(hidden), idx, score, reduction="none")   # (2, 6)
    keep = (labels[:, :6] != IGN) & torch.isfinite(score).any(-1)
    assert out.top_loss.item() == pytest.approx(rows[keep].mean().item(), rel=1e-6)
    every = TOPLoss(window=6)(hidden, labels, lm_head, head)                 # the reference
    has = torch.isfinite(score).any(-1)
    assert every.top_loss.item() == pytest.approx(rows[has].mean().item(), rel=1e-6)
    with pytest.raises(ValueError, match="positions"):
        TOPLoss(window=6, positions="path")
