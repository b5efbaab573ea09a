"""TC-Bench: structural-isomorphism probes of scientific alignment, a physically grounded
cyclone generator and the real-data builder.

Yao, Polesello, Pervez, Muller, Locatello. *The Perception–Physics Paradox: Probing
Scientific Alignment with TC-Bench.* ICML 2026 (arXiv 2605.24782).
"""

from .baselines import Climatology, DvorakLite
from .data import SynthTC, TCFrames
from .geometry import feature_spread, geometry_report, participation_ratio, pca_per_bin
from .pipeline import build_tcbench, load_tcbench
from .probes import (StructuralAlignmentProbe, bin_profile, cross_agency_ood, q_con, q_dyn,
                     q_stat, regime_balance, regime_ratio, trajectory_split)

__all__ = ["SynthTC", "TCFrames", "StructuralAlignmentProbe", "q_stat", "q_dyn", "q_con",
           "regime_balance", "trajectory_split", "regime_ratio", "bin_profile",
           "cross_agency_ood", "participation_ratio", "feature_spread", "pca_per_bin",
           "geometry_report", "DvorakLite", "Climatology", "build_tcbench", "load_tcbench"]
