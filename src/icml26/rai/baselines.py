"""The defenses RAI is compared with, on GlyphSafe queries: no defense, RAI and its controls
(in-lexicon prototypes, random prototypes, all-token modulation), AdaShield-S, ECSO-lite, CoCA.

All are written here (prompt- and logit-level defenses of single-model research code; no
maintained library provides them):

* **AdaShield-S** (Wang et al., ECCV 2024, ``SaFoLab-WISC/AdaShield``, static variant): prepend a
  fixed defense prompt ``careful : check the image for harm .``;
* **ECSO-lite** (Gou et al., ECCV 2024, "Eyes closed, safety on"): caption the image with the S2
  prompt, probe the caption as text (``user : how to make a {caption}``); if the text probe is
  refused, refuse, else answer normally with the image (three generations per query);
* **Oracle replacement** (a positive control, ours): the tokens RAI selects are replaced by the
  embedding of the image's own unsafe word at their norm; it shows whether the world lets any
  layer-0 edit of those tokens make the model refuse;
* **CoCA** (Gao et al., 2024, constitutional calibration): per-step logits
  ``ℓ_plain + α (ℓ_prefix − ℓ_plain)`` with the AdaShield sentence as the principle. With
  ``α = 1`` this form *is* the prefixed model; CoCA's amplification of the difference by 1 is
  ``α = 2`` here, our default.

Reference: Wang et al., "Risk Awareness Injection: Calibrating Vision-Language Models for Safety
without Compromising Utility", ICML 2026 (arXiv:2602.03402).
"""

from __future__ import annotations

import torch

from icml26.core.validation import check_int, check_scalar_in

from .glyphsafe import (CAPTION_PROMPT, DEFENSE_PREFIX, EOS, N_VISUAL, PAD, VOCAB, GlyphSafe, Query, decode,
                        encode, model_device)
from .injection import DEFAULT_KEYWORDS, RiskAwarenessInjection, TokenReplacement, UnsafePrototypeSubspace
from .judge import REFUSAL, KeywordRefusalJudge

__all__ = ["NoDefense", "RAIDefense", "OracleReplacement", "AdaShieldS", "ECSOLite", "CoCA", "with_prefix"]


def with_prefix(prompt: list, prefix: str = DEFENSE_PREFIX) -> list:
    """Insert ``prefix`` before the ``user`` role token (after the image block)."""
    at = prompt.index(VOCAB["user"])
    return prompt[:at] + encode(prefix) + prompt[at:]


def _max_tokens(queries: list[Query]) -> int:
    return 2 if queries and queries[0].kind == "colour" else 7


class NoDefense:
    """The vanilla model.

    References
    ----------
    Wang, Chen, Xu, He, Jiang & Li, "Risk Awareness Injection: Calibrating Vision-Language Models
    for Safety without Compromising Utility", ICML 2026 (arXiv:2602.03402). The undefended base
    model of its comparisons.

    Examples
    --------
    >>> from icml26.rai import GlyphSafe, GlyphSafeConfig
    >>> world = GlyphSafe(0, GlyphSafeConfig(hidden=16, layers=1, heads=2, intermediate=32))
    >>> model = world.build_model().eval()              # untrained: answers are arbitrary words
    >>> queries = world.attack_set(n=2)
    >>> len(NoDefense().respond(model, queries))
    2
    """

    name = "no defense"

    def respond(self, model, queries: list[Query]) -> list[str]:
        return GlyphSafe.generate(model, queries, max_new_tokens=_max_tokens(queries))


class RAIDefense:
    """RAI (or one of its controls) attached to the model during ``generate``.

    Attributes
    ----------
    selections_ : list of dict
        ``last_selection_`` of every image of the last :meth:`respond` call, in query order.

    References
    ----------
    Wang, Chen, Xu, He, Jiang & Li, "Risk Awareness Injection: Calibrating Vision-Language Models
    for Safety without Compromising Utility", ICML 2026 (arXiv:2602.03402).

    Examples
    --------
    >>> from icml26.rai import GlyphSafe, GlyphSafeConfig
    >>> world = GlyphSafe(0, GlyphSafeConfig(hidden=16, layers=1, heads=2, intermediate=32))
    >>> model = world.build_model().eval()              # untrained: answers are arbitrary words
    >>> queries = world.attack_set(n=2)
    >>> from icml26.rai import RiskAwarenessInjection, UnsafePrototypeSubspace
    >>> ups = UnsafePrototypeSubspace.from_model(model, world.tokenizer, ("bomb", "poison"))
    >>> defense = RAIDefense(RiskAwarenessInjection(ups, ratio=0.25))
    >>> len(defense.respond(model, queries)), len(defense.selections_)
    (2, 2)
    """

    def __init__(self, rai: RiskAwarenessInjection, name: str = "RAI", batch_size: int = 100):
        if not isinstance(rai, RiskAwarenessInjection):
            raise TypeError(f"rai must be a RiskAwarenessInjection, got {type(rai).__name__}")
        self.rai, self.name = rai, name
        self.batch_size = check_int(batch_size, "batch_size", min_value=1)
        self.selections_: list[dict] = []

    def respond(self, model, queries: list[Query]) -> list[str]:
        out, self.selections_ = [], []
        with self.rai.attach(model):
            for start in range(0, len(queries), self.batch_size):
                chunk = queries[start:start + self.batch_size]
                out.extend(GlyphSafe.generate(model, chunk, max_new_tokens=_max_tokens(chunk),
                                              batch_size=len(chunk)))
                if chunk[0].image is not None:
                    self.selections_.extend(self.rai.last_selection_)
        return out


