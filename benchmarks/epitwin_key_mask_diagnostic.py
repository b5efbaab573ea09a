"""Does EpiTwin's transformer path reach a hidden shaft? A diagnostic of the generator's spatial
attention and of what its two output paths carry.

EpiTwin's output for a hidden contact is ``decoder(h_i)`` (the *transformer path*) plus, with the
geometry-aware start, the attention-weighted raw-patch residual of the observed contacts. This
script measures, on the W protocol's data of a world (``spec`` = W, ``routing`` = W_route):

- the spatial-attention mass that hidden queries put on hidden keys (the signal-free [MASK]
  tokens), and that observed queries put on hidden keys, over every block, head, patch and the
  validation windows (each shaft hidden in turn), at step 0 and after training;
- after training, the standard deviation across test windows of the transformer path's output at
  the hidden contacts (leave-one-shaft-out), beside that of the residual: a path that cannot see
  the observed signals gives the same output in every window (SD 0);
- the test RMSE (leave-one-shaft-out), and with ``--perturb`` the change of the hidden contacts'
  transformer-path output when one observed contact's signal is perturbed.

It reads the attention from the spatial modules' inputs (a forward pre-hook) and recomputes the
softmax, so it runs on the code before and after hidden contacts were masked as keys. Run
``python benchmarks/epitwin_key_mask_diagnostic.py --world routing --epochs 4 --lr 1e-3``
(4 epochs of the W protocol's 1-s-stride windows = 212 optimiser steps, MSE only).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace

import numpy as np
import torch

from icml26.epitwin.estimator import EpiTwin
from icml26.epitwin.experiment import W_FULL, leave_one_shaft_out, protocol_data


def _spatial_inputs(g):
    """Forward pre-hooks on every block's spatial attention: the captured (module, x, bias,
    key_mask) of each call."""
    seen, hooks = [], []
    for blk in g.blocks:
        def hook(mod, args, kwargs):
            bias = args[1] if len(args) > 1 else kwargs.get("bias")
            key_mask = args[2] if len(args) > 2 else kwargs.get("key_mask")
            seen.append((mod, args[0], bias, key_mask))
        hooks.append(blk.spatial.register_forward_pre_hook(hook, with_kwargs=True))
    return seen, hooks


def _weights(mod, x, bias, key_mask):
    """Softmax attention weights (..., H, N, N) of an ``_MHA``/``GFBAttention`` call."""
    *lead, S, d = x.shape
    q, k, _ = mod.qkv(x).view(*lead, S, 3, mod.h, mod.dh).unbind(-3)
    q, k = q.transpose(-2, -3), k.transpose(-2, -3)
    logits = q @ k.transpose(-1, -2) / math.sqrt(mod.dh)
    if bias is not None:
        logits = logits + bias
    if key_mask is not None:
        logits = logits.masked_fill(key_mask[..., None, None, :], float("-inf"))
    return logits.softmax(-1)


def attention_masses(est: EpiTwin, V: np.ndarray, montage) -> dict:
    """Attention mass of hidden / observed queries on hidden keys over the windows ``V``
    (window w hides shaft ``w mod n_shafts``)."""
    p = {"t": est._patient_tensors(montage), "key": est._key(montage), "montage": montage}
    g = est.model_ if hasattr(est, "model_") else est._step0
    ids = montage.shafts
    x = torch.as_tensor(V)
    mask = torch.as_tensor(np.stack([montage.shaft == ids[w % len(ids)] for w in range(len(V))]))
    seen, hooks = _spatial_inputs(g)
    g.eval()
    hid_on_hid, obs_on_hid, per_query_min = [], [], []
    with torch.no_grad():
        for i in range(0, len(V), 16):
            seen.clear()
            est._forward(g, p, x[i:i + 16], mask[i:i + 16])
            m = mask[i:i + 16]
            for mod, s, bias, km in seen:
                w = _weights(mod, s, bias, km)                    # (B, L, H, N, N)
                on_hidden = (w * m[:, None, None, None, :].to(w.dtype)).sum(-1)  # (B, L, H, N)
                qh = m[:, None, None, :].expand_as(on_hidden)
                hid_on_hid.append(on_hidden[qh])
                obs_on_hid.append(on_hidden[~qh])
                per_query_min.append(on_hidden.mean((1, 2))[m])
    for h in hooks:
        h.remove()
    hh, oh, mn = torch.cat(hid_on_hid), torch.cat(obs_on_hid), torch.cat(per_query_min)
    return {"hidden_queries_on_hidden_keys": float(hh.mean()),
            "hidden_queries_on_hidden_keys_min": float(mn.min()),
            "observed_queries_on_hidden_keys": float(oh.mean())}


def path_spread(est: EpiTwin, W: np.ndarray, montage) -> dict:
    """SD across test windows of the transformer path's and of the residual's output at the
    hidden contacts (each shaft hidden in turn), RMS over contacts and samples."""
    g = est.model_
    p = {"t": est._patient_tensors(montage), "key": est._key(montage), "montage": montage}
    out = {}
    hook = g.codec.decode.register_forward_hook(lambda mod, a, y: out.__setitem__("path", y))
    sd_path, sd_res = [], []
    g.eval()
    with torch.no_grad():
        for s in montage.shafts:
            on = montage.shaft == s
            m = torch.as_tensor(np.broadcast_to(on, (len(W), len(on))).copy())
            y = est._forward(g, p, torch.as_tensor(W), m)
            path = out["path"].reshape(y.shape)
            res = y - path
            sd_path.append(float(path[:, on].std(0).pow(2).mean()))
            sd_res.append(float(res[:, on].std(0).pow(2).mean()))
    hook.remove()
    return {"path_sd_across_windows": math.sqrt(np.mean(sd_path)),
            "residual_sd_across_windows": math.sqrt(np.mean(sd_res))}


def perturbation(est: EpiTwin, W: np.ndarray, montage, scale: float = 1.0) -> dict:
    """Change of the hidden shaft's transformer-path output (RMS) when the observed contact
    nearest to it gets ``scale`` x unit noise, relative to the change of that contact's own
    transformer-path output."""
    g = est.model_
    p = {"t": est._patient_tensors(montage), "key": est._key(montage), "montage": montage}
    out = {}
    hook = g.codec.decode.register_forward_hook(lambda mod, a, y: out.__setitem__("path", y))
    s = montage.shafts[0]
    on = montage.shaft == s
    d = np.linalg.norm(montage.pos[:, None] - montage.pos[None], axis=-1)[on][:, ~on].min(0)
    j = int(np.flatnonzero(~on)[np.argmin(d)])
    x = torch.as_tensor(W[:16])
    m = torch.as_tensor(np.broadcast_to(on, (len(x), len(on))).copy())
    noise = scale * torch.randn(x.shape[0], x.shape[-1], generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        y0 = est._forward(g, p, x, m)
        a = out["path"].reshape(y0.shape).clone()
        x1 = x.clone()
        x1[:, j] += noise
        y1 = est._forward(g, p, x1, m)
        b = out["path"].reshape(y1.shape)
    hook.remove()
    hidden = float((b - a)[:, on].pow(2).mean().sqrt())
    own = float((b - a)[:, j].pow(2).mean().sqrt())
    return {"perturbed_contact": j, "hidden_path_change": hidden, "own_path_change": own}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--world", default="routing", choices=("spec", "routing"))
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="")
    ap.add_argument("--old", action="store_true",
                    help="the first generator: hidden contacts attended as keys, no signed unmixing")
    ap.add_argument("--step0-only", action="store_true", help="measure the step-0 model only")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    config = replace(W_FULL, world=args.world)
    data = protocol_data(config)
    (Z, montage), = data["train"]
    V, (W, _) = data["val"][0], data["test"]
    common = dict(d_model=config.d_model, n_layers=config.n_layers, n_heads=config.n_heads,
                  patch=config.patch, batch_size=config.batch_size, window=config.window,
                  stride=config.train_stride, seed=args.seed, adversarial=False,
                  mask_hidden_keys=not args.old, signed_unmixing=not args.old)
    start = time.process_time()
    step0 = EpiTwin(**common, epochs=1, lr=0.0).fit(Z, montage, fs=data["fs"])
    result = {"world": args.world, "lr": args.lr, "epochs": args.epochs,
              "old": args.old, "step0": attention_masses(step0, V, montage)}
    if args.step0_only:
        result["cpu_seconds"] = time.process_time() - start
        print(json.dumps(result, indent=1))
        return result
    model = EpiTwin(**common, epochs=args.epochs, lr=args.lr).fit(Z, montage, X_val=V, fs=data["fs"])
    pred = leave_one_shaft_out(model, W, montage)
    result["trained"] = dict(attention_masses(model, V, montage), **path_spread(model, W, montage),
                             **perturbation(model, W, montage), steps=int(model.n_steps_),
                             test_rmse=float(np.sqrt(np.mean((pred - W) ** 2))),
                             train_rmse_last=model.history_[-1]["train_rmse"],
                             val_rmse_best=min(h["val_rmse"] for h in model.history_))
    result["cpu_seconds"] = time.process_time() - start
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)
    return result


if __name__ == "__main__":
    main()
