"""Rule-based rejection taxonomy over SKIP rationales (English and Chinese).

Rules are data: each has an id, a class, a priority and a pattern. They are tried in priority
order (the most specific classes first), and the first hit wins. ``forced_chaining`` is the
final fallback for rationales that call the combination artificial without naming a more
specific cause; a rationale that no rule matches is ``unknown``. Shares are reported over
k ≥ 2 SKIPs only, since a single skill cannot be mis-combined.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from skill_assets.lib.hashing import digest

TAXONOMY_CLASSES = (
    "domain_mismatch", "forced_chaining", "language_ecosystem_mismatch", "function_redundant",
    "platform_exclusive", "audience_mismatch", "granularity_mismatch", "business_layer_mismatch", "unknown",
)


@dataclass(frozen=True)
class TaxonomyRule:
    rule_id: str
    label: str
    priority: int
    pattern: str

    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.pattern, re.I)


RULES: tuple[TaxonomyRule, ...] = (
    TaxonomyRule("business_layer.en", "business_layer_mismatch", 10,
                 r"\b(strateg\w*|executive|board[- ]level)\b.{0,80}\b(operation\w*|day[- ]to[- ]day|tactical|hands[- ]on)\b"
                 r"|\b(operation\w*|tactical)\b.{0,80}\bstrateg\w*"),
    TaxonomyRule("business_layer.zh", "business_layer_mismatch", 11, r"战略.{0,20}(执行|运营|操作)|(执行|运营)层.{0,20}战略"),
    TaxonomyRule("granularity.en", "granularity_mismatch", 20,
                 r"\b(low[- ]level|fine[- ]grained|implementation detail\w*)\b.{0,80}\b(high[- ]level|big[- ]picture|architectur\w*)\b"
                 r"|\b(high[- ]level|big[- ]picture)\b.{0,80}\b(low[- ]level|fine[- ]grained|implementation detail\w*)\b"
                 r"|\b(granularit\w*|level of abstraction|abstraction level\w*)\b"),
    TaxonomyRule("granularity.zh", "granularity_mismatch", 21, r"粒度|抽象层(次|级)|(底层|细节).{0,15}(高层|宏观)|(高层|宏观).{0,15}(底层|细节)"),
    TaxonomyRule("audience.en", "audience_mismatch", 30,
                 r"\b(different|distinct|separate)\s+(user groups?|audiences?|users|personas?|target users)\b"
                 r"|\b(audience|user base|persona)s?\b.{0,40}\b(differ|do not overlap|mismatch)"
                 r"|\bbeginners?\b.{0,60}\b(experts?|professionals?)\b"),
    TaxonomyRule("audience.zh", "audience_mismatch", 31, r"(用户群|受众|目标用户|使用人群).{0,12}(不同|不一致|差异|不重合)|面向.{0,15}(不同|两类)"),
    TaxonomyRule("platform.en", "platform_exclusive", 40,
                 r"\b(ios|android|windows|macos|linux|aws|azure|gcp|google cloud)\b.{0,60}\b(ios|android|windows|macos|linux|aws|azure|gcp|google cloud)\b.{0,60}\b(exclusive|incompatible|not both|either|different platform\w*)"
                 r"|\b(platforms?)\b.{0,40}\b(exclusive|incompatible|conflict|differ)\w*|\bmutually exclusive platforms?\b"),
    TaxonomyRule("platform.zh", "platform_exclusive", 41, r"平台.{0,12}(互斥|不兼容|冲突|不同)|(不同|互斥)的?平台"),
    TaxonomyRule("redundant.en", "function_redundant", 50,
                 r"\b(redundan\w*|overlap\w*\s+(function|functionality|purpose|capabilit\w*)|duplicate\w* (function|functionality)"
                 r"|(one|either) (skill|of them) (alone )?(is|would be) (enough|sufficient)|serve the same purpose|do the same thing)\b"),
    TaxonomyRule("redundant.zh", "function_redundant", 51, r"功能.{0,8}(重叠|重复|冗余)|冗余|一个(技能)?(就|即可)(足够|够了|满足)|作用相同|重复了"),
    TaxonomyRule("ecosystem.en", "language_ecosystem_mismatch", 60,
                 r"\b(different|incompatible|separate|unrelated)\s+(programming\s+)?(languages?|ecosystems?|tech(nology)? stacks?|frameworks?|runtimes?|toolchains?)\b"
                 r"|\b(python|javascript|typescript|java|go|golang|rust|ruby|php|c\+\+|swift|kotlin|\.net)\b.{0,50}\b(versus|vs\.?|and|while|whereas)\b.{0,30}\b(python|javascript|typescript|java|go|golang|rust|ruby|php|c\+\+|swift|kotlin|\.net)\b.{0,60}\b(ecosystem|stack|language)s?\b"),
    TaxonomyRule("ecosystem.zh", "language_ecosystem_mismatch", 61, r"(编程)?语言.{0,8}(不同|不一致|不兼容)|(技术栈|生态).{0,10}(不同|不一致|不兼容|不匹配)|不同的?(技术栈|生态|编程语言)"),
    TaxonomyRule("domain.en", "domain_mismatch", 70,
                 r"\b(unrelated|different|distinct|disjoint|separate)\s+(domains?|fields?|areas?|topics?|subject\w*|problem spaces?)\b"
                 r"|\bdomains?\b.{0,40}\b(do not|don't|never|barely)\s+(overlap|intersect|meet|connect)"
                 r"|\b(no|little) (overlap|connection|relation\w*)\b.{0,40}\b(between|across)\b|\bnothing (to do|in common) with\b"),
    TaxonomyRule("domain.zh", "domain_mismatch", 71, r"领域.{0,10}(不同|无关|不相关|不重叠|没有交集|差异)|(毫无|没有|缺乏)(关联|联系|交集)|不相关的?领域|风马牛"),
    TaxonomyRule("forced.en", "forced_chaining", 90,
                 r"\b(artificial\w*|forced|contrived|unnatural\w*|shoehorn\w*|stack(ing|ed)?|cobbled|far[- ]fetched"
                 r"|no (natural|realistic|genuine) (request|scenario|use case|task)|not (naturally|realistically) (used|needed) together"
                 r"|would not (naturally|realistically) (combine|be combined|need))\b"),
    TaxonomyRule("forced.zh", "forced_chaining", 91, r"强行|生硬|拼凑|牵强|不自然|硬凑|堆砌|没有(真实|自然|合理)的?(需求|场景)"),
)

RULESET_VERSION = digest("|".join(f"{r.rule_id}:{r.label}:{r.priority}:{r.pattern}" for r in RULES))[:12]
_COMPILED = [(r, r.compiled()) for r in sorted(RULES, key=lambda r: r.priority)]


@dataclass(frozen=True)
class TaxonomyLabel:
    label: str
    rule_id: str | None
    matched_span: str


def classify_rationale(rationale: str) -> TaxonomyLabel:
    for rule, pattern in _COMPILED:
        m = pattern.search(rationale)
        if m:
            return TaxonomyLabel(rule.label, rule.rule_id, m.group(0))
    return TaxonomyLabel("unknown", None, "")
