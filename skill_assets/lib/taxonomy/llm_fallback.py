"""The optional LLM fallback's words: the prompt that asks for a rationale's class and how its answer is read.

Only for rationales the rules and the model leave ``unknown`` (below the model's confidence floor),
and off by default. The call machinery is the generation stage's (response cache, crash-safe
journal, token and dollar budget, circuit breaker: ``lib/generation``); a ``lib/`` stage may not
import another, so ``defs/taxonomy`` joins the two: it renders these messages, sends them through
``lib.generation.records.generate`` and stores the parsed classes (``taxonomy_llm_labels``), which
``skip_taxonomy`` then passes to ``classify_rationales`` as its ``fallback`` (``answers_fallback``).

Rationales and answers are untrusted text: the LLM is asked about a rationale's first
``MAX_RATIONALE_CHARS`` characters (what the rules and the model read of it), an answer is read in
time linear in its length, and nothing here raises on one (3,000 nested ``[`` made ``json`` raise
RecursionError; a lone surrogate made the key's UTF-8 encoding raise).
"""
from __future__ import annotations

import json
import re

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.taxonomy.classify import UNKNOWN, Fallback
from skill_assets.lib.taxonomy.rules import TAXONOMY_CLASSES
from skill_assets.lib.taxonomy.settling import MAX_RATIONALE_CHARS

#: part of every request key: a change to the prompt or the schema is a new request, never an old answer
TEMPLATE_VERSION = "taxonomy-llm-v1"

CLASS_NOTES = {
    "domain_mismatch": "the skills belong to unrelated subject areas",
    "forced_chaining": "a request using them all would be contrived, assembled only to use every skill",
    "language_ecosystem_mismatch": "they are tied to different programming languages or tool stacks",
    "function_redundant": "they do the same job, so one of them is enough",
    "platform_exclusive": "they target competing platforms, clouds, OSes or products that exclude each other",
    "audience_mismatch": "they serve different kinds of people",
    "granularity_mismatch": "they work at very different scales or levels of detail",
    "business_layer_mismatch": "they sit at different layers of an organisation (strategy vs. operations)",
}
CLASSES = tuple(c for c in TAXONOMY_CLASSES if c != UNKNOWN)
RESPONSE_SCHEMA = {"type": "object", "properties": {"label": {"type": "string", "enum": [*CLASSES, UNKNOWN]}},
                   "required": ["label"]}
_SYSTEM = ("You label why a benchmark generator refused to write a request for a set of skills. Answer with one "
           "JSON object {\"label\": CLASS} and nothing else. CLASS is the reason the rationale settles on (not one "
           "it mentions only to set aside), one of:\n"
           + "\n".join(f"- {c}: {note}" for c, note in CLASS_NOTES.items())
           + f"\n- {UNKNOWN}: the rationale gives no reason")
_NAME = re.compile("|".join(sorted((*CLASSES, UNKNOWN), key=len, reverse=True)))


def llm_messages(rationale: str) -> list[dict]:
    """The chat messages that ask for one rationale's class (English or Chinese rationale, English prompt)."""
    return [{"role": "system", "content": _SYSTEM},
            {"role": "user", "content": f"Rationale:\n{rationale[:MAX_RATIONALE_CHARS].strip()}\n\nJSON:"}]


def parse_llm_label(text: str | None) -> str | None:
    """The class an answer names (``{"label": "audience_mismatch"}`` or the bare name), None for ``unknown``,
    no class or more than one."""
    if not text:
        return None
    try:
        value = json.loads(text)
        if isinstance(value, dict) and isinstance(value.get("label"), str):
            text = value["label"]
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; deep nesting recurses
        pass
    named = set(_NAME.findall(re.sub(r"[\s-]+", "_", text.lower())))
    return named.pop() if len(named) == 1 and UNKNOWN not in named else None


def rationale_key(rationale: str) -> str:
    """What an LLM answer is matched on: the rationale text (a record whose rationale changed is asked again)."""
    return digest((rationale or "").encode("utf-8", "surrogatepass"))[:16]  # the same bytes for any valid text


def answers_fallback(answers: dict[str, str]) -> Fallback:
    """A ``classify_rationales`` fallback from stored answers (``rationale_key`` → class): it sends nothing."""
    return lambda rationales: [answers.get(rationale_key(r)) for r in rationales]
