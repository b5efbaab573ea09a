"""SGShift: explain concept shift by a sparse set of features (Lyu, Turcan & Wilder,
"Explaining Concept Shift with Interpretable Feature Attribution", arXiv 2505.20634)."""

from .data import (load_diabetes_readmission, load_support2, make_concept_shift,
                   make_semisynthetic)
from .knockoffs import GaussianKnockoffSampler
from .sgshift import (SGShift, SGShiftA, SGShiftK, collinear_groups, identifiable_truth,
                      score_selection, source_offset)

__all__ = ["SGShift", "SGShiftA", "SGShiftK", "GaussianKnockoffSampler", "make_concept_shift",
           "make_semisynthetic", "load_diabetes_readmission", "load_support2",
           "score_selection", "source_offset", "collinear_groups", "identifiable_truth"]
