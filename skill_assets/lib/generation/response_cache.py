"""Where paid answers are kept: the append-only journal and the DuckDB response cache.

A journal line is written the moment an answer arrives, so a killed run loses only requests in
flight; ``ResponseCache.recover`` commits what journals hold before a run sends anything.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import fields
from pathlib import Path

from skill_assets.lib.generation.llm_client import LLMResponse, Usage

# --- journal --------------------------------------------------------------------------------------

_USAGE_KEYS = tuple(f.name for f in fields(Usage))


def _journal_line(resp: LLMResponse) -> dict:
    """An answer as one flat JSON object, in the keys and order journal lines have always had (the usage's among
    the answer's own), so that journals a killed run left behind read back after an upgrade."""
    u = resp.usage
    return {"key": resp.key, "model": resp.model, "status": resp.status, "text": resp.text,
            "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "latency_s": u.latency_s,
            "retries": u.retries, "error": resp.error, "template_version": resp.template_version,
            "cost_usd": u.cost_usd}


def _from_journal_line(line: object) -> LLMResponse:
    """``_journal_line``'s inverse; TypeError for anything that is not one (a torn or foreign line)."""
    if not isinstance(line, dict):
        raise TypeError("a journal line is a JSON object")
    usage = Usage(**{k: line.pop(k) for k in _USAGE_KEYS if k in line})
    return LLMResponse(**line, usage=usage)


class ResponseJournal:
    """Append-only JSON-lines file of answers not yet committed to the cache.

    One ``write`` + ``flush`` per answer puts it in the OS page cache, which outlives a killed
    process; a torn last line (killed mid-write) is skipped when read back.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fh = None

    def append(self, resp: LLMResponse) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")
        self._fh.write(json.dumps(_journal_line(resp), ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def discard(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    @staticmethod
    def read(path: Path) -> list[LLMResponse]:
        out = []
        for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                out.append(_from_journal_line(json.loads(line)))
            except (json.JSONDecodeError, TypeError):
                continue
        return [r for r in out if r.status == "ok"]


# --- the response cache in DuckDB -----------------------------------------------------------------

CACHE_TABLE = "llm_response_cache"
CACHE_DDL = f"""CREATE TABLE IF NOT EXISTS {CACHE_TABLE} (
    request_key VARCHAR PRIMARY KEY, model VARCHAR, template_version VARCHAR, response VARCHAR,
    prompt_tokens BIGINT, completion_tokens BIGINT, latency_s DOUBLE, retries INTEGER,
    created_at TIMESTAMPTZ DEFAULT current_timestamp)"""


class ResponseCache:
    """``llm_response_cache`` in the DuckDB store: request key → answer, tokens, latency, retries.

    Only answered requests are stored (a failure must be retried next run); an answer the parser
    cannot read is still stored, since it was paid for and re-asking would pay again.
    """

    def __init__(self, db_path: str | Path) -> None:
        self.db_path = Path(db_path)

    def put(self, batch: list[LLMResponse]) -> None:
        """Commit answered responses in one transaction (a registered frame: row-by-row inserts are slow)."""
        import polars as pl

        from skill_assets.lib.common.store import connect

        ok = list({r.key: r for r in batch if r.status == "ok"}.values())
        if not ok:
            return
        df = pl.DataFrame({
            "request_key": [r.key for r in ok], "model": [r.model for r in ok],
            "template_version": [r.template_version for r in ok], "response": [r.text for r in ok],
            "prompt_tokens": [r.usage.prompt_tokens for r in ok],
            "completion_tokens": [r.usage.completion_tokens for r in ok],
            "latency_s": [float(r.usage.latency_s) for r in ok], "retries": [r.usage.retries for r in ok]},
            schema={"request_key": pl.Utf8, "model": pl.Utf8, "template_version": pl.Utf8, "response": pl.Utf8,
                    "prompt_tokens": pl.Int64, "completion_tokens": pl.Int64, "latency_s": pl.Float64,
                    "retries": pl.Int32})
        cols = ", ".join(df.columns)
        with connect(self.db_path) as con:
            con.execute(CACHE_DDL)
            con.register("_answers", df.to_arrow())
            con.execute("BEGIN")
            con.execute(f"INSERT OR REPLACE INTO {CACHE_TABLE} ({cols}) SELECT {cols} FROM _answers")
            con.execute("COMMIT")
            con.unregister("_answers")

    def lookup(self, keys: Iterable[str]) -> dict[str, LLMResponse]:
        from skill_assets.lib.common.store import connect

        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}
        with connect(self.db_path) as con:
            con.execute(CACHE_DDL)
            got = con.execute(
                f"SELECT request_key, model, template_version, response, prompt_tokens, completion_tokens, "
                f"latency_s, retries FROM {CACHE_TABLE} WHERE request_key IN (SELECT unnest(?))", [keys]).fetchall()
        return {k: LLMResponse(k, m, "ok", text=t or "", template_version=tv or "",
                               usage=Usage(int(pi or 0), int(po or 0), float(lat or 0.0), int(rt or 0)))
                for k, m, tv, t, pi, po, lat, rt in got}

    def recover(self, journal_dir: Path, own: Path | None = None) -> int:
        """Commit answers left in journals by killed runs; delete ``own`` once committed."""
        journal_dir = Path(journal_dir)
        files = sorted(journal_dir.glob("*.jsonl")) if journal_dir.is_dir() else []
        answers = [r for f in files for r in ResponseJournal.read(f)]
        if answers:
            self.put(answers)
        if own is not None:
            Path(own).unlink(missing_ok=True)
        return len(answers)


