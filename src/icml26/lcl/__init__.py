"""LCL: lineage-aware contrastive learning of cell fate from single-cell lineage tracing.

Yang, Wang, Lin. "Leveraging Lineage Barcodes as Natural Augmentations for Contrastive Learning
of Cell Fate in scRNA-seq Data", ICML 2026 (preprint: bioRxiv 10.1101/2024.10.28.620670).
"""

from .baselines import NBVAE, pca_embedding, pca_lda_embedding
from .data import LineageData, log_normalize, read_lineage_h5ad, simulate_lineage_tracing
from .fate import FateCompositionRegressor, clone_fate_compositions, kl_composition
from .lcl import LCL, LCLEncoder, lcl_loss
from .metrics import (clone_calinski_harabasz, cycle_r2, knn_clone_accuracy, knn_clone_containment,
                      knn_lineage_purity)
from .sampler import LineagePairSampler

__all__ = ["LCL", "LCLEncoder", "lcl_loss", "LineagePairSampler", "clone_fate_compositions",
           "FateCompositionRegressor", "kl_composition", "knn_clone_accuracy", "knn_clone_containment",
           "knn_lineage_purity", "cycle_r2", "clone_calinski_harabasz", "NBVAE", "pca_embedding", "pca_lda_embedding",
           "simulate_lineage_tracing", "log_normalize", "read_lineage_h5ad", "LineageData"]