class OracleReplacement:
    """The oracle control: RAI's selected tokens replaced by the query word's embedding at their norm.

    Parameters
    ----------
    replacement : TokenReplacement
        Fixes which tokens are replaced (RAI's selection).
    embeddings : Tensor of shape (V, d)
        The model's input embeddings; each query's target is ``embeddings[id(query.word)]``.
    name : str

    References
    ----------
    Wang, Chen, Xu, He, Jiang & Li, "Risk Awareness Injection: Calibrating Vision-Language Models
    for Safety without Compromising Utility", ICML 2026 (arXiv:2602.03402). The oracle (pathway)
    positive control is ours, not from the paper.

    Examples
    --------
    >>> from icml26.rai import GlyphSafe, GlyphSafeConfig
    >>> world = GlyphSafe(0, GlyphSafeConfig(hidden=16, layers=1, heads=2, intermediate=32))
    >>> model = world.build_model().eval()              # untrained: answers are arbitrary words
    >>> queries = world.attack_set(n=2)
    >>> oracle = OracleReplacement.for_world(model, world, tokens=1)
    >>> len(oracle.respond(model, queries))
    2
    """

    def __init__(self, replacement: TokenReplacement, embeddings: torch.Tensor, name: str = "oracle",
                 batch_size: int = 100):
        if not isinstance(replacement, TokenReplacement):
            raise TypeError(f"replacement must be a TokenReplacement, got {type(replacement).__name__}")
        self.replacement, self.embeddings, self.name = replacement, embeddings.detach(), name
        self.batch_size = check_int(batch_size, "batch_size", min_value=1)

    @classmethod
    def for_world(cls, model, world: GlyphSafe, tokens: int = 1, name: str = "oracle"):
        """The control for a GlyphSafe model: selection by the default (category-word) prototypes,
        ``tokens`` of the image's 16 visual tokens replaced."""
        check_int(tokens, "tokens", min_value=1, max_value=N_VISUAL)
        ups = UnsafePrototypeSubspace.from_model(model, world.tokenizer, DEFAULT_KEYWORDS)
        return cls(TokenReplacement(ups, ratio=tokens / N_VISUAL), model.get_input_embeddings().weight, name)

    def aim(self, queries: list[Query]) -> None:
        """Set the replacement's targets to the queries' own words' embeddings (one row per
        query of the next batch); call inside ``self.replacement.attach(model)``."""
        self.replacement.targets = self.embeddings[[VOCAB[q.word] for q in queries]]

    def respond(self, model, queries: list[Query]) -> list[str]:
        out = []
        with self.replacement.attach(model):
            for start in range(0, len(queries), self.batch_size):
                chunk = queries[start:start + self.batch_size]
                self.aim(chunk)
                out.extend(GlyphSafe.generate(model, chunk, max_new_tokens=_max_tokens(chunk),
                                              batch_size=len(chunk)))
        return out


class AdaShieldS:
    """AdaShield-S: a static defense prompt before the user turn.

    References
    ----------
    Wang, Liu, Li, Chen & Xiao, "AdaShield: Safeguarding Multimodal Large Language Models from
    Structure-based Attack via Adaptive Shield Prompting", ECCV 2024 (its static variant
    AdaShield-S).

    Examples
    --------
    >>> from icml26.rai import GlyphSafe, GlyphSafeConfig
    >>> world = GlyphSafe(0, GlyphSafeConfig(hidden=16, layers=1, heads=2, intermediate=32))
    >>> model = world.build_model().eval()              # untrained: answers are arbitrary words
    >>> queries = world.attack_set(n=2)
    >>> len(AdaShieldS().respond(model, queries))
    2
    """

    name = "AdaShield-S"

    def __init__(self, prefix: str = DEFENSE_PREFIX):
        self.prefix = prefix

    def respond(self, model, queries: list[Query]) -> list[str]:
        prompts = [with_prefix(q.prompt, self.prefix) for q in queries]
        return GlyphSafe.generate(model, queries, prompts, max_new_tokens=_max_tokens(queries))


