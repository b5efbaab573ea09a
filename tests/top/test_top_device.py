"""top's torch components on a second device (fake here, CUDA where present)."""

import pytest
import torch

from devicecheck import DeviceEntry, check_entry, device_cases, forward_backward
from fakecuda import FakeCuda
from icml26.top import (DSMTPForCausalLM, GPTConfig, MTPForCausalLM, TinyGPT, TOPForCausalLM,
                        TOPHead, TOPLoss, causal_lm_loss, evaluate_star_graph, listnet_loss,
                        make_star_graph_dataset, ndcg_at_k, shift_labels, sparse_listnet_loss,
                        top_targets, top_targets_sparse)
from icml26.top.experiment import ShuffledTOPLoss, UnrelatedTOPLoss, shuffle_window_scores

CFG = GPTConfig(vocab_size=12, block_size=16, n_layer=1, n_head=2, n_embd=8)
INF = float("-inf")


def _ids(b=2, t=6):
    return torch.randint(0, 12, (b, t), generator=torch.Generator().manual_seed(0))


def _scores(dev):
    return torch.randn(3, 5, generator=torch.Generator().manual_seed(1)).to(dev)


def _targets(dev):
    return torch.tensor([[3.0, INF, 1.0, 2.0, INF], [INF] * 5, [1.0, 2.0, 3.0, 4.0, 5.0]]).to(dev)


def _wrapped(loss_cls=None):
    def run(dev):
        model = TOPForCausalLM(TinyGPT(CFG), window=3)
        if loss_cls is not None:
            model.loss_fn = loss_cls(window=3)
        model.to(dev)
        ids = _ids().to(dev)
        out = forward_backward(model, ids, ids, _ids(2, 3).to(dev), reduce=lambda o: o.loss)
        out["generate"] = model.generate(ids[:, :3], max_new_tokens=2)
        return out
    return run


def _mtp(cls):
    def run(dev):
        model = cls(GPTConfig(vocab_size=12, block_size=16, n_layer=3, n_head=2, n_embd=8),
                    n_future=2).to(dev)
        ids = _ids().to(dev)
        return forward_backward(model, ids, ids, _ids(2, 2).to(dev), reduce=lambda o: o.loss)
    return run


def _star(dev):
    ds = make_star_graph_dataset(4, degree=2, path_len=3, num_nodes=8, seed=0)
    model = TinyGPT(GPTConfig(vocab_size=ds.vocab_size, block_size=32, n_layer=1, n_head=2,
                              n_embd=8)).to(dev)
    return evaluate_star_graph(model, ds, batch_size=3)


ENTRIES = [
    DeviceEntry("top.top_targets",
                lambda dev: top_targets(_ids().to(dev), vocab_size=12, window=3, seq_len=4)),
    DeviceEntry("top.top_targets_sparse",
                lambda dev: top_targets_sparse(_ids().to(dev), 12, window=3, seq_len=4)),
    DeviceEntry("top.listnet_loss",
                lambda dev: listnet_loss(_scores(dev), _targets(dev))),
    DeviceEntry("top.sparse_listnet_loss",
                lambda dev: sparse_listnet_loss(_scores(dev), torch.tensor([[0, 2]] * 3).to(dev),
                                                torch.tensor([[1.0, 2.0]] * 3).to(dev))),
    DeviceEntry("top.causal_lm_loss",
                lambda dev: causal_lm_loss(torch.randn(2, 4, 12).to(dev), _ids(2, 4).to(dev))),
    DeviceEntry("top.shift_labels",
                lambda dev: shift_labels(_ids().to(dev), _ids(2, 2).to(dev))),
    DeviceEntry("top.ndcg_at_k binary", lambda dev: ndcg_at_k(_scores(dev), _targets(dev), k=3)),
    DeviceEntry("top.ndcg_at_k graded",
                lambda dev: ndcg_at_k(_scores(dev), _targets(dev), k=3, gain="graded")),
    DeviceEntry("top.TOPHead",
                lambda dev: forward_backward(TOPHead(8, 12).to(dev), torch.randn(2, 3, 8).to(dev))),
    DeviceEntry("top.TOPLoss",
                lambda dev: forward_backward(TOPLoss(window=3, positions="labelled").to(dev),
                                             torch.randn(2, 4, 8).to(dev), _ids(2, 7).to(dev),
                                             torch.nn.Linear(8, 12).to(dev),
                                             TOPHead(8, 12).to(dev), reduce=lambda o: o.loss),
                covers=("top.TOPOutput",)),
    DeviceEntry("top.TOPForCausalLM", _wrapped()),
    DeviceEntry("top.TOPForCausalLM with the shuffled-order control", _wrapped(ShuffledTOPLoss)),
    DeviceEntry("top.TOPForCausalLM with the unrelated-targets control",
                _wrapped(UnrelatedTOPLoss)),
    DeviceEntry("top.MTPForCausalLM", _mtp(MTPForCausalLM), covers=("top.MTPOutput",)),
    DeviceEntry("top.DSMTPForCausalLM", _mtp(DSMTPForCausalLM)),
    DeviceEntry("top.TinyGPT",
                lambda dev: forward_backward(TinyGPT(CFG).to(dev), _ids().to(dev),
                                             reduce=lambda o: o.logits.sum()),
                covers=("top.GPTConfig",)),
    DeviceEntry("top.evaluate_star_graph", _star,
                covers=("top.make_star_graph_dataset", "top.StarGraphDataset")),
]

NO_DEVICE = {
    "load_stdlib_corpus": "builds a text corpus (str)",
    "corpus_sha1": "hashes text",
    "CharTokenizer": "maps characters to ids on the CPU; move the ids with .to(device)",
    "split_corpus": "slices a sequence",
}


@pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
def test_device(entry, kind):
    check_entry(entry, kind)


def test_shuffle_window_scores_same_permutation_on_every_device():
    score = top_targets(_ids(), vocab_size=12, window=3, seq_len=4)
    expected = shuffle_window_scores(score, torch.Generator().manual_seed(0))
    with FakeCuda() as fake:
        moved = shuffle_window_scores(score.to(fake.device), torch.Generator().manual_seed(0))
        assert moved.device == fake.device
        assert torch.equal(moved.cpu(), expected)
