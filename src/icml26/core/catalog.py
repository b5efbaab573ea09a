"""The nineteen papers icml26 covers: slug, title and the system in a few words.

Used by ``icml26 list`` and the README to show methods that are not implemented yet;
implemented methods are found by discovery (:func:`icml26.core.experiment.discover`),
not by this list.
"""

from __future__ import annotations

PAPERS: dict[str, tuple[str, str]] = {
    "cdal": ("Causal Disentangled Anchor Learning (CDAL) for fair multi-view clustering",
             "fair multi-view clustering with causal disentangled anchors, O(n)"),
    "pointchr": ("PointCHR: curvature-aware hyperbolic rectification for point clouds",
                 "curvature-aware hyperbolic rectification for point clouds"),
    "accessibility": ("Capacity without Access: Reinterpreting the Mid-Depth Spectral Plateau in LLMs",
                      "capacity vs accessibility of LLM hidden states across depth"),
    "racer": ("RACER: Risk-Aware Calibrated Efficient Routing for Large Language Models",
              "risk-controlled LLM routing to model sets"),
    "tcbench": ("The Perception–Physics Paradox: Probing Scientific Alignment with TC-Bench",
                "probing vision models for physical structure (tropical cyclones)"),
    "rai": ("Risk Awareness Injection: Calibrating Vision-Language Models for Safety without "
            "Compromising Utility", "training-free risk awareness injection against VLM jailbreaks"),
    "projq": ("ProjQ: Project-and-Quantize for Adapter-Aware LLM Compression",
              "low-rank-shaped quantization noise for PTQ + LoRA"),
    "fedssa": ("Heterogeneity-Aware Knowledge Sharing for Graph Federated Learning (FedSSA)",
               "graph federated learning with semantic + structural alignment"),
    "lcl": ("Leveraging Lineage Barcodes as Natural Augmentations for Contrastive Learning of "
            "Cell Fate in scRNA-seq Data", "lineage-aware contrastive learning for single-cell fate"),
    "nl2repo": ("NL2Repo-Bench: Towards Long-Horizon Repository Generation Evaluation of Coding Agents",
                "benchmark harness for building a repository from a requirements document"),
    "sgshift": ("Explaining Concept Shift with Interpretable Feature Attribution (SGShift)",
                "attributing concept shift to a sparse set of features"),
    "pem": ("Depth over Fidelity in Fixed-Budget Noisy Evolution Strategies",
            "probabilistic elite membership for noisy evolution strategies"),
    "safedec": ("SafeDec: Constrained Decoding for Safe Autoregressive Generalist Robot Navigation "
                "Policies", "STL-constrained decoding for transformer robot policies"),
    "inverse_reweight": ("Rethinking Loss Reweighting for Imbalance Learning as an Inverse Problem: "
                         "A Neural Collapse Point of View",
                         "inverse-view loss reweighting for long-tailed classification"),
    "fsba": ("Second-Order Bilevel Optimization with Accelerated Convergence Rates",
             "(lazy) second-order bilevel and minimax methods"),
    "spectral_rl": ("Impact of Connectivity on Laplacian Representations in Reinforcement Learning",
                    "error bounds for learned Laplacian features in RL"),
    "emotion_circuits": ("Interpreting and Enhancing Emotional Circuits in Large Vision-Language Models",
                         "causal attribution and intervention of emotion circuits in LVLMs"),
    "epitwin": ("EpiTwin: a conditional spatial graph transformer for stereo-EEG reconstruction",
                "spatial graph transformer for sEEG reconstruction"),
    "top": ("Predicting the Order of Upcoming Tokens Improves Language Modeling",
            "token order prediction as an auxiliary LM objective"),
}
