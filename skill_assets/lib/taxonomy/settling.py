"""What a rationale settles on: its reasoning without markup, the part after its last turn, and
the mentions it denies.

A rejection's main reason is the one it ends on. Verbose rationales weigh first ("at first glance
these look redundant, but …", "不是技术栈的问题，而是 …") and the old first-hit rules took the class
they set aside. So before any rule or model looks at a rationale:

- ``reasoning_text`` strips what generators wrap it in (JSON, ``<thought>``/``<reason>`` tags,
  ``thought: … decision: SKIP`` lines), through the generation stage's own parser where it reads;
- ``Reasoning.settled_from`` is where the conclusion starts: the reason field when there is one,
  else after the last contrastive turn ("but", "however", "the real issue is", 但/不过/而是/关键在于 …);
- ``Reasoning.denies(start, end)`` says whether a matched span is negated close before it ("not
  redundant", "isn't a platform issue", 不是/并非/与其说) or dismissed after it ("… is not the issue",
  "… 并不准确"), within its own clause.

A rationale is untrusted text (a generator's answer), so its work is linear in its length: whitespace
runs are collapsed before a pattern that could span them runs, the decision-line test cannot span
lines, a clause is looked for within ``CLAUSE_WINDOW`` characters of a span (the negation patterns
reach no further), and a rationale over ``MAX_RATIONALE_CHARS`` is read on its first that many
characters (far beyond any real one: the labelled set's longest is under 500).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from skill_assets.lib.generation.llm_output import parse_generator_output

#: a longer rationale is read (classified, featurised) on its first this many characters
MAX_RATIONALE_CHARS = 20_000
#: characters either side of a span searched for its clause: beyond the widest match of the negation patterns
CLAUSE_WINDOW = 64

# run on text whose whitespace runs are collapsed (``_clean``): inside a long run, ``\s*`` from every
# position scans the rest of it, which is quadratic in the run
_LABEL = re.compile(r"(?im)(?:^|(?<=[\s>.。]))\**\s*(?:thought|thinking|reasoning|reason|rationale|decision|verdict|answer"
                    r"|思考|理由|原因|决定|结论|判断)\s*\**\s*[:：]\s*\**")
_DECISION_WORD = re.compile(r"\b(?:SKIP|WRITE)\b\.?")
_TAGS = re.compile(r"</?[a-zA-Z_]+>|\*\*|^#+\s*", re.M)
_SPACES = re.compile(r"\s+")
# a decision line, as the generation stage's parser reads one; it cannot span lines (``\W*`` from
# every line start of a run of newlines scanned the rest of the run)
_DECISION_LINE = re.compile(r"(?im)^[^\w\n]*decision[^\w\n]*[:：]")

_TURN = re.compile(
    r"(?<!not )\byet\b|\b(?:but|however|nevertheless|nonetheless|that said|even so|in the end|ultimately|on reflection"
    r"|looking closer|reading (?:further|closer)|on closer (?:inspection|look)|what (?:rules it out|fails|blocks"
    r"|separates them|matters)|the (?:real |actual |sharper |main |true )?(?:issue|problem|catch|point|trouble"
    r"|blocker|reason|mismatch|gap) (?:here )?is)\b|(?:^|[.;:!?]\s*)still\b"
    r"|但是|但|可是|不过|然而|却|其实|真正|关键在于|问题在于|原因在于|排除它的|卡住的|再看|细看|仔细看|再想想|不如说|而是",
    re.I)
_CLAUSE_END = re.compile(r"[,;:.!?，。；：！？、—\n]")
_NEGATION_BEFORE = re.compile(
    r"(?:\b(?:not|no|never|nor|neither|hardly|isn't|aren't|wasn't|weren't|don't|doesn't|didn't|wouldn't|won't"
    r"|can't|cannot|rather than|instead of|not really|not quite|not that)\b"
    r"|不是|并非|并不|不算|谈不上|不能说|与其说|而不是|不在于|倒不是|也不是|没有|无关乎)"
    r"(?:(?!\b(?:because|since|as)\b|因为|由于).){0,24}$", re.I)
_DISMISSED_AFTER = re.compile(
    r"^.{0,24}?(?:\b(?:is|are|was|were)(?: not|n't) (?:the|an?|really the) (?:issue|problem|point|reason|blocker|case)"
    r"|\b(?:isn't|is not) it\b|\bthat's not it\b|\bis fine\b|\bundersells\b"
    r"|并不准确|不准确|不对|也不算|不成立|不是问题|不是原因|没问题|说得通|也可以)", re.I)


@dataclass(frozen=True)
class Reasoning:
    """A rationale's reasoning text and where its conclusion begins."""

    text: str
    settled_from: int = 0

    @property
    def settled(self) -> str:
        return self.text[self.settled_from:]

    def _clause(self, start: int, end: int) -> tuple[str, str]:
        """The span's clause before and after it, each cut at ``CLAUSE_WINDOW`` characters: what the
        negation patterns can see of it, read in time independent of the text's length."""
        before = self.text[max(0, start - CLAUSE_WINDOW):start]
        cut = max((m.end() for m in _CLAUSE_END.finditer(before)), default=0)
        after = self.text[end:end + CLAUSE_WINDOW]
        stop = _CLAUSE_END.search(after)
        return before[cut:], after[:stop.start()] if stop else after

    def denies(self, start: int, end: int) -> bool:
        """True when the span ``text[start:end]`` is negated or dismissed within its clause."""
        before, after = self._clause(start, end)
        return bool(_NEGATION_BEFORE.search(before) or _DISMISSED_AFTER.search(after))

    def asserts(self, start: int, end: int) -> bool:
        """A span the rationale settles on: in its conclusion and not denied."""
        return start >= self.settled_from and not self.denies(start, end)


def _unwrapped(rationale: str) -> tuple[str, str]:
    """(deliberation, conclusion) from a generator's wrapped answer; ("", text) when it is plain text."""
    if "{" in rationale or "<" in rationale or _DECISION_LINE.search(rationale):
        decided = parse_generator_output(rationale)
        if decided.decision == "SKIP":
            thought = decided.thought if decided.thought != decided.reason else ""
            return thought, decided.reason
    return "", rationale


def _clean(text: str) -> str:
    text = _DECISION_WORD.sub(" ", _LABEL.sub(" ", _SPACES.sub(" ", _TAGS.sub(" ", text))))
    return _SPACES.sub(" ", text).strip(" .。")


def reasoning_text(rationale: str) -> Reasoning:
    """The rationale as plain reasoning, with ``settled_from`` at its conclusion; a rationale over
    ``MAX_RATIONALE_CHARS`` is read on its first that many characters."""
    thought, reason = (_clean(part) for part in _unwrapped((rationale or "")[:MAX_RATIONALE_CHARS]))
    text = f"{thought}. {reason}" if thought and reason else thought or reason
    start = len(thought) + 2 if thought and reason else 0
    turns = [m.end() for m in _TURN.finditer(text, start)]
    # a turn in the last few characters ("…, but.") settles on nothing; keep the earlier conclusion
    settled = next((t for t in reversed(turns) if len(text) - t > 3), start)
    while settled < len(text) and not text[settled].isalnum():
        settled += 1  # past the comma or colon after "however", "但"
    return Reasoning(text, settled)
