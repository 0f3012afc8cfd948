"""Prompt templates for the WRITE/SKIP generator.

One template covers single- and multi-skill sets; its rendered parts depend on the direction,
the style and k (for k ≥ 2 the model must first judge whether the set is a coherent whole).
``TEMPLATE_VERSION`` is a hash of the template text, stored on every record and in every cache
key, so editing a prompt never silently reuses answers written for the old one.
"""
from __future__ import annotations

import json

from skill_assets.lib.common.hashing import digest
from skill_assets.lib.common.language import DIRECTIONS

STYLE_GUIDES: dict[str, str] = {
    "task_direct": "State the task plainly, as a busy user typing into a chat box.",
    "scene": "Open with the concrete situation the user is in, then say what they need.",
    "role_setup": "The user first says who they are (their job or role), then makes the request.",
    "constraint": "The request carries explicit constraints: deadlines, tools that must or must not be used, formats.",
    "multi_step": "The user describes a piece of work that naturally unfolds in several steps.",
    "debug": "The user is stuck: something fails or behaves oddly, and they describe the symptoms.",
}

LANGUAGE_NAMES = {"en": "English", "zh": "Simplified Chinese"}
LENGTH_RULES = {"en": "between 50 and 300 words", "zh": "between 50 and 300 Chinese characters"}

SYSTEM_PROMPT = (
    "You build evaluation data for a router that picks agent skills for user requests. "
    "You read skill definitions and either write one realistic user request that needs them, "
    "or decline and explain why no realistic request needs them together."
)

_TASK_SINGLE = """Below is one agent skill. Write a request that a real user could send to an assistant,
one that can only be handled well with this skill.

{skills}

Rules for the request:
- Write it in {language}, {length}.
- Style: {style_guide}
- Never mention the skill's name or a translation of it, and never copy sentences from the skill.
- Describe the user's goal and context, not the skill.

Decide WRITE if such a request is natural; decide SKIP only if the skill is too vague to
motivate any concrete request."""

_TASK_MULTI = """Below are {k} agent skills. Judge them together first: is there ONE realistic user request
that genuinely needs every one of them, where dropping any skill would leave part of the job undone?

{skills}

Decide SKIP when the combination is artificial: the domains do not meet, the skills target
different languages, platforms, audiences or levels of abstraction, or one skill already covers
what another does. Do not force a request out of an unnatural stack.

If you decide WRITE, the request must:
- be in {language}, {length};
- follow this style: {style_guide}
- need all {k} skills, without naming any skill or translating a name, and without copying sentences."""

_OUTPUT = """Answer with a JSON object with the keys "thought" (your brief reasoning), "decision"
("WRITE" or "SKIP"), "query" (the request when WRITE, else an empty string) and "reason"
(why you skipped when SKIP, else an empty string)."""

TEMPLATE_VERSION = digest(SYSTEM_PROMPT + _TASK_SINGLE + _TASK_MULTI + _OUTPUT + json.dumps(STYLE_GUIDES))[:12]

RESPONSE_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "thought": {"type": "string"},
        "decision": {"type": "string", "enum": ["WRITE", "SKIP"]},
        "query": {"type": "string"},
        "reason": {"type": "string"},
    },
    "required": ["thought", "decision", "query", "reason"],
}


def render_skill(index: int, skill: dict, body_chars: int) -> str:
    body = skill["body"][:body_chars]
    return f"### Skill {index}: {skill['name']}\nDescription: {skill['description']}\n\n{body}"


def render_messages(skills: list[dict], direction: str, style: str, body_chars: int = 800) -> list[dict]:
    """Chat messages for one combination; skills are rendered in the given order."""
    _, query_lang = DIRECTIONS[direction]
    template = _TASK_SINGLE if len(skills) == 1 else _TASK_MULTI
    task = template.format(
        k=len(skills),
        skills="\n\n".join(render_skill(i + 1, s, body_chars) for i, s in enumerate(skills)),
        language=LANGUAGE_NAMES[query_lang],
        length=LENGTH_RULES[query_lang],
        style_guide=STYLE_GUIDES[style],
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": task + "\n\n" + _OUTPUT}]
