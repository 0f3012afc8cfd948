"""Turn whatever a generator answered into a WRITE, SKIP or INVALID decision.

Endpoints with JSON-schema support answer JSON; others answer free text, often with tags
(``<decision>WRITE</decision>``) or ``Decision: SKIP`` lines, sometimes JSON wrapped in a code
fence. Anything that cannot be read unambiguously is INVALID with the reason kept; the raw text
is always stored beside it by the caller.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
_TAG = r"<{0}>\s*(.*?)\s*</{0}>"
_LINE = r"(?im)^\s*\**{0}\**\s*[:：]\s*(.*?)\s*$"


@dataclass(frozen=True)
class GeneratorDecision:
    decision: str  # WRITE | SKIP | INVALID
    query: str = ""
    reason: str = ""
    thought: str = ""
    parse_error: str = ""


def _first_json_object(text: str) -> dict | None:
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        start = cand.find("{")
        while start != -1:
            try:
                obj, _ = json.JSONDecoder().raw_decode(cand[start:])
                if isinstance(obj, dict):
                    return obj
            except json.JSONDecodeError:
                pass
            start = cand.find("{", start + 1)
    return None


def _field(text: str, name: str) -> str:
    m = re.search(_TAG.format(name), text, re.S | re.I) or re.search(_LINE.format(name), text)
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
    if not text or not text.strip():
        return GeneratorDecision("INVALID", parse_error="empty response")
    obj = _first_json_object(text)
    if obj is not None and "decision" in obj:
        return _decide(str(obj.get("decision", "")), str(obj.get("query") or ""),
                       str(obj.get("reason") or ""), str(obj.get("thought") or ""))
    decision = _field(text, "decision")
    if decision:
        return _decide(decision, _field(text, "query"), _field(text, "reason"), _field(text, "thought"))
    return GeneratorDecision("INVALID", parse_error="no JSON object with 'decision' and no decision tag or line")
