"""Can ONE signed linear map per state, shared across training masks, reach the state oracle?

EpiTwin's signed unmixing read-out (a Resolution) holds one coefficient set per contact pair and
lag (``K`` gated sets), shared by every mask it is trained on: 1 or 2 hidden shafts per window
(``mask_shafts=(1, 2)``). The state oracle (``StateRidgeReconstructor``) solves a separate ridge
for each mask. This script computes, in closed form on the routing world's training windows,
the best map of the read-out's class given the TRUE state (the limit its positive control
'EpiTwin given the true state' could reach):

* ``pooled``: per state and target contact, the least-squares map over the training-mask
  distribution (hidden inputs zeroed, as in the model;
  :func:`icml26.epitwin.baselines.pooled_unmixing_map` without the interpolation, as
  ``StateRidgeReconstructor(mask_shafts=(1, 2))``, the ``ridge_class`` row of W_route);
* ``test-mask``: the same map fitted on single-shaft masks only (the test's leave-one-shaft-out
  masks; equal to the oracle up to the ridge penalty).

and evaluates both, with the oracle and global ridge, on the test windows (leave-one-shaft-out).
No training, no torch: linear algebra on the Gram matrices (seconds).

    python benchmarks/epitwin_pooled_map_diagnostic.py [--seeds 0 1 2] [--duration 600]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from icml26.epitwin.baselines import RidgeReconstructor, StateRidgeReconstructor
from icml26.epitwin.experiment import W_ROUTE_FULL, protocol_data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--duration", type=float, default=W_ROUTE_FULL.duration_s)
    args = ap.parse_args()
    lags, alpha = (-4, -2, 0, 2, 4), 1e-3
    for seed in args.seeds:
        cpu = time.process_time()
        data = protocol_data(replace(W_ROUTE_FULL, brain_seed=seed, duration_s=args.duration))
        Ztr, montage = data["train"][0]
        Zte, _ = data["test"]
        shaft = montage.shaft

        def loso(predict):
            pred = np.zeros(Zte.shape)
            for c in np.unique(shaft):
                pred[:, shaft == c] = predict([c])[:, shaft == c]
            return float(np.sqrt(np.mean((pred - Zte) ** 2)))

        rows = {}
        for name, masks in (("pooled over training masks", (1, 2)), ("fitted on test masks only", (1, 1))):
            limit = StateRidgeReconstructor(lags, alpha, mask_shafts=masks).fit(Ztr, montage, data["train_state"])
            rows[name] = loso(lambda m, limit=limit: limit.predict(Zte, montage, m, data["test_state"]))
        oracle = StateRidgeReconstructor(lags, alpha).fit(Ztr, montage, data["train_state"])
        ridge = RidgeReconstructor(lags, alpha).fit(Ztr, montage)
        rows["state oracle (ridge per mask and true state)"] = loso(
            lambda m: oracle.predict(Zte, montage, m, data["test_state"]))
        rows["global ridge (per mask)"] = loso(lambda m: ridge.predict(Zte, montage, m))
        print(f"brain seed {seed}: test RMSE, leave-one-shaft-out ({time.process_time() - cpu:.0f} CPU-s)")
        for name, value in rows.items():
            print(f"  {name:48s} {value:.4f}")


if __name__ == "__main__":
    main()
