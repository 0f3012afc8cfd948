"""Talk to a Label Studio server through ``label-studio-sdk``, from the review environment.

Label Studio and its SDK pin many packages (Django, an older NumPy), so they live in their own
virtual environment (``.venv-review``, made by ``make review-install``) and never in the core
install. This module is both halves of the crossing:

- ``run_bridge`` (core side) writes a request as JSON, runs this module under the review
  environment's Python and reads the JSON answer;
- ``main`` (review side, standard library + SDK only) pushes projects and tasks, and pulls the
  tasks changed since a watermark as Label Studio's own JSON export, with each annotator's e-mail.

The server comes from the environment only: ``LABEL_STUDIO_URL`` and ``LABEL_STUDIO_API_KEY``
(a legacy token or a personal access token); neither is written to any file or argument, and the
key (any piece of it) is redacted from the SDK's error output before it becomes an exception: a
401 can echo the ``Authorization`` header, and the exception reaches the run storage and logs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from skill_assets.lib.common.redaction import redact

URL_ENV, KEY_ENV, PYTHON_ENV = "LABEL_STUDIO_URL", "LABEL_STUDIO_API_KEY", "SKILL_ASSETS_REVIEW_PYTHON"
REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_REVIEW_PYTHON = REPO_ROOT / ".venv-review" / "bin" / "python"
FILTER_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"  # the only timestamp form Label Studio's task filters accept
EXPORT_BATCH = 200  # task ids per export request (they travel in the URL)


def server_configured() -> bool:
    return bool(os.environ.get(URL_ENV) and os.environ.get(KEY_ENV))


def server_url() -> str:
    return os.environ[URL_ENV].rstrip("/")


def review_python() -> Path:
    path = Path(os.environ.get(PYTHON_ENV) or DEFAULT_REVIEW_PYTHON)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: run `make review-install` (Label Studio's own environment) "
                                f"or point {PYTHON_ENV} at a Python that has label-studio-sdk")
    return path


def run_bridge(command: str, request: dict, timeout_s: float = 600) -> dict:
    """Run ``command`` (push | pull) in the review environment; returns its JSON answer."""
    with tempfile.TemporaryDirectory(prefix="ls-bridge-") as tmp:
        req, resp = Path(tmp) / "request.json", Path(tmp) / "response.json"
        req.write_text(json.dumps(request, ensure_ascii=False, default=str), encoding="utf-8")
        env = os.environ | {"PYTHONPATH": str(REPO_ROOT)}
        proc = subprocess.run([str(review_python()), "-m", "skill_assets.lib.review.label_studio_bridge", command,
                               str(req), str(resp)], env=env, capture_output=True, text=True, timeout=timeout_s)
        if proc.returncode != 0:
            stderr = redact(proc.stderr, os.environ.get(KEY_ENV))[-3000:]  # redact before cutting
            raise RuntimeError(f"Label Studio bridge `{command}` failed:\n{stderr}")
        return json.loads(resp.read_text(encoding="utf-8"))


# ---- review side: standard library and label-studio-sdk only -------------------------------------------------


def _client():
    from label_studio_sdk import LabelStudio

    return LabelStudio(base_url=server_url(), api_key=os.environ[KEY_ENV])


def _projects_by_title(ls) -> dict[str, int]:
    return {p.title: p.id for p in ls.projects.list()}


def push(request: dict) -> dict:
    """Create missing projects and import the tasks whose (item, round) a project does not hold yet.

    ``request["projects"]``: ``[{"title", "label_config", "maximum_annotations", "tasks": [{"data"}]}]``.
    """
    ls = _client()
    known = _projects_by_title(ls)
    out = {}
    for spec in request["projects"]:
        pid = known.get(spec["title"])
        if pid is None:
            pid = ls.projects.create(title=spec["title"], label_config=spec["label_config"],
                                     maximum_annotations=spec["maximum_annotations"], show_skip_button=True,
                                     description="skill-assets label review; created by review_tasks").id
        present = {(t.data.get("item_id"), int(t.data.get("round", 1))) for t in ls.tasks.list(project=pid)}
        new = [t for t in spec["tasks"] if (t["data"]["item_id"], int(t["data"]["round"])) not in present]
        if new:
            ls.projects.import_tasks(id=pid, request=new, return_task_ids=True)
        out[spec["title"]] = {"project_id": pid, "imported": len(new), "present": len(present)}
    return {"projects": out}


def pull(request: dict) -> dict:
    """Tasks of each titled project changed after its watermark, as Label Studio's JSON export.

    ``request["since"]`` maps title → the latest task ``updated_at`` already pulled (or null), so
    a rerun fetches only tasks that changed since. ``completed_by`` becomes ``{"id", "email"}``.
    """
    ls = _client()
    known = _projects_by_title(ls)
    emails = {u.id: u.email for u in ls.users.list()}
    out = {}
    for title, since in request["since"].items():
        pid = known.get(title)
        if pid is None:
            continue
        query = None
        if since:
            stamp = datetime.fromisoformat(since).astimezone(UTC).strftime(FILTER_TIME)
            query = json.dumps({"filters": {"conjunction": "and", "items": [
                {"filter": "filter:tasks:updated_at", "operator": "greater", "type": "Datetime", "value": stamp}]}})
        if query is None:  # first pull: every annotated task
            exported = json.loads(b"".join(ls.projects.exports.download_sync(pid, export_type="JSON")))
        else:
            ids = [t.id for t in ls.tasks.list(project=pid, query=query)]
            exported = [task for i in range(0, len(ids), EXPORT_BATCH) for task in json.loads(b"".join(
                ls.projects.exports.download_sync(pid, export_type="JSON", ids=ids[i:i + EXPORT_BATCH])))]
        for task in exported:
            for ann in task.get("annotations") or []:
                uid = ann.get("completed_by")
                ann["completed_by"] = {"id": uid, "email": emails.get(uid)}
        out[title] = {"project_id": pid, "tasks": exported}
    return {"projects": out}


def main(argv: list[str] | None = None) -> None:
    command, request_path, response_path = (argv or sys.argv[1:])[:3]
    request = json.loads(Path(request_path).read_text(encoding="utf-8"))
    answer = {"push": push, "pull": pull}[command](request)
    Path(response_path).write_text(json.dumps(answer, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
