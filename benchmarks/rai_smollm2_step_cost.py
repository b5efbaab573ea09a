"""rai (#50): the cost of one LoRA training step on SmolLM2-135M on this CPU, to size an opt-in
SmolLM2-backed world (the rai README, "Not built: a world on a real language model"). Rank-8
adapters on q and v of every block (trained), the base frozen, forward + backward, one thread.

Run: ``python benchmarks/rai_smollm2_step_cost.py`` (about a minute; SmolLM2 from icml26.zoo).
"""

from __future__ import annotations

import resource
import time

import torch

SHAPES = ((8, 48), (16, 48), (8, 96))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def step_seconds(shapes=SHAPES, rank: int = 8, repeats: int = 3) -> dict:
    """CPU seconds of one adapter step per ``(batch, tokens)`` shape (after one warm-up step)."""
    from icml26.zoo import load_smollm2

    torch.set_num_threads(1)
    model, _ = load_smollm2()
    for p in model.parameters():
        p.requires_grad_(False)
    adapters = []
    for layer in model.model.layers:
        for proj in (layer.self_attn.q_proj, layer.self_attn.v_proj):
            A = torch.nn.Parameter(torch.randn(rank, proj.in_features) * 0.01)
            B = torch.nn.Parameter(torch.zeros(proj.out_features, rank))
            adapters += [A, B]
            proj.register_forward_hook(lambda m, i, o, A=A, B=B: o + (i[0] @ A.T) @ B.T)
    opt = torch.optim.SGD(adapters, lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    out = {}
    for batch, tokens in shapes:
        ids = torch.randint(1000, (batch, tokens), generator=gen)
        for i in range(repeats + 1):
            if i == 1:
                started = _cpu()
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad()
        out[(batch, tokens)] = (_cpu() - started) / repeats
    return out


if __name__ == "__main__":
    for (batch, tokens), seconds in step_seconds().items():
        print(f"batch {batch} x {tokens} tokens: {seconds:.2f} CPU-s per step")
