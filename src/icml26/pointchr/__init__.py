"""PointCHR: curvature-aware hyperbolic rectification (CHR) of point-cloud features.

High-curvature points are pushed towards the boundary of the Poincaré ball by a learnable,
curvature-guided radial rectification, then pooled with the Einstein midpoint; a plug-in for
point-cloud backbones. Paper: "PointCHR: curvature-aware hyperbolic rectification for point
cloud analysis", ICML 2026 (authors not retrieved). Everything not stated in the abstract is a
labelled Resolution (see the README).
"""

from .baselines import DGCNNLite, EdgeConv, HyCoReLite, PointNet2Lite, PointNetLite, shuffle_within_clouds
from .chr import CHR, GATE_QUANTILES, CurvatureHyperbolicRectifier, quantile_gate
from .curvature import knn_indices, surface_variation
from .data import PointCloudSet, load_point_cloud, make_coarse_dataset, make_fine_detail_dataset
from .hyperbolic import PoincareOps
from .train import PointCHRClassifier, build_model, predict_logits, train_classifier

__all__ = ["CurvatureHyperbolicRectifier", "CHR", "quantile_gate", "GATE_QUANTILES", "PoincareOps", "surface_variation", "knn_indices",
           "PointNetLite", "DGCNNLite", "PointNet2Lite", "HyCoReLite", "EdgeConv", "shuffle_within_clouds",
           "PointCHRClassifier", "build_model", "train_classifier", "predict_logits",
           "make_fine_detail_dataset", "make_coarse_dataset", "load_point_cloud", "PointCloudSet"]
