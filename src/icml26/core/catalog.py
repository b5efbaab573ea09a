"""The catalogue of methods: what ``icml26 list`` shows, read without importing methods.

Two sources:

* :data:`PAPERS`, the nineteen papers icml26 covers (slug, title, the system in a few
  words), so methods that are not implemented yet are listed too;
* each implemented method folder's claim table, ``<slug>/claims.toml``
  (:mod:`icml26.core.claims`): its title, parts, headline and claims, read with
  :mod:`tomllib` in milliseconds, where importing the methods (torch, transformers, ...)
  costs about ten seconds; with the static status of its ledger against the table
  (:func:`icml26.core.ledger.static_check`).

Nothing is generated: a method author writes the table next to ``experiment.py``, and the
core refuses an Experiment that disagrees with it. A method folder without a table is
listed with an error that says so.

Examples
--------
>>> from icml26.core.catalog import catalogue
>>> entry = catalogue()["pem"]
>>> entry["source"], entry["headline"].startswith("E")
('table', True)
"""

from __future__ import annotations

from pathlib import Path

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


_SKIP = {"core", "zoo", "__pycache__"}


def package_root() -> Path:
    """The ``icml26`` package folder (found without importing any method)."""
    return Path(__file__).resolve().parent.parent


def method_folders(root: Path | None = None) -> list[str]:
    """Slugs of the folders under the package that hold an ``experiment.py``, sorted."""
    root = package_root() if root is None else Path(root)
    return sorted(d.name for d in root.iterdir()
                  if d.is_dir() and d.name not in _SKIP and not d.name.startswith((".", "_"))
                  and (d / "__init__.py").is_file() and (d / "experiment.py").is_file())


def _ledger_root_for(root: Path | None) -> Path | None:
    """The ledger root that goes with a package root: the default one for this package."""
    return None if root is None or Path(root).resolve() == package_root() else Path(root)


def catalogue(root: Path | None = None, *, package: str = "icml26") -> dict:
    """Every implemented method's entry by slug, read from the claim tables (no import).

    Each entry has ``slug``, ``title``, ``parts`` (name, default, description), ``claims``
    (the paper's claims in words), ``reference``, ``headline``, ``source`` (``"table"``) and,
    for icml26's own methods, ``ledger`` (the ledger's hash and whether it matches the table);
    a folder whose table is missing or does not parse has ``error`` instead.
    ``root``/``package`` name another package laid out like icml26 (for tests).
    """
    root = package_root() if root is None else Path(root)
    return {slug: _table_entry(slug, root, package) for slug in method_folders(root)}


def _table_entry(slug: str, root: Path, package: str = "icml26") -> dict:
    """A method's entry read from its ``claims.toml`` (no import), with the ledger's static
    status against the table (:func:`icml26.core.ledger.static_check`)."""
    from .claims import TABLE_FILE, TableError, load_table

    try:
        table = load_table(slug, root)
    except TableError as exc:
        return {"slug": slug, "error": f"claims.toml: {exc}", "source": "table"}
    if table is None:
        return {"slug": slug, "source": "table",
                "error": f"no {TABLE_FILE}: declare the method's claims as data "
                         "(see icml26.core.claims and docs/DESIGN.md)"}
    entry = {"slug": slug, "title": table.title, "claims": list(table.summary),
             "reference": table.reference, "headline": table.headline, "source": "table",
             "parts": [{"name": p.name, "default": p.default, "description": p.description}
                       for p in table.parts.values()]}
    if package == "icml26":
        from .ledger import static_check

        entry["ledger"] = static_check(slug, table, _ledger_root_for(root))
    return entry
