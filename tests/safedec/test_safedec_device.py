"""safedec's torch components on a second device (fake here, CUDA where present)."""

import numpy as np
import pytest
import torch

from devicecheck import DeviceEntry, check_entry, device_cases, forward_backward
from icml26.safedec import (Always, FilterDecoder, NavTransformer, Predicate, RejectionDecoder,
                            SafeDecLogitsProcessor, SafeDecoder, UnconstrainedDecoder,
                            constrain_logits, exact_sequence_laws, sample_tokens, train_bc)
from icml26.safedec.data import Demo


class Line:
    """A 1-D robot: tokens left, stay, right."""

    def predict_all(self, s):
        return s[:, None, :] + np.array([[-1.0], [0.0], [1.0]])[None]


SPEC = Always(Predicate("x<=2", lambda x: 2.0 - x[..., 0]))
STATES = np.array([[2.0], [0.0], [1.0]])
U = np.array([0.1, 0.5, 0.9])


def _logits(dev):
    return torch.tensor([[0.0, 1.0, 5.0], [2.0, 0.0, 1.0], [0.5, 0.5, 0.5]]).to(dev)


def _decoders(dev):
    out = {}
    for name, dec in (("hcd", SafeDecoder(None, SPEC, Line(), fallback_token=1)),
                      ("rcd", SafeDecoder(None, SPEC, Line(), mode="rcd")),
                      ("uncon", UnconstrainedDecoder(None, SPEC, Line())),
                      ("filter", FilterDecoder(None, SPEC, Line(), fallback_token=1)),
                      ("reject", RejectionDecoder(None, SPEC, Line(), fallback_token=1, seed=0))):
        tokens, info = dec.reset().decode(_logits(dev), STATES, U)
        out[name] = {"tokens": tokens, "logits": info["logits"]}
    return out


def _policy(dev):
    net = NavTransformer(obs_dim=5, n_tokens=3, dim=8, heads=2, ff=16, layers=1, dropout=0.0).to(dev)
    obs = torch.randn(2, 4, 5, generator=torch.Generator().manual_seed(0)).to(dev)
    prev = torch.tensor([[0, 1, 2, 1], [2, 2, 0, 1]]).to(dev)
    out = forward_backward(net, obs, prev)
    cache = net.start()
    out["step"] = net.step(cache, obs[:, 0], prev[:, 0])
    return out


def _train(dev):
    rng = np.random.default_rng(0)
    demos = [Demo(rng.normal(size=(4, 5)).astype(np.float32), rng.integers(0, 3, 4), False)
             for _ in range(3)]
    model = train_bc(demos, seed=0, steps=2, batch=2, action_dropout=0.2, history_dropout=0.2,
                     device=dev, dim=8, heads=2, ff=16, layers=1, dropout=0.0, n_tokens=3)
    return {"w": next(model.parameters()), "logits": model(
        torch.as_tensor(demos[0].obs[None]).to(dev), torch.as_tensor(demos[0].tokens[None]).to(dev))}


ENTRIES = [
    DeviceEntry("safedec.constrain_logits",
                lambda dev: constrain_logits(_logits(dev), [[0.3, -0.1, 0.0]] * 3, mode="hcd",
                                             fallback_token=1)),
    DeviceEntry("safedec.sample_tokens", lambda dev: sample_tokens(_logits(dev), U)),
    DeviceEntry("safedec.SafeDecoder", _decoders,
                covers=("safedec.UnconstrainedDecoder", "safedec.FilterDecoder",
                        "safedec.RejectionDecoder")),
    DeviceEntry("safedec.SafeDecLogitsProcessor",
                lambda dev: SafeDecLogitsProcessor(SPEC, Line(), lambda ids: np.full(
                    (ids.shape[0], 1), 2.0))(torch.zeros(1, 3, dtype=torch.long).to(dev),
                                             torch.zeros(1, 3).to(dev))),
    DeviceEntry("safedec.NavTransformer", _policy),
    DeviceEntry("safedec.train_bc", _train),
    DeviceEntry("safedec.exact_sequence_laws",
                lambda dev: exact_sequence_laws(lambda s, t: torch.zeros(len(s), 3).to(dev), SPEC,
                                                Line(), np.array([0.0]), 2, fallback_token=1),
                outputs="any"),
]

NO_DEVICE = {"DynamicsModel": "a Protocol (numpy dynamics)"}


@pytest.mark.parametrize("entry, kind", device_cases(ENTRIES))
def test_device(entry, kind):
    check_entry(entry, kind)
