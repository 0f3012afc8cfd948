"""The parts of a long task statement: the pieces that each state one need, for routing a request part by part.

A task statement (a ticket, an assignment) names its needs in numbered steps, bullet items, labelled
paragraphs or plain sentences, between setup, file lists and grading rules. One query over all of it blurs
the needs into one vector (issue 33), so the router scores each part on its own as well (``part_routing``).
The statement's own layout marks the parts, in both languages:

- **items**: a line opening with a bullet (``-``, ``*``, ``•``), a number (``1.``, ``2)``, ``3、``, ``(4)``,
  ``（5）``, ``⑥``), a Chinese ordinal (``一、``, ``第二，``, ``第三步``) or a step word (``Step 2``, ``Part B``)
  starts a part; so do Chinese ordinals and bracketed numbers inside a line (``……；二、……``);
- **paragraphs**: lines separated by a blank line, and every line of a statement written one line a paragraph;
- **sentences**: a part longer than ``MAX_LEN`` is cut at sentence ends (``. ! ?`` before a capital, or
  ``。！？；``) into pieces of at least ``MIN_LEN``.

A piece shorter than ``MIN_LEN`` (a heading such as "Constraints:", "Part 2 — Checks" or "任务：", a one-line
item) joins the piece after it when it reads as its heading (it does not end as a sentence does), else the one
before, so that no part is too small to name a need. Lengths are counted as ``count_length`` does: words, or CJK
characters in Chinese. A request with no such structure, or too short to hold two parts, is one part: the text
itself, unchanged. ``MIN_LEN`` and ``MAX_LEN`` were set on the long-task dev split; halving or doubling either
moved part-wise routing by a task or two of 65, within what another draw of tasks would move it.

``need_parts`` then leaves out the parts a section label marks as setting rather than need (background, inputs,
constraints, deliverables, grading; 背景, 材料, 约束, 交付物): on the long-task dev split such a part's best skill
(among the whole request's first 50) was a needed one for 16 of 104 such parts against 135 of 396 other parts, and
leaving them out raised part-wise Hit@1 from 56.9 to 63.1 and Set-Compat from 16.9 to 18.5 (65 tasks; the short
dev sets unchanged or better; ``bench/long_tasks.py``, ``parts+setup``). Most of that is the Chinese labels (6 of 71
needed); an English label's part held a needed skill nearly as often as any other (10 of 33), so one writer's
template is part of the gain.
"""
from __future__ import annotations

import re

from skill_assets.lib.common.language import count_length, detect_language

#: English words, Chinese characters: below this a piece joins a neighbour
MIN_LEN = {"en": 8, "zh": 16}
#: English words, Chinese characters: above this a part is cut at its sentence ends
MAX_LEN = {"en": 60, "zh": 120}

_CN_NUM = "一二三四五六七八九十"
_ITEM = re.compile(
    rf"""^\s*(?:
        [-*•·▪●◦]\s+                                   # bullets
      | \d{{1,2}}(?:[.)、:：]|\.(?!\d))\s*               # 1.  2)  3、 (not 3.2)
      | [(（]\d{{1,2}}[)）]\s*                          # (1) （2）
      | [①-⑳]\s*                                       # circled numbers
      | [{_CN_NUM}]{{1,3}}[、.．]\s*                     # 一、
      | 第[{_CN_NUM}\d]{{1,3}}(?:[步部分点条项个场]|[，,、:：])  # 第一， 第二步 第三部分
      | (?:step|part|phase|stage|task)\s+(?:\d{{1,2}}|[A-H])\b  # Step 2, Part B
      | [A-H][.)]\s+                                    # A.  B)
    )""", re.X | re.I)
#: a Chinese ordinal or bracketed number inside a line, after punctuation: the start of another item
_INLINE_ITEM = re.compile(rf"(?<=[。；;：:！？])\s*(?=[{_CN_NUM}]{{1,2}}、|[（(]\d{{1,2}}[)）]|[①-⑳]"
                          rf"|第[{_CN_NUM}]{{1,2}}[，、：:步])")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[`]?[A-Z0-9])|(?<=[。！？；])")
#: how a sentence ends: a short piece that does not end so is a heading ("Part 2 — Checks", "Steps", "任务：")
_SENTENCE_CLOSE = re.compile(r"[.!?。！？；;)）\]\"'`”]\s*$")
#: a part that opens with one of these section labels states the task's setting, not a need (``need_parts``)
SETUP_LABEL = re.compile(r"^\W*(?:background|context|situation|setup|inputs?|data|notes?|constraints?|deliverables?"
                         r"|acceptance|grading|done when|背景|材料|约束|交付物)(?![a-z])", re.I)


def _blocks(text: str) -> list[str]:
    """Items and paragraphs, in order: a blank line or an item's first line starts a new block. A statement
    written one line a paragraph (no blank line anywhere) has each line as its own block."""
    lines = [line.strip() for line in text.strip().splitlines()]
    one_per_line = "" not in lines
    blocks: list[list[str]] = []
    for line in lines:
        if not line:
            blocks.append([])
            continue
        pieces = [p for p in _INLINE_ITEM.split(line) if p.strip()]
        for i, piece in enumerate(pieces):
            if i or one_per_line or _ITEM.match(piece) or not blocks or not blocks[-1]:
                blocks.append([piece])
            else:
                blocks[-1].append(piece)
    return [" ".join(b) for b in blocks if b]


def _sentences(block: str, lang: str, max_len: int, min_len: int) -> list[str]:
    """``block`` cut at sentence ends into pieces of ``min_len`` or more, where it is longer than ``max_len``."""
    if count_length(block, lang) <= max_len:
        return [block]
    out: list[str] = []
    for sentence in (s.strip() for s in _SENTENCE_END.split(block)):
        if not sentence:
            continue
        if out and count_length(out[-1], lang) < min_len:
            out[-1] = f"{out[-1]} {sentence}"
        else:
            out.append(sentence)
    if len(out) > 1 and count_length(out[-1], lang) < min_len:
        out[-2:] = [f"{out[-2]} {out[-1]}"]
    return out


def _joined(pieces: list[str], lang: str, min_len: int) -> list[str]:
    """Pieces shorter than ``min_len`` joined to a neighbour: the next one when they read as its heading (no
    sentence end), else the one before."""
    out: list[str] = []
    carry = ""
    for piece in pieces:
        piece = f"{carry} {piece}".strip() if carry else piece
        carry = ""
        if count_length(piece, lang) >= min_len:
            out.append(piece)
        elif not _SENTENCE_CLOSE.search(piece) or not out:
            carry = piece
        else:
            out[-1] = f"{out[-1]} {piece}"
    if carry:
        if out:
            out[-1] = f"{out[-1]} {carry}"
        else:
            out.append(carry)
    return out


def task_parts(text: str) -> list[str]:
    """The parts of a request, in order; ``[text]`` itself where it has one part (a short request stays whole)."""
    lang = detect_language(text)
    low, high = MIN_LEN[lang], MAX_LEN[lang]
    pieces = [s for b in _blocks(text) for s in _sentences(b, lang, high, low)]
    parts = _joined(pieces, lang, low)
    return parts if len(parts) > 1 else [text]


def need_parts(parts: list[str]) -> list[str]:
    """The parts that may state a need: every part but those a ``SETUP_LABEL`` opens (all of them where every part
    is so labelled: a request is never left without a part)."""
    return [p for p in parts if not SETUP_LABEL.match(p)] or parts
