"""icml26: ICML 2026 papers as library components with reproducible claims."""

__version__ = "0.1.0"
