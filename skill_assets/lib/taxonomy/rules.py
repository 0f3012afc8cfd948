"""Rule-based rejection taxonomy over SKIP rationales (English and Chinese).

Rules are data: each has an id, a class, a priority and a pattern. They are tried in priority
order (the most specific classes first). ``match_rules`` is the bare first-hit-wins rule set;
``lib/taxonomy/classify.py`` keeps only the hits a rationale settles on and hands the rest to a
learned model. ``forced_chaining`` is the
final fallback for rationales that call the combination artificial without naming a more
specific cause; a rationale that no rule matches is ``unknown``. Shares are reported over
k ≥ 2 SKIPs only, since a single skill cannot be mis-combined.

Rationales are untrusted text: a pattern's work must stay linear in it. Every gap between two
signals is bounded (``.{0,100}``), and an unbounded run (of spaces, of word characters) only follows a fixed word,
so no run is rescanned from each of its positions (tests/lib/taxonomy/test_hostile_rationales.py).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.taxonomy.settling import MAX_RATIONALE_CHARS

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


def _alt(*parts: str) -> str:
    """Join alternative sub-patterns into one pattern (each part is a general signal phrase)."""
    return "|".join(f"(?:{p})" for p in parts)


# Programming languages named in a pair (ambiguous short names such as "go"/"r" are left out).
_LANG = (r"python|java(?!script)|javascript|typescript|golang|rust|ruby|php|c\+\+|c#|swift|kotlin|scala"
         r"|elixir|erlang|haskell|julia|perl|lua|dart|\.net|node\.js|objective-c")
_OS_CLOUD = r"ios|android|windows|macos|linux|aws|azure|gcp|google cloud"
_NO_PUNCT_ZH = r"[^，。；、,;.]"

RULES: tuple[TaxonomyRule, ...] = (
    TaxonomyRule("business_layer.en", "business_layer_mismatch", 10, _alt(
        r"\bstrateg\w*\b.{0,100}\b(operational|(daily|day[- ]to[- ]day|routine|store|business|back[- ]office) operations|day[- ]to[- ]day|tactical|hands[- ]on|back[- ]office|clerical)\b",
        r"\b(operational|(daily|day[- ]to[- ]day|routine|business|back[- ]office) operations|day[- ]to[- ]day|tactical|back[- ]office)\b.{0,100}\bstrateg\w*",
        r"\b(executive[- ](level|facing|team|decisions?)|executives|board[- ]level|c[- ]suite|senior leadership)\b.{0,100}"
        r"\b(operational|operations|day[- ]to[- ]day|back[- ]office|clerical|routine)\b",
        r"\b(different|separate|distinct|mismatched)\s+(business|organi[sz]ational|management|corporate)\s+(layers?|levels?|tiers?)\b",
        r"\b(layers?|levels?|tiers?) of (the|an?) (business|organi[sz]ation|company|enterprise)\b",
    )),
    TaxonomyRule("business_layer.zh", "business_layer_mismatch", 11, _alt(
        r"战略.{0,30}(执行|运营|操作|日常|作业)",
        r"(执行|运营|日常)(层|工作|事务).{0,20}战略",
        r"(高管|董事会|决策层).{0,30}(日常|执行层|作业|运营)",
        r"(业务|管理|组织)(层级|层次|层面)(不同|不一致|不匹配|差异)",
        r"不同的?(业务|管理|组织)(层级|层次|层面)",
    )),
    TaxonomyRule("granularity.en", "granularity_mismatch", 20, _alt(
        r"\b(low[- ]level|fine[- ]grained|implementation details?|micro[- ]optimi\w*|line[- ]by[- ]line|byte[- ]level|bit[- ]level|assembly[- ]level)\b"
        r".{0,100}\b(high[- ]level|big[- ]picture|architectur\w*|system[- ]wide|company[- ]wide|whole[- ]system|overall)\b",
        r"\b(high[- ]level|big[- ]picture)\b.{0,100}\b(low[- ]level|fine[- ]grained|implementation details?|line[- ]by[- ]line|byte[- ]level)\b",
        r"\bgranularit\w*\b|\blevels? of (abstraction|detail)\b|\babstraction levels?\b|\bscales? of detail\b",
    )),
    TaxonomyRule("granularity.zh", "granularity_mismatch", 21, _alt(
        r"粒度|抽象(层次|层级|级别|程度)",
        r"(底层|细节|太细|细粒度).{0,20}(高层|宏观|整体)",
        r"(高层|宏观|整体).{0,20}(底层|细节|太细|细粒度)",
    )),
    TaxonomyRule("audience.en", "audience_mismatch", 30, _alt(
        r"\b(different|distinct|separate|disjoint)\s+(groups of (people|users)|kinds of users|user (groups?|bases?|segments?)"
        r"|audiences?|users|personas?|target (users|audiences?)|customer segments?)\b",
        r"\b(audiences?|user base|personas?|target users|intended users|their users)\b.{0,30}\b(differ\w*|(do not|don't|never) overlap|mismatch\w*|are disjoint)",
        r"\bbeginners?\b.{0,60}\b(experts?|professionals?)\b",
        r"\b(professionals?|experts?)\b.{0,60}\b(casual|hobbyists?|novices?|beginners?|laypeople|consumers?)\b",
    )),
    TaxonomyRule("audience.zh", "audience_mismatch", 31, _alt(
        r"(用户群体?|受众|目标用户|目标人群|使用人群|服务对象|使用者).{0,12}(不同|不一致|差异|差别|不重合|不重叠|没有重叠|差得?(太|很)?远)",
        r"不同的?(人群|用户群体?|受众|目标用户)|两类(用户|人群)",
        r"面向.{0,15}(不同|两类)的?(人群|用户|受众)",
        r"(目标用户|目标人群|受众|服务对象)是.{1,30}(目标用户|目标人群|受众|服务对象)是",
    )),
    TaxonomyRule("platform.en", "platform_exclusive", 40, _alt(
        rf"\b({_OS_CLOUD})\b.{{0,60}}\b({_OS_CLOUD})\b.{{0,60}}\b(exclusive|incompatible|not both|either|only one|one or the other|different platform\w*)",
        r"\bplatforms?\b.{0,40}\b(exclusive|incompatible|conflict|differ|locked)\w*",
        r"\b(mutually exclusive|competing|rival|different|incompatible)\s+([\w-]+\s+)?(platforms?|operating systems?|clouds?|cloud providers?|game engines?|app stores?|suites?|consoles?|storefronts?|hypervisors?)\b",
        r"\b(platforms?|operating systems?|clouds?|providers?)\b.{0,20}\b(exclude each other|are mutually exclusive)",
        r"\bplatform[- ](locked|specific|bound)\b|\b(windows|macos|linux|ios|android)[- ]only\b",
        r"\bonly one of (these|those|the) (platforms?|operating systems?|clouds?|providers?)\b",
    )),
    TaxonomyRule("platform.zh", "platform_exclusive", 41, _alt(
        r"平台.{0,12}(互斥|不兼容|冲突|不同|只能选)|(操作)?系统.{0,6}(互斥|不兼容)",
        rf"(不同|互斥|互不兼容|竞争)的?{_NO_PUNCT_ZH}{{0,6}}(平台|操作系统|云厂商|云服务商|引擎)",
        r"只(能|可)?(在|适用于|支持)\s*(windows|macos|linux|ios|android|安卓|鸿蒙)",
        r"只会(运行|使用|部署在)其中一(个|种|家)(系统|平台)?",
    )),
    TaxonomyRule("redundant.en", "function_redundant", 50, _alt(
        r"\bredundan\w*|\bsuperfluous\b|\b(adds?|adding) nothing\b",
        r"\boverlap\w*\s+(in\s+)?(function|functionality|purpose|capabilit\w*)",
        r"\b(functions?|functionality|capabilit\w*|features?|purposes?)\b.{0,20}\boverlap",
        r"\boverlap\w*\s+(heavily|substantially|largely|significantly|almost (entirely|completely)|completely)\b",
        r"\bduplicat\w*\s+(function\w*|capabilit\w*|features?|each other|one another)\b",
        r"\b(identical|equivalent|the same) (functionality|functions?|capabilit\w*|purposes?|features?)\b",
        r"\b(make|makes|making|render|renders) the other( one)? (unnecessary|redundant|superfluous|obsolete)\b",
        r"\b(one|either)( skill| tool| of them)?( alone)? (is|would be) (enough|sufficient)\b|\beither (skill|tool|one) alone\b",
        r"\binterchangeabl[ey]\b|\b(are|is|just|merely) (a )?duplicates?\b|\bduplicates\s*[.;:]",
        r"\b(do|does|perform|performs|cover|covers|serve|serves|handle|handles)\s+the same\s+(\w+\s+)?(job|thing|task|purpose|function)\b",
        r"\b(pick|choose|use) (just )?one,? not both\b|\bonly one (of them )?would (actually )?be (used|needed)\b",
    )),
    TaxonomyRule("redundant.zh", "function_redundant", 51, _alt(
        r"(功能|能力|用途)[^不没无非，。；,;]{0,8}(重叠|重复|冗余|重合)|(作用|功能|用途)(基本|几乎|完全)?(一样|相同|一致)|冗余|作用相同|功能相同|重复了",
        r"一个(技能)?(就|即可)(足够|够了|够|满足)",
        r"(可以|能|可)(替代|取代)另一个|同时(使用|调用).{0,6}多余|二选一即可",
        r"互相(替代|取代)|可以互换|结果(也)?(一样|相同)",
    )),
    TaxonomyRule("ecosystem.en", "language_ecosystem_mismatch", 60, _alt(
        r"\b(different|incompatible|separate|unrelated|distinct|mismatched|mixing|two)\s+([\w-]+\s+){0,2}"
        r"(languages?|ecosystems?|tech(nology)? stacks?|stacks|frameworks?|runtimes?|tool ?chains?|package managers?)\b",
        r"\bboth (tool ?chains|stacks|ecosystems|runtimes)\b",
        r"\b(ecosystems?|tool ?chains?|stacks)\b.{0,30}\b(don't|do not|never|cannot|can't) (mix|overlap|meet|interoperate)",
        rf"(?<![\w.])(?P<lang>{_LANG})(?![\w+#]).{{1,80}}?(?<![\w.])(?!(?P=lang)(?![\w+#]))({_LANG})(?![\w+#])"
        r"(?=.{0,80}\b(codebase|project|ecosystem|stack|toolchain|language|runtime)s?\b)",
    )),
    TaxonomyRule("ecosystem.zh", "language_ecosystem_mismatch", 61, _alt(
        r"(编程)?语言.{0,8}(不同|不一致|不兼容)",
        r"(技术栈|工具链|生态).{0,10}(不同|不一致|不兼容|不匹配)",
        r"不同的?(编程语言|语言生态|语言|技术栈|生态|工具链)",
        r"(分属|属于)(两个|两种|两套)(语言|编程语言|生态|技术栈|工具链)|两套(工具链|技术栈)",
        r"(分别|各自)(属于|基于|面向).{0,20}(生态|技术栈|编程语言)",
    )),
    TaxonomyRule("domain.en", "domain_mismatch", 70, _alt(
        r"\b(unrelated|unconnected|different|distinct|disjoint|separate)\s+(\w+\s+)?(domains?|fields?|areas?|topics?|subject\w*"
        r"|problem spaces?|worlds?|universes?|spheres?|realms?|sectors?|concerns?|industries|disciplines?)\b",
        r"\b(are|is|seem|completely|totally|entirely|wholly)\s+unrelated\b"
        r"|\bunrelated\s+(problems?|tasks?|purposes?|needs?|use cases?)\b",
        r"\bdomains?\b.{0,40}\b(do not|don't|never|barely)\s+(overlap|intersect|meet|connect)",
        r"\b(do not|don't|doesn't|never) share (any|a|the same) (domain|field|subject|context|theme)"
        r"|\bshare no (common )?(domain|subject|context|theme|ground)|\bno (shared|common) (context|ground|domain|theme|subject)",
        r"\b(no|little|zero)\s+(\w+\s+)?(overlap|connection|link|relationship|intersection|common ground)\b",
        r"\bnothing (in common|to do with|links|connects|ties)\b|\b(has|have|bears?) no bearing on\b|\btoo far apart\b|\bworlds apart\b|\bfar removed\b",
    )),
    TaxonomyRule("domain.zh", "domain_mismatch", 71, _alt(
        r"领域.{0,10}(不同|无关|不相关|不重叠|没有交集|差异)",
        r"(不同|无关|不相关|互不相关|不相干)的?(领域|方向|主题|范畴|行业|学科)",
        r"(毫无|没有|缺乏|不存在)(任何)?(关联|联系|交集|共同点)|风马牛|八竿子",
        r"(完全|毫不|毫无)(无关|不相干|不相关)|(主题|方向|范畴).{0,6}(相差|差异|不同|无关)|相差(太|甚)远",
    )),
    TaxonomyRule("forced.en", "forced_chaining", 90, _alt(
        r"\b(artificial\w*|forced|forcing|contrived?|unnatural\w*|shoehorn\w*|stacking|cobbled|far[- ]fetched|tacked on|arbitrary|awkward)\b",
        r"\binvent\w*\s+(an?\s+)?(\w+\s+){0,2}(workflow|pipeline|scenario|story|use case)s?\b",
        r"\bno (natural|realistic|genuine|plausible) (request|scenario|use case|task|need)\b"
        r"|\bnot an? (natural|realistic|genuine|plausible) (request|scenario|use case|task|need)\b",
        r"\b(not|never) (naturally|realistically) (used|needed|combined) together\b"
        r"|\b(would|do|does) not (naturally|realistically) (combine|be combined|need|reach for|use)\b",
        r"\b(not every skill|every skill would not) (would )?be necessary\b",
        r"\brather than an? (single |genuine |natural |coherent |real )+(goal|request|need|task|workflow)\b",
        r"\bconcatenat\w*|\b(be|is|seems?|feels?) a stretch\b|\bmanufactured\b|\bglu(e|ed|ing) together\b|\bbolt(ed|ing)? on\b",
        r"\bto make (each|every|all)( three| two)? (skills?|of them) (\w+ )?necessary\b",
    )),
    TaxonomyRule("forced.zh", "forced_chaining", 91, _alt(
        r"强行|生硬|拼凑|牵强|不自然|硬凑|硬塞|堆砌|凑数|刻意|勉强|虚构|编造|拼接|拼在一起",
        r"(没有|缺少|缺乏)(真实|自然|合理|实际)的?.{0,6}(需求|场景|动机)|不太?现实|不符合(真实|实际)|硬拼|人为(构造|拼接|制造)|别扭|不会这样(提问|提需求|使用)",
    )),
)

RULESET_VERSION = digest("|".join(f"{r.rule_id}:{r.label}:{r.priority}:{r.pattern}" for r in RULES))[:12]
_COMPILED = [(r, r.compiled()) for r in sorted(RULES, key=lambda r: r.priority)]


@dataclass(frozen=True)
class TaxonomyLabel:
    """A rationale's class and how it was reached: ``method`` is rule, model, llm or none (unknown).

    ``confidence`` is 1.0 for a rule hit (rules are written to be precise) and the model's calibrated
    probability otherwise; ``model_version`` names the fitted model that was consulted, if any.
    """

    label: str
    rule_id: str | None
    matched_span: str
    method: str = "rule"
    confidence: float = 1.0
    model_version: str | None = None


def rule_hits(text: str) -> Iterator[tuple[TaxonomyRule, re.Match[str]]]:
    """Every rule's every match in ``text``, most specific rule first, then by position (lazily: the
    caller stops at the first one it accepts)."""
    return ((rule, m) for rule, pattern in _COMPILED for m in pattern.finditer(text))


def match_rules(rationale: str) -> TaxonomyLabel:
    """The bare rules, first hit wins, on the raw text: what the curated card measures as "the rules"
    (on its first ``MAX_RATIONALE_CHARS`` characters, like every reading of a rationale)."""
    rationale = rationale[:MAX_RATIONALE_CHARS]
    for rule, pattern in _COMPILED:
        m = pattern.search(rationale)
        if m:
            return TaxonomyLabel(rule.label, rule.rule_id, m.group(0))
    return TaxonomyLabel("unknown", None, "", method="none", confidence=0.0)
