"""VEENA: causal attribution and training-free enhancement of emotion circuits in vision-language models.

Zhang, Sun, Xie, Tian. "Interpreting and Enhancing Emotional Circuits in Large Vision-Language
Models via Cross-Modal Information Flow", ICML 2026, arXiv:2605.21980.
"""

from .circuits import CircuitLocalizer, SteeringVectors, behaviour, cosine, select_circuit, specificity
from .hooks import VEE_ATTENTION, HFAdapter, register_vee_attention, vee_attention_forward
from .interventions import VEENA
from .metrics import EmotionWheel, hit_rate, predicted_emotions, sample_hit
from .toy import WHEEL, Pairs, ToyLVLM, make_pairs

__all__ = ["EmotionWheel", "hit_rate", "sample_hit", "predicted_emotions", "SteeringVectors",
           "CircuitLocalizer", "select_circuit", "behaviour", "cosine", "specificity", "VEENA", "ToyLVLM",
           "make_pairs", "Pairs", "WHEEL", "HFAdapter", "VEE_ATTENTION", "register_vee_attention",
           "vee_attention_forward"]
