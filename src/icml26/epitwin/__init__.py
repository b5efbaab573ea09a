"""EpiTwin: a conditional spatial graph transformer for stereo-EEG (sEEG) reconstruction at
unmonitored electrodes (ICML 2026): hybrid spatial positional encoding (HSPE), geometry-functional
biased attention (GFBA), series-level (whole-shaft) masking and adversarial refinement with a
multi-scale discriminator, with IDW, ridge-with-lags, LaBraM-style and MNE baselines, an sEEG
simulator with ground truth at every contact, and EDF/FIF/BIDS loaders.

The paper body was not retrievable; components beyond the abstract are labelled Resolutions.
"""

from .baselines import (IDWReconstructor, InferredStateRidge, RidgeReconstructor,
                        StateRidgeReconstructor, mne_interpolate)
from .data import SEEGMontage, load_seeg, make_synthetic_seeg, raw_to_arrays, to_raw, windows
from .estimator import EpiTwin, LaBraMStyleReconstructor
from .metrics import reconstruction_metrics
from .model import (EpiTwinGenerator, GFBAttention, HybridSpatialPE, LaBraMStyleTransformer,
                    MultiScaleDiscriminator, montage_tensors)
from .spatial import functional_similarity, laplacian_pe

__all__ = ["EpiTwin", "LaBraMStyleReconstructor", "IDWReconstructor", "RidgeReconstructor",
           "StateRidgeReconstructor", "InferredStateRidge",
           "mne_interpolate", "SEEGMontage", "make_synthetic_seeg", "windows", "to_raw",
           "raw_to_arrays", "load_seeg", "reconstruction_metrics", "EpiTwinGenerator",
           "GFBAttention", "HybridSpatialPE", "LaBraMStyleTransformer", "MultiScaleDiscriminator",
           "montage_tensors", "functional_similarity", "laplacian_pe"]
