"""ProjQ: project-and-quantize — quantization noise shaped for a rank-r adapter, then LoRA.

Yu, Zhang, Wang, Lasaulce, Debbah, "ProjQ: Project-and-Quantize for Adapter-Aware LLM
Compression", ICML 2026 (arXiv:2606.00494).
"""

from icml26.projq.data import synthetic_layer
from icml26.projq.model import LayerReport, QuantizedModelReport, quantize_model, to_peft_lora
from icml26.projq.projq import (ProjQ, gptq_eora_alternation, loftq_init, lordq_init, residual_profile,
                                uncorrectable_residual)
from icml26.projq.quant import ActivationStats, GroupQuantizer, gptq_objective, gptq_quantize, rtn_quantize

__all__ = ["GroupQuantizer", "rtn_quantize", "gptq_quantize", "gptq_objective", "ActivationStats", "ProjQ",
           "lordq_init", "loftq_init", "gptq_eora_alternation", "uncorrectable_residual", "residual_profile", "quantize_model",
           "to_peft_lora", "QuantizedModelReport", "LayerReport", "synthetic_layer"]
