"""What a reviewer sees: a task page of the skill-set project in headless Chromium shows the request and the skills.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``), so the
test logs in with a real session cookie and needs no browser-automation package. The screenshot
lands in ``$SKILL_ASSETS_SCREENSHOT_DIR`` (default: the test's tmp dir) to be looked at.
"""
import base64
import fcntl
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from label_studio_server import chromium
from review_store import QUERIES, SKILLS, TEXT, materialize, tasks_config

from skill_assets.lib.common.processes import stop_process_group
from skill_assets.lib.review.items import project_title


class DevTools:
    """The Chrome DevTools protocol over fds 3 (commands) and 4 (answers), NUL-delimited JSON."""

    def __init__(self, binary: str, profile: str):
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()

        def wire():  # the child's fds 3 and 4 (in pass_fds, so close_fds keeps them), via copies above both
            high_r, high_w = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10), fcntl.fcntl(out_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "--window-size=1400,1800"],
            preexec_fn=wire, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        os.close(cmd_r)
        os.close(out_w)
        self._next, self._buffer = 0, b""

    def send(self, method: str, session: str | None = None, **params) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params} | ({"sessionId": session} if session else {})
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._out_r, 1 << 20)
                assert chunk, "chromium closed the DevTools pipe"
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next:
                assert "error" not in reply, reply
                return reply["result"]

    def close(self) -> None:
        """Ask the browser to quit, then wait for its whole process tree: only then may the profile be removed."""
        try:
            self.send("Browser.close")
        except (AssertionError, OSError):
            pass  # already gone: the group is stopped below either way
        stop_process_group(self.proc)
        os.close(self._cmd_w)
        os.close(self._out_r)


def test_task_page_shows_the_request_and_the_skills(label_studio, upstream_store, monkeypatch, tmp_path):
    label_studio.reset()
    monkeypatch.setenv("LABEL_STUDIO_URL", label_studio.url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", label_studio.admin_token)
    assert materialize(upstream_store, ["review_tasks"], tasks_config()).success
    project = next(p for p in label_studio.api("GET", "/api/projects", params={"page_size": 100}).json()["results"]
                   if p["title"] == project_title("skill_set", 1))
    task = next(t for t in label_studio.api("GET", "/api/tasks", params={"project": project["id"]}).json()["tasks"]
                if t["data"]["item_id"] == "skill_set:q1")
    cookie = label_studio.login().cookies["sessionid"]

    out = Path(os.environ.get("SKILL_ASSETS_SCREENSHOT_DIR") or tmp_path) / "label_studio_task.png"
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        tools = DevTools(chromium(), profile)
        try:
            target = tools.send("Target.createTarget", url="about:blank")["targetId"]
            session = tools.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            tools.send("Network.enable", session)
            tools.send("Network.setCookie", session, name="sessionid", value=cookie, domain="127.0.0.1", path="/")
            tools.send("Emulation.setDeviceMetricsOverride", session, width=1400, height=1800, deviceScaleFactor=1,
                       mobile=False)
            tools.send("Page.navigate", session, url=f"{label_studio.url}/projects/{project['id']}/data?task={task['id']}")
            wanted = [TEXT["q1"][:40]] + [SKILLS[s][0] for s in QUERIES["q1"]] + ["Are these the skills"]
            deadline, text = time.monotonic() + 900, ""  # a hang guard only
            while time.monotonic() < deadline and not all(w in text for w in wanted):
                time.sleep(1)
                text = tools.send("Runtime.evaluate", session, expression="document.body.innerText",
                                  returnByValue=True)["result"].get("value", "")
            time.sleep(1)  # let the labelling panel finish painting
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(base64.b64decode(tools.send("Page.captureScreenshot", session, format="png")["data"]))
        finally:
            tools.close()
    missing = [w for w in wanted if w not in text]
    assert not missing, f"the task page does not show {missing}; screenshot: {out}"
    assert out.stat().st_size > 20_000
