"""Generation throughput, warm-cache rerun and kill-and-resume, against the fault server and llama.cpp.

    .venv/bin/python bench/generation.py [--skip-llama] [--latency 0.2] [--warm-records 10000]

1. records/s at concurrency 1, 2, 4, 8 against the fault server in pass-through mode with a fixed
   latency (network-bound, like a hosted API), then the same against the bundled SmolLM2 behind
   llama.cpp (CPU-bound; a few records, reported as they are);
2. warm-cache rerun: the response cache of a temp DuckDB pre-filled for N records, then a full
   run over them: requests made (target 0) and seconds (target ≤ 10 for 10,000);
3. kill-and-resume: a subprocess run killed with SIGKILL mid-way, then a rerun; counts the
   answers the killed run had received that were requested again (target 0) and the requests
   that were in flight at the kill (served by the server, never received: at most concurrency).

The last line is one JSON object with every figure.
"""
from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

import openai  # noqa: E402

from skill_assets.lib.generation.fault_server import FaultServer, decision_text, prompt_hash, synthetic_items  # noqa: E402
from skill_assets.lib.generation.llm_client import (  # noqa: E402
    GenerationLimits,
    LLMResponse,
    SamplingParams,
    Usage,
    request_key,
)
from skill_assets.lib.generation.records import generate  # noqa: E402
from skill_assets.lib.generation.response_cache import ResponseCache, ResponseJournal  # noqa: E402

PARAMS = SamplingParams()


def _client(url: str, timeout: float = 30.0) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url, api_key="not-needed", timeout=timeout, max_retries=2)


def throughput(url: str, concurrency: int, n: int, params: SamplingParams = PARAMS, model: str = "fault-model",
               timeout: float = 30.0) -> tuple[float, int]:
    """records/s of one cold run of ``n`` records (cache writes included); and how many failed."""
    with tempfile.TemporaryDirectory() as d:
        items = synthetic_items(n, model=model, prefix=f"c{concurrency}-")
        started = time.perf_counter()
        out = generate(items, _client(url, timeout), params, ResponseCache(Path(d) / "b.duckdb"),
                       GenerationLimits(concurrency=concurrency, batch_size=8),
                       journal_path=Path(d) / "llm_journal" / "b.jsonl")
        elapsed = time.perf_counter() - started
    return n / elapsed, sum(r["decision"] == "FAILED" for r in out.rows)


def warm_rerun(url: str, fs: FaultServer, n: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "w.duckdb"
        items = synthetic_items(n, prefix="w")
        cache = ResponseCache(db)
        t0 = time.perf_counter()
        cache.put([LLMResponse(request_key(it.template_version, it.model, PARAMS, it.messages), it.model, "ok",
                               text=decision_text(prompt_hash(it.messages)), usage=Usage(150, 60, latency_s=0.2),
                               template_version=it.template_version) for it in items])
        fill_s = time.perf_counter() - t0
        fs.reset_counts()
        started = time.perf_counter()
        out = generate(items, _client(url), PARAMS, cache, GenerationLimits(concurrency=8),
                       journal_path=Path(d) / "llm_journal" / "w.jsonl")
        elapsed = time.perf_counter() - started
    assert len(out.rows) == n and all(r["cached"] for r in out.rows)
    return {"warm_rerun_records": n, "warm_rerun_requests": fs.total_requests, "warm_rerun_s": round(elapsed, 3),
            "warm_cache_fill_s": round(fill_s, 3)}


def kill_and_resume(n: int = 400, concurrency: int = 8, kill_after: int = 150) -> dict:
    with tempfile.TemporaryDirectory() as d, FaultServer(latency_s=0.05) as fs:
        db = Path(d) / "k.duckdb"
        items = synthetic_items(n)
        key_of = {prompt_hash(it.messages): request_key(it.template_version, it.model, PARAMS, it.messages)
                  for it in items}
        proc = subprocess.Popen([sys.executable, "-m", "skill_assets.lib.generation.fault_server", "generate", "--db", str(db),
                                 "--url", fs.url, "--n", str(n), "--concurrency", str(concurrency)], cwd=REPO,
                                stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while sum(fs.completed.values()) < kill_after and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        served = {key_of[h] for h, c in fs.completed.items() if c}
        import duckdb

        received: set[str] = set()
        if db.exists():
            with duckdb.connect(str(db), read_only=True) as con:
                if con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = "
                               "'llm_response_cache'").fetchone()[0]:
                    received = {k for (k,) in con.execute("SELECT request_key FROM llm_response_cache").fetchall()}
        in_journal = {r.key for f in (Path(d) / "llm_journal").glob("*.jsonl") for r in ResponseJournal.read(f)}
        fs.reset_counts()
        out = generate(items, _client(fs.url), PARAMS, ResponseCache(db), GenerationLimits(concurrency=concurrency),
                       journal_path=Path(d) / "llm_journal" / "synthetic.jsonl")
        rerequested = {key_of[h] for h in fs.requests}
        complete = all(r["decision"] in ("WRITE", "SKIP") for r in out.rows)
    return {"resume_records": n, "resume_served_before_kill": len(served),
            "resume_committed_before_kill": len(received), "resume_journaled_only": len(in_journal - received),
            "resume_rerun_requests": len(rerequested),
            "resume_duplicate_requests": len(rerequested & (received | in_journal)),
            "resume_inflight_rerequested": len(rerequested & served), "resume_complete": complete}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2, help="fault server latency per request (s)")
    ap.add_argument("--warm-records", type=int, default=10_000)
    ap.add_argument("--skip-llama", action="store_true")
    ap.add_argument("--llama-records", type=int, default=2, help="records per concurrency level on llama.cpp")
    args = ap.parse_args()
    result: dict = {"fault_latency_s": args.latency}
    with FaultServer(latency_s=args.latency) as fs:
        for c in (1, 2, 4, 8):
            n = max(16, 12 * c)
            rps, failed = throughput(fs.url, c, n)
            result[f"records_per_s_c{c}"] = round(rps, 2)
            print(f"fault server, {args.latency * 1000:.0f} ms latency, concurrency {c}: {n} records, "
                  f"{rps:.2f} records/s, {failed} failed", flush=True)
        result["concurrency_speedup_8v1"] = round(result["records_per_s_c8"] / result["records_per_s_c1"], 2)
        result.update(warm_rerun(fs.url, fs, args.warm_records))
        print(f"warm rerun: {result['warm_rerun_records']} records, {result['warm_rerun_requests']} requests, "
              f"{result['warm_rerun_s']} s (cache fill {result['warm_cache_fill_s']} s)", flush=True)
    result.update(kill_and_resume())
    print(f"kill and resume: {json.dumps({k: v for k, v in result.items() if k.startswith('resume_')})}", flush=True)
    if not args.skip_llama:
        from skill_assets.lib.generation.local_llm_server import bundled_gguf, serve_gguf
        from skill_assets.lib.generation.prompts import RESPONSE_SCHEMA

        params = SamplingParams(temperature=0.0, max_tokens=48, json_schema=RESPONSE_SCHEMA)
        with tempfile.TemporaryDirectory() as d, serve_gguf(bundled_gguf(), n_ctx=2048,
                                                            log_path=Path(d) / "llm.log") as url:
            for c in (1, 2, 4, 8):
                n = max(args.llama_records, 1)
                rps, failed = throughput(url, c, n, params, model="smollm2-135m-instruct", timeout=300)
                result[f"llama_records_per_s_c{c}"] = round(rps, 3)
                print(f"llama.cpp SmolLM2-135M, concurrency {c}: {n} records, {rps:.3f} records/s, {failed} failed",
                      flush=True)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
