"""A Label Studio that answers 401 echoing the key leaves no piece of it in the run storage, logs or output.

The SDK's error (with the echoed ``Authorization`` header) reaches ``run_bridge``'s exception,
which Dagster stores and prints (issue 21, finding 3).
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dagster as dg
import pytest
from review_store import tasks_config

from skill_assets.definitions import defs
from skill_assets.defs.resources import DuckDBStore, default_resources
from skill_assets.lib.review.label_studio_bridge import review_python

KEY = "5f0c2e9a7b3d41e8a6c2f90b1d7e3a4c58b6e2d1"


def leaked(text: str) -> bool:
    return any(KEY[i : i + 6] in text for i in range(len(KEY) - 5))


class EchoingUnauthorized(BaseHTTPRequestHandler):
    """Every request: 401 whose body echoes the Authorization header, whole and as its last 14 characters."""

    def _answer(self) -> None:
        auth = self.headers.get("Authorization") or ""
        body = json.dumps({"detail": f"Invalid token: {auth!r} (…{auth[-14:]})"}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def echoing_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoingUnauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_label_studio_key_echoed_in_a_401_is_stored_nowhere(echoing_server, upstream_store, tmp_path, monkeypatch,
                                                            capfd):
    review_python()  # the review environment must exist: the SDK runs there
    monkeypatch.setenv("LABEL_STUDIO_URL", echoing_server)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", KEY)
    home = tmp_path / "dagster_home"
    home.mkdir()
    with dg.DagsterInstance.local_temp(str(home)) as instance:
        result = dg.materialize(list(defs.assets or []), selection=["review_tasks"], raise_on_error=False,
                                run_config=tasks_config(), instance=instance,
                                resources={**default_resources(), "store": DuckDBStore(database=str(upstream_store))})
        assert not result.success
        events = instance.all_logs(result.run_id)
        storage = json.dumps([str(e) for e in events])
    failure = next(e for e in events if e.dagster_event and e.dagster_event.is_step_failure)
    message = str(failure.dagster_event.step_failure_data.error)
    assert "Label Studio bridge `push` failed" in message and "[REDACTED]" in message and "401" in message
    files = "".join(p.read_bytes().decode(errors="replace") for p in home.rglob("*") if p.is_file())
    captured = capfd.readouterr()
    assert not leaked(storage + files + captured.out + captured.err + message)
