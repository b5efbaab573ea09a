"""W_route's representation control with the least-squares start of the signed unmixing.

'EpiTwin given the true state' (``epitwin_state`` in the W_route part: the true network state
as a context label per patch, MSE only) trained exactly as the part trains it, once with the
read-out's coefficients at zero (the default) and once at the least-squares start
(``unmixing_start="least_squares"``, a Resolution). Prints test RMSE (leave-one-shaft-out) at
step 0 and after training, against the state oracle and the read-out class's own limit
(benchmarks/epitwin_pooled_map_diagnostic.py). One training run costs ≈ 650 CPU-s.

    python benchmarks/epitwin_unmixing_start_control.py [--starts least_squares zero] [--epochs 38]
        [--unmixing-lr 1e-4]
"""

from __future__ import annotations

import argparse
import copy
import time
from dataclasses import replace

import numpy as np

from icml26.epitwin import EpiTwin
from icml26.epitwin.baselines import StateRidgeReconstructor
from icml26.epitwin.experiment import W_ROUTE_FULL, _WithLabels, leave_one_shaft_out, protocol_data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", nargs="+", default=["least_squares"])
    ap.add_argument("--epochs", type=int, default=W_ROUTE_FULL.epochs)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--unmixing-lr", type=float, default=None,
                    help="learning rate of the read-out's coefficients (default: the model's lr)")
    args = ap.parse_args()
    config = replace(W_ROUTE_FULL, epochs=args.epochs)
    data = protocol_data(config)
    W, montage = data["test"]

    def rmse(pred):
        return float(np.sqrt(np.mean((pred - W) ** 2)))

    oracle = StateRidgeReconstructor().fit(data["train"][0][0], montage, data["train_state"])
    oracle_rmse = rmse(leave_one_shaft_out(_WithLabels(oracle, data["test_state"]), W, montage))
    print(f"state oracle {oracle_rmse:.4f}")
    for start in args.starts:
        cpu = time.process_time()
        model = EpiTwin(d_model=config.d_model, n_layers=config.n_layers, n_heads=config.n_heads,
                        epochs=config.epochs, batch_size=config.batch_size, window=config.window,
                        stride=config.train_stride, seed=args.seed, patch=config.patch,
                        functional="static", lr=config.lr, signed_unmixing=True,
                        refine_checkpoint=config.refine_checkpoint, adversarial=False,
                        n_context=2, unmixing_start=start, unmixing_lr=args.unmixing_lr)
        model.fit([t[0] for t in data["train"]], [t[1] for t in data["train"]], X_val=data["val"],
                  fs=data["fs"], context=data["train_state"], context_val=data["val_state"])
        trained = rmse(leave_one_shaft_out(_WithLabels(model, data["test_state"], keyword=True), W, montage))
        step0 = copy.deepcopy(model)
        step0.model_.load_state_dict(model.step0_state_)
        at0 = rmse(leave_one_shaft_out(_WithLabels(step0, data["test_state"], keyword=True), W, montage))
        print(f"start={start}: test RMSE step 0 {at0:.4f}, trained {trained:.4f} "
              f"({trained / oracle_rmse:.3f} x oracle); {model.n_steps_} steps, "
              f"{time.process_time() - cpu:.0f} CPU-s")
        for h in model.history_:
            print(f"  epoch {h['epoch']:2d} train {h['train_rmse']:.4f} val {h['val_rmse']:.4f}")


if __name__ == "__main__":
    main()
