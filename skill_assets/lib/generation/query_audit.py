"""Audit generated queries before they enter the benchmark.

Each check is a flag with a reason; a query that raises any flag is excluded from the splits
(and keeps the reason). Name leakage follows R3-Skill's audit: a case-, space- and
hyphen-insensitive substring match of any skill name of the set inside the query.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from skill_assets.lib.common.hashing import normalise_text, squash
from skill_assets.lib.common.language import DIRECTIONS, count_length, detect_language

_PUNCT = re.compile(r"[^\w\u3400-\u9fff]+")
REFUSAL_PATTERNS = re.compile(
    r"\b(i can(?:no|'|’)t|i am unable|i(?:'|’)m unable|as an ai|i won(?:'|’)t be able)\b|抱歉|无法(?:完成|提供|帮助)|作为.{0,6}(?:ai|人工智能)", re.I)


@dataclass(frozen=True)
class AuditWindow:
    min_length: int = 50
    max_length: int = 300


def leaked_names(query: str, names: list[str]) -> list[str]:
    q = squash(query)
    return [n for n in names if squash(n) and squash(n) in q]


def normalised_query(query: str) -> str:
    return _PUNCT.sub(" ", normalise_text(query)).strip()


def audit_queries(records: list[dict], window: AuditWindow = AuditWindow()) -> list[dict]:
    """One audit row per WRITE record: each flag, its detail, and ``passed``.

    ``records`` need ``record_id``, ``query``, ``direction``, ``k`` and ``skill_names``; the first
    occurrence (in record order) of a duplicated query passes, later ones are flagged.
    """
    seen_exact: dict[str, str] = {}
    seen_norm: dict[str, str] = {}
    rows = []
    for r in records:
        query = r["query"]
        target_lang = DIRECTIONS[r["direction"]][1]
        query_lang = detect_language(query)
        length = count_length(query, target_lang)
        leaks = leaked_names(query, r["skill_names"])
        exact_of = seen_exact.get(query)
        norm_of = seen_norm.get(normalised_query(query)) if exact_of is None else None
        seen_exact.setdefault(query, r["record_id"])
        seen_norm.setdefault(normalised_query(query), r["record_id"])
        flags = {
            "duplicate_exact": exact_of is not None,
            "duplicate_normalised": norm_of is not None,
            "name_leakage": bool(leaks),
            "length_out_of_window": not (window.min_length <= length <= window.max_length),
            "language_mismatch": query_lang != target_lang,
            "empty_or_refusal": not query.strip() or bool(REFUSAL_PATTERNS.search(query)),
        }
        reasons = {
            "duplicate_exact": f"same text as {exact_of}",
            "duplicate_normalised": f"same normalised text as {norm_of}",
            "name_leakage": f"mentions {', '.join(leaks)}",
            "length_out_of_window": f"length {length} outside [{window.min_length}, {window.max_length}]",
            "language_mismatch": f"query is {query_lang}, direction wants {target_lang}",
            "empty_or_refusal": "empty or a refusal",
        }
        rows.append({
            "record_id": r["record_id"], "direction": r["direction"], "k": r["k"],
            **flags,
            "leaked_names": leaks, "query_length": length, "query_language": query_lang,
            "passed": not any(flags.values()),
            "reasons": "; ".join(reasons[f] for f, on in flags.items() if on),
        })
    return rows
