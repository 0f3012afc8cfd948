"""Turn whatever a generator answered into a WRITE, SKIP or INVALID decision.

Endpoints with JSON-schema support answer JSON; others answer free text, often with tags
(``<decision>WRITE</decision>``) or ``Decision: SKIP`` lines, sometimes JSON wrapped in a code
fence. Anything that cannot be read unambiguously is INVALID with the reason kept; the raw text
is always stored beside it by the caller.

An answer is untrusted text, and answers are cached: a parser that raised on one (3,000 nested
``[`` made ``json`` raise RecursionError) failed its partition on every rerun without sending a
request. So parsing never raises, and its work is linear in the answer: fences and tags are paired
by forward searches, a decision line's pattern cannot span lines, at most ``MAX_OBJECT_STARTS``
``{`` are tried as JSON, and an answer over ``MAX_ANSWER_CHARS`` is INVALID unread.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

_FENCE = "```"
_LINE = r"(?im)^[ \t]*\**{0}\**[ \t]*[:：][ \t]*(.*?)[ \t]*$"
#: far beyond any generator's token limit; a longer answer is not read
MAX_ANSWER_CHARS = 200_000
#: ``{`` positions tried as the start of a JSON object: templates and prose hold a few, never hundreds
MAX_OBJECT_STARTS = 32


@dataclass(frozen=True)
class GeneratorDecision:
    decision: str  # WRITE | SKIP | INVALID
    query: str = ""
    reason: str = ""
    thought: str = ""
    parse_error: str = ""


def _fenced(text: str) -> list[str]:
    """The insides of ``` fences, paired left to right (a ``json`` language tag dropped)."""
    out, at = [], 0
    while (start := text.find(_FENCE, at)) != -1 and (end := text.find(_FENCE, start + 3)) != -1:
        inside = text[start + 3:end]
        out.append(inside[4:] if inside.startswith("json") else inside)
        at = end + 3
    return out


def _first_json_object(text: str) -> dict | None:
    for cand in [*_fenced(text), text]:
        start, tried = cand.find("{"), 0
        while start != -1 and tried < MAX_OBJECT_STARTS:
            tried += 1
            try:
                obj, _ = json.JSONDecoder().raw_decode(cand[start:])
                if isinstance(obj, dict):
                    return obj
            except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; deep nesting recurses
                pass
            start = cand.find("{", start + 1)
    return None


def _tagged(text: str, name: str) -> str | None:
    """The text between the first ``<name>`` and the ``</name>`` after it (any case), stripped; None without."""
    opening = re.search(f"<{name}>", text, re.I)
    closing = opening and re.compile(f"</{name}>", re.I).search(text, opening.end())
    return text[opening.end():closing.start()].strip() if closing else None


def _field(text: str, name: str) -> str:
    tagged = _tagged(text, name)
    if tagged is not None:
        return tagged
    m = re.search(_LINE.format(name), text)
    return m.group(1).strip() if m else ""


def _decide(raw_decision: str, query: str, reason: str, thought: str) -> GeneratorDecision:
    decision = raw_decision.strip().strip("\"'*").upper()
    if decision not in ("WRITE", "SKIP"):
        return GeneratorDecision("INVALID", parse_error=f"decision is {raw_decision!r}, not WRITE or SKIP")
    if decision == "WRITE" and not query.strip():
        return GeneratorDecision("INVALID", thought=thought, parse_error="WRITE without a query")
    if decision == "SKIP" and not reason.strip():
        reason = thought  # a rationale is what matters for the taxonomy; the thought usually is one
        if not reason.strip():
            return GeneratorDecision("INVALID", parse_error="SKIP without a reason or thought")
    return GeneratorDecision(decision, query=query.strip() if decision == "WRITE" else "",
                             reason=reason.strip() if decision == "SKIP" else "", thought=thought.strip())


def parse_generator_output(text: str | None) -> GeneratorDecision:
    """The decision in ``text``; INVALID with its reason for anything else, never an exception."""
    if not text or not text.strip():
        return GeneratorDecision("INVALID", parse_error="empty response")
    if len(text) > MAX_ANSWER_CHARS:
        return GeneratorDecision("INVALID", parse_error=f"answer of {len(text)} characters, over {MAX_ANSWER_CHARS}")
    obj = _first_json_object(text)
    if obj is not None and "decision" in obj:
        return _decide(str(obj.get("decision", "")), str(obj.get("query") or ""),
                       str(obj.get("reason") or ""), str(obj.get("thought") or ""))
    decision = _field(text, "decision")
    if decision:
        return _decide(decision, _field(text, "query"), _field(text, "reason"), _field(text, "thought"))
    return GeneratorDecision("INVALID", parse_error="no JSON object with 'decision' and no decision tag or line")
