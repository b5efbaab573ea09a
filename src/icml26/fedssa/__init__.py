"""FedSSA: graph federated learning with semantic and structural knowledge sharing, on Flower.

Yu, Wan, Chen, Han, Gong. "Heterogeneity-Aware Knowledge Sharing for Graph Federated Learning",
ICML 2026, arXiv:2601.21589.
"""

from .baselines import GCFLStrategy, LocalStrategy, make_fedavg, make_fedprox
from .data import ClientGraph, from_pyg, louvain_partition, make_csbm_federation, metis_partition
from .fedssa import (FedSSAClient, FedSSAConfig, FedSSAServer, GraphClient, cluster_distances,
                     semantic_distance_matrix)
from .flower import FedSSANumPyClient, FedSSAStrategy, GraphNumPyClient, InProcessClientProxy
from .model import (FedSSANet, PolyFilter, classwise_gaussians, gaussian_kl, gaussian_w2,
                    moment_match)
from .simulation import ALGORITHMS, History, run_federation, run_inprocess
from .spectral import (band_moments, chebyshev_band_moments, high_band_mass, js_distance_matrix,
                       laplacian_spectrum, normalized_adjacency, spectral_energy)

__all__ = ["ClientGraph", "make_csbm_federation", "louvain_partition", "metis_partition", "from_pyg",
           "normalized_adjacency", "laplacian_spectrum", "band_moments", "chebyshev_band_moments",
           "spectral_energy", "high_band_mass", "js_distance_matrix",
           "PolyFilter", "FedSSANet", "classwise_gaussians", "gaussian_kl", "gaussian_w2", "moment_match",
           "FedSSAConfig", "GraphClient", "FedSSAClient", "FedSSAServer", "cluster_distances",
           "semantic_distance_matrix",
           "FedSSAStrategy", "FedSSANumPyClient", "GraphNumPyClient", "InProcessClientProxy",
           "LocalStrategy", "GCFLStrategy", "make_fedavg", "make_fedprox",
           "run_federation", "run_inprocess", "History", "ALGORITHMS"]
