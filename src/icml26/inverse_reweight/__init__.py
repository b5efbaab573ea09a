"""Inverse loss reweighting (ILR) for long-tailed classification, with Neural Collapse metrics.

Wang, Tong, Xie, Gao. *Rethinking Loss Reweighting for Imbalance Learning as an Inverse
Problem: A Neural Collapse Point of View.* ICML 2026 (arXiv:2605.10047).
"""

from .baselines import (BalancedSoftmaxLoss, ClassBalancedLoss, DRWSchedule, FocalLoss, LDAMLoss,
                        class_balanced_weights)
from .data import load_mnist1d, load_mnist1d_lt, long_tail_counts, make_gaussian_lt, make_long_tailed
from .networks import CNN1dNet, CosineClassifier, MLPNet
from .neural_collapse import etf_distance, loss_imbalance_coefficient, nc_metrics, per_class_mean_loss
from .reweighting import InverseReweightLoss, inverse_weights, per_class_mean, prior_weights
from .schedule import MittagLefflerLR, mittag_leffler, warmup_cosine_lr
from .trainer import METHODS, LongTailTrainer

__all__ = [
    "InverseReweightLoss", "inverse_weights", "prior_weights", "per_class_mean",
    "ClassBalancedLoss", "FocalLoss", "LDAMLoss", "BalancedSoftmaxLoss", "DRWSchedule",
    "class_balanced_weights",
    "CosineClassifier", "CNN1dNet", "MLPNet",
    "MittagLefflerLR", "mittag_leffler", "warmup_cosine_lr",
    "nc_metrics", "etf_distance", "loss_imbalance_coefficient", "per_class_mean_loss",
    "make_long_tailed", "long_tail_counts", "load_mnist1d", "load_mnist1d_lt", "make_gaussian_lt",
    "LongTailTrainer", "METHODS",
]
