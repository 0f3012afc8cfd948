"""Label Studio labelling configs and task payloads for review items.

Each kind gets one labelling config. A task shows what a reviewer needs to judge without leaving
the page: the request, and each skill's name, id, description and the start of its body. Choices
carry ``alias`` values, so an export holds stable codes (``confirm``, ``correct``, ``reject``,
``incorrect``) whatever the button text says. The same task dicts are what the server import
receives and what the JSON import file holds, so both paths show reviewers the same thing.
"""
from __future__ import annotations

import html

SKILL_SET_CONFIG = """<View>
  <Header value="$heading"/>
  <Text name="query" value="$query"/>
  <Header value="Skills labelled as needed by this request"/>
  <HyperText name="skills" value="$skills_html"/>
  <Header value="Are these the skills this request needs?"/>
  <Choices name="verdict" toName="query" choice="single" required="true">
    <Choice value="Yes: exactly these skills" alias="confirm"/>
    <Choice value="No: some are missing or extra (mark them below)" alias="correct"/>
    <Choice value="Reject: the request itself is unusable" alias="reject"/>
  </Choices>
  <Header value="Extra: listed above but not needed"/>
  <Choices name="extra" toName="query" choice="multiple" value="$extra_options"/>
  <Header value="Missing: needed but not listed (candidates below, or type skill ids)"/>
  <HyperText name="candidates" value="$candidates_html"/>
  <Choices name="missing" toName="query" choice="multiple" value="$missing_options"/>
  <TextArea name="missing_other" toName="query" placeholder="other missing skill ids, one per line"/>
  <TextArea name="comment" toName="query" placeholder="comment (optional)"/>
</View>"""

NATURALNESS_CONFIG = """<View>
  <Header value="$heading"/>
  <Text name="query" value="$query"/>
  <Header value="How natural is this request? 1 = no person would write this, 5 = a real user's message"/>
  <Rating name="naturalness" toName="query" maxRating="5" required="true"/>
  <TextArea name="comment" toName="query" placeholder="comment (optional)"/>
</View>"""

TAXONOMY_CONFIG = """<View>
  <Header value="$heading"/>
  <Header value="Skills the generator judged not to belong together"/>
  <HyperText name="skills" value="$skills_html"/>
  <Header value="The generator's rationale"/>
  <Text name="rationale" value="$rationale"/>
  <Header value="$class_question"/>
  <Choices name="verdict" toName="rationale" choice="single" required="true">
    <Choice value="Correct class" alias="correct"/>
    <Choice value="Incorrect class" alias="incorrect"/>
  </Choices>
  <TextArea name="comment" toName="rationale" placeholder="if incorrect: the right class by name, e.g. audience_mismatch (the taxonomy model learns from it)"/>
</View>"""

CONFIGS = {"skill_set": SKILL_SET_CONFIG, "naturalness": NATURALNESS_CONFIG, "taxonomy": TAXONOMY_CONFIG}


def skill_card(skill_id: str, skill: dict | None, body_chars: int) -> str:
    """One skill as HTML: name, id, description, and the first ``body_chars`` of its body."""
    if skill is None:
        return f"<div><b>{html.escape(skill_id)}</b> <i>(not in the skill library)</i></div>"
    body = skill["body"] or ""
    excerpt = body[:body_chars] + ("…" if len(body) > body_chars else "")
    return (f"<div style='margin:0 0 12px 0'><b>{html.escape(skill['name'])}</b> "
            f"<code>{html.escape(skill_id)}</code><p style='margin:4px 0'>{html.escape(skill['description'])}</p>"
            f"<pre style='white-space:pre-wrap;font-size:12px;background:#f6f6f6;padding:6px;margin:0'>"
            f"{html.escape(excerpt)}</pre></div>")


def heading(task: dict) -> str:
    """Task header: kind, round and, after round 1, who must not review it again."""
    head = f"{task['item_id']} · round {task['round']}"
    if task.get("exclude_reviewers"):
        head += " · only for reviewers who are not: " + ", ".join(task["exclude_reviewers"])
    return head


def task_payload(task: dict, skills: dict[str, dict], body_chars: int = 600) -> dict:
    """The Label Studio task (``{"data": ...}``) for one ``review_tasks`` row; ``skills`` maps id → skill."""
    cards = "".join(skill_card(s, skills.get(s), body_chars) for s in task["skill_ids"])
    data = {"item_id": task["item_id"], "round": task["round"], "kind": task["kind"], "heading": heading(task),
            "skills_html": cards or "<i>none</i>"}
    if task["kind"] == "taxonomy":
        how = (f"the rule matched: \"{task.get('matched_span') or ''}\""
               if (task.get("taxonomy_method") or "rule") == "rule" else f"labelled by the {task['taxonomy_method']}")
        data |= {"rationale": task.get("rationale") or "",
                 "class_question": f"Is '{task.get('taxonomy_label')}' the right rejection class? ({how})"}
    else:
        data["query"] = task["query"]
    if task["kind"] == "skill_set":
        candidates = task.get("candidate_skill_ids") or []
        data |= {"extra_options": [{"value": s} for s in task["skill_ids"]],
                 "missing_options": [{"value": s} for s in candidates],
                 "candidates_html": "".join(skill_card(s, skills.get(s), body_chars) for s in candidates)
                 or "<i>no candidates</i>"}
    return {"data": data}