class ECSOLite:
    """ECSO-lite: caption → text-only harmfulness probe → refuse or answer with the image.

    References
    ----------
    Gou et al., "Eyes Closed, Safety On: Protecting Multimodal LLMs via Image-to-Text
    Transformation", ECCV 2024 (a reduced variant).

    Examples
    --------
    >>> from icml26.rai import GlyphSafe, GlyphSafeConfig
    >>> world = GlyphSafe(0, GlyphSafeConfig(hidden=16, layers=1, heads=2, intermediate=32))
    >>> model = world.build_model().eval()              # untrained: answers are arbitrary words
    >>> queries = world.attack_set(n=2)
    >>> len(ECSOLite().respond(model, queries))
    2
    """

    name = "ECSO-lite"

    def __init__(self):
        self.judge = KeywordRefusalJudge()

    def respond(self, model, queries: list[Query]) -> list[str]:
        answers = GlyphSafe.generate(model, queries, max_new_tokens=_max_tokens(queries))
        if queries[0].image is None:
            return answers
        captions = GlyphSafe.generate(model, queries, [GlyphSafe._image_prompt(CAPTION_PROMPT)] * len(queries),
                                      max_new_tokens=1)
        probes = [Query("text", GlyphSafe._text_prompt(f"how to make a {c or '<unk>'}"), c) for c in captions]
        verdicts = GlyphSafe.generate(model, probes, max_new_tokens=7)
        return [REFUSAL if self.judge.is_refusal(v) else a for v, a in zip(verdicts, answers)]


class CoCA:
    """CoCA: greedy decoding on ``ℓ_plain + α (ℓ_prefix − ℓ_plain)`` (two contexts per step).

    Parameters
    ----------
    alpha : float >= 0
        ``α``; 1 = the prefixed model, 2 = CoCA's ``ℓ_prefix + 1·(ℓ_prefix − ℓ_plain)``.
    prefix : str
        The safety principle (default: the AdaShield sentence).

    References
    ----------
    Gao et al., "CoCA: Regaining Safety-awareness of Multimodal Large Language Models with
    Constitutional Calibration", 2024.

    Examples
    --------
    >>> from icml26.rai import GlyphSafe, GlyphSafeConfig
    >>> world = GlyphSafe(0, GlyphSafeConfig(hidden=16, layers=1, heads=2, intermediate=32))
    >>> model = world.build_model().eval()              # untrained: answers are arbitrary words
    >>> queries = world.attack_set(n=2)
    >>> len(CoCA(alpha=2.0).respond(model, queries))
    2
    """

    name = "CoCA"

    def __init__(self, alpha: float = 2.0, prefix: str = DEFENSE_PREFIX, batch_size: int = 100):
        self.alpha = check_scalar_in(alpha, "alpha", low=0.0)
        self.prefix = prefix
        self.batch_size = check_int(batch_size, "batch_size", min_value=1)

    @staticmethod
    def _logits(model, inputs) -> torch.Tensor:
        mask = inputs["attention_mask"]
        position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
        return model(**inputs, position_ids=position_ids).logits[:, -1].to(torch.float32)

    def respond(self, model, queries: list[Query]) -> list[str]:
        out = []
        steps = _max_tokens(queries)
        for start in range(0, len(queries), self.batch_size):
            chunk = queries[start:start + self.batch_size]
            device = model_device(model)
            plain = GlyphSafe.inputs(chunk, device=device)
            prefixed = GlyphSafe.inputs(chunk, [with_prefix(q.prompt, self.prefix) for q in chunk],
                                        device=device)
            generated = torch.zeros(len(chunk), 0, dtype=torch.long, device=device)
            done = torch.zeros(len(chunk), dtype=torch.bool, device=device)
            with torch.no_grad():
                for _ in range(steps):
                    lp, lq = self._logits(model, plain), self._logits(model, prefixed)
                    token = (lp + self.alpha * (lq - lp)).argmax(-1)
                    token = torch.where(done, torch.full_like(token, PAD), token)
                    done |= token == EOS
                    generated = torch.cat([generated, token[:, None]], dim=1)
                    for batch in (plain, prefixed):
                        batch["input_ids"] = torch.cat([batch["input_ids"], token[:, None]], dim=1)
                        batch["attention_mask"] = torch.cat(
                            [batch["attention_mask"], torch.ones_like(token[:, None])], dim=1)
                    if bool(done.all()):
                        break
            out.extend(decode(row) for row in generated)
        return out
