"""A real Label Studio on 127.0.0.1 for the tests, and reviewers who sign up through its invite link.

The server comes from the review environment (``make review-install``). Under CI it must be
there (the test fails); on a developer machine without it the server tests skip.
"""
from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from skill_assets.lib.common.processes import stop_process_group
from skill_assets.lib.review.label_studio_bridge import DEFAULT_REVIEW_PYTHON, PYTHON_ENV

ADMIN_EMAIL, ADMIN_PASSWORD = "owner@review.test", "owner-pass-1234"


@dataclass
class LabelStudioServer:
    url: str
    admin_token: str
    start_s: float

    def api(self, method: str, path: str, token: str | None = None, **kwargs) -> requests.Response:
        response = requests.request(method, self.url + path, timeout=60,
                                    headers={"Authorization": f"Token {token or self.admin_token}"}, **kwargs)
        response.raise_for_status()
        return response

    def reset(self) -> None:
        """Delete every project: the server is shared by the session, each test starts from none."""
        for project in self.api("GET", "/api/projects", params={"page_size": 1000}).json()["results"]:
            self.api("DELETE", f"/api/projects/{project['id']}/")

    def login(self, email: str = ADMIN_EMAIL, password: str = ADMIN_PASSWORD) -> requests.Session:
        """A browser-like session (cookies) after the login form."""
        session = requests.Session()
        session.get(self.url + "/user/login/", timeout=60)
        session.post(self.url + "/user/login/", data={"email": email, "password": password,
                                                      "csrfmiddlewaretoken": session.cookies["csrftoken"]},
                     headers={"Referer": self.url + "/user/login/"}, timeout=60)
        assert "sessionid" in session.cookies, f"login as {email} failed"
        return session

    def sign_up(self, email: str) -> str:
        """A reviewer joins through the organisation's invite link, as a person would; returns their API token."""
        invite = self.api("GET", "/api/invite").json()["token"]
        session = requests.Session()
        session.get(self.url + "/user/signup/", timeout=60)
        session.post(f"{self.url}/user/signup/?token={invite}",
                     data={"email": email, "password": "review-pass-1234",
                           "csrfmiddlewaretoken": session.cookies["csrftoken"]},
                     headers={"Referer": self.url + "/user/signup/"}, timeout=60)
        return session.get(self.url + "/api/current-user/token", timeout=60).json()["token"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def start_label_studio(data_dir: Path, timeout_s: float = 1800):
    python = Path(os.environ.get(PYTHON_ENV) or DEFAULT_REVIEW_PYTHON)
    binary = python.parent / "label-studio"
    if not binary.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{binary} missing: `make test` installs it (make review-install)")
        pytest.skip("Label Studio is not installed here (make review-install)")
    port, token = _free_port(), secrets.token_hex(20)
    env = os.environ | {"LABEL_STUDIO_BASE_DATA_DIR": str(data_dir), "SECRET_KEY": secrets.token_hex(32),
                        "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true", "LABEL_STUDIO_USERNAME": ADMIN_EMAIL,
                        "LABEL_STUDIO_PASSWORD": ADMIN_PASSWORD, "LABEL_STUDIO_USER_TOKEN": token}
    log = (data_dir / "server.log").open("w")
    started = time.monotonic()
    proc = subprocess.Popen([str(binary), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(port),
                             "--data-dir", str(data_dir), "--enable-legacy-api-token", "--log-level", "WARNING"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                if requests.get(url + "/health", timeout=5).ok:
                    break
            except requests.ConnectionError:
                pass
            if proc.poll() is not None or time.monotonic() - started > timeout_s:
                raise RuntimeError(f"Label Studio did not start: {(data_dir / 'server.log').read_text()[-3000:]}")
            time.sleep(1)
        server = LabelStudioServer(url, token, time.monotonic() - started)
        print(f"Label Studio up at {url} after {server.start_s:.1f} s")
        yield server
    finally:
        stop_process_group(proc, grace_s=30)
        log.close()


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium missing: `make test` installs Debian's chromium")
        pytest.skip("no chromium on PATH (apt-get install chromium)")
    return path
