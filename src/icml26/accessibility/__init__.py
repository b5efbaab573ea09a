"""Capacity vs accessibility of hidden states across depth, and the diagnostic pathway.

*Capacity without Access: Reinterpreting the Mid-Depth Spectral Plateau in LLMs* (ICML 2026,
poster 60763; authors not listed in the material we could read). Every formula below the
abstract's level is a Resolution (not from the paper); see the method README.
"""

from .data import PlantedStates, planted_states
from .metrics import (LayerStats, accessibility_metrics, capacity_metrics, participation_ratio,
                      readout_basis_from_weights, rms_normalize, spectrum)
from .pathway import (DiagnosticPathway, PathwayCache, PathwayResult, bootstrap_gain, build_pathway_cache,
                      fit_pathway, fit_shared_bias,
                      load_pathway_cache, save_pathway_cache)
from .probe import (ModelParts, collect_layer_stats, logit_lens, model_parts, profile, profile_pass,
                    profile_table, readout_basis, residual_states)

__all__ = ["LayerStats", "capacity_metrics", "accessibility_metrics", "participation_ratio", "spectrum",
           "readout_basis_from_weights", "rms_normalize", "ModelParts", "model_parts", "readout_basis",
           "residual_states", "collect_layer_stats", "logit_lens", "profile", "profile_pass", "profile_table",
           "DiagnosticPathway", "PathwayCache", "PathwayResult", "build_pathway_cache", "fit_pathway",
           "fit_shared_bias", "bootstrap_gain",
           "save_pathway_cache", "load_pathway_cache", "PlantedStates", "planted_states"]
