"""Neighbourhoods stage: cached embeddings, the K sweep, super-domains, pools and sampling."""

import io
from dataclasses import asdict

import dagster as dg
import numpy as np
import polars as pl
from pydantic import Field

from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, ModelSettings
from skill_assets.lib.models.embedding_cache import (
    model_fingerprint,
    progress_reporter,
    refresh_embeddings,
)
from skill_assets.lib.models.encoder_backends import EncoderChoice, backend_key, choose_encoder
from skill_assets.lib.core.skill_text import ENCODER_CAPS, TextCaps, skill_document
from skill_assets.lib.neighbourhoods.clustering import (
    Clustering,
    candidate_ks,
    class_keywords,
    fit_hdbscan,
    fit_kmeans,
    merge_into_super_domains,
    score_sweep,
)
from skill_assets.lib.neighbourhoods.clustered import clustered_skills
from skill_assets.lib.neighbourhoods.sampling import SamplingPlan, sample_combinations
from skill_assets.lib.neighbourhoods.skill_split import split_pools

GROUP = "neighbourhoods"


def load_embedding_matrix(store: DuckDBStore) -> tuple[list[str], np.ndarray]:
    df = store.query("SELECT skill_id, embedding FROM skill_embeddings ORDER BY skill_id")
    return df["skill_id"].to_list(), np.asarray(df["embedding"].to_list(), dtype=np.float32)


class EmbeddingSettings(dg.Config):
    """How skill documents are embedded; the model itself is ``ModelSettings.embedder`` (name or path)."""

    backend: str = Field("auto", description="auto (bf16 autocast if it passes its quality and speed gate on "
                         "this CPU, else int8 ONNX if it passes its quality gate, else the model as is) | "
                         "torch-bf16 | onnx-int8 | torch (fp32, exact)")
    description_chars: int = ENCODER_CAPS.description_chars
    body_chars: int = ENCODER_CAPS.body_chars
    chunk_size: int = Field(256, description="texts embedded and written to the table per step (bounds memory)")


@dg.asset(group_name=GROUP, kinds={"duckdb", "sentence_transformers"}, deps=["skills"], op_tags=DUCKDB_WRITER_TAG)
def skill_embeddings(context: dg.AssetExecutionContext, config: EmbeddingSettings, store: DuckDBStore,
                     models: ModelSettings):
    """Embedding of every skill document, reusing cached vectors for unchanged (model, backend, text)."""
    caps = TextCaps(config.description_chars, config.body_chars)
    skills = store.query("SELECT skill_id, name, substr(description, 1, ?) AS d, substr(body, 1, ?) AS b "
                         "FROM skills ORDER BY skill_id", [caps.description_chars, caps.body_chars])
    texts = [skill_document(n, d, b, caps) for n, d, b in zip(skills["name"], skills["d"], skills["b"])]
    fingerprint = f"{model_fingerprint(models.embedder)}/{backend_key(config.backend)}"
    chosen: list[EncoderChoice] = []

    def load_encode(missing: list[str]):
        context.log.info(f"{len(missing)} of {len(texts)} skills not cached: loading {models.embedder}")
        model = models.load_embedder()
        choice = choose_encoder(model, config.backend, store.artifacts_dir / "models" / "onnx", fingerprint,
                                missing, models.encode_batch_size)
        context.log.info(f"encoding with {choice.backend}: {choice.reason}")
        chosen.append(choice)
        return choice.encode

    stats = refresh_embeddings(store.path, skills["skill_id"].to_list(), texts, models.embedder, fingerprint,
                               load_encode, config.chunk_size, progress_reporter(context.log.info))
    context.log.info(f"{stats['skills']} skills: {stats['cache_hits']} cached, {stats['embedded_now']} embedded")
    backend = {"backend": chosen[0].backend, "backend_reason": chosen[0].reason} if chosen else {}
    return dg.MaterializeResult(metadata={"dagster/row_count": stats["skills"], "embedded_now": stats["embedded_now"],
                                          "cache_hits": stats["cache_hits"], "model": models.embedder, **backend})


class SweepSettings(dg.Config):
    ks: list[int] = [10, 20, 30, 40]
    seed: int = 0


def sweep_plot(rows: list[dict]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ks = [r["k"] for r in rows]
    for key, label in (("inertia_score", "inertia (inverted)"), ("intra_score", "intra-cluster cosine"),
                       ("separation_score", "centroid separation"), ("score", "mean score")):
        ax.plot(ks, [r[key] for r in rows], marker="o", label=label, linestyle="--" if key == "score" else "-")
    ax.set_xlabel("K (sub-clusters)")
    ax.set_ylabel("normalised score (higher is better)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


@dg.asset(group_name=GROUP, kinds={"duckdb", "scikitlearn"}, deps=["skill_embeddings"], op_tags=DUCKDB_WRITER_TAG)
def cluster_sweep(context: dg.AssetExecutionContext, config: SweepSettings, store: DuckDBStore):
    """KMeans quality for each candidate K; the documented rule marks one ``selected``."""
    _, x = load_embedding_matrix(store)
    ks = candidate_ks(config.ks, len(x))
    if ks != sorted(config.ks):
        context.log.info(f"{len(x)} skills cannot support K={config.ks}; sweeping K={ks}")
    rows = score_sweep([fit_kmeans(x, k, config.seed) for k in ks])
    df = store.write("cluster_sweep", rows)
    png = sweep_plot(rows)
    plot_path = store.artifacts_dir / "reports" / "cluster_sweep.png"
    plot_path.parent.mkdir(parents=True, exist_ok=True)
    plot_path.write_bytes(png)
    import base64

    chosen = next(r["k"] for r in rows if r["selected"])
    return dg.MaterializeResult(metadata={
        "dagster/row_count": df, "selected_k": chosen, "candidate_ks": str(ks), "plot_path": dg.MetadataValue.path(str(plot_path)),
        "plot": dg.MetadataValue.md(f"![K sweep](data:image/png;base64,{base64.b64encode(png).decode()})"),
    })


class ClusterSettings(dg.Config):
    clusterer: str = Field("kmeans", description="kmeans (KMeans at the sweep's K, R3-Skill's method) | hdbscan "
                           "(density-based, picks its own number of clusters; noise joins the nearest centroid)")
    super_domains: int = 8
    hdbscan_min_cluster_size: int = 10
    hdbscan_min_samples: int | None = None
    seed: int = 0


@dg.asset(group_name=GROUP, kinds={"duckdb", "scikitlearn"}, deps=["cluster_sweep", "skill_embeddings"],
          op_tags=DUCKDB_WRITER_TAG)
def skill_clusters(context: dg.AssetExecutionContext, config: ClusterSettings, store: DuckDBStore):
    """Sub-cluster and super-domain of every skill, with c-TF-IDF keywords; HDBSCAN noise is flagged."""
    ids, x = load_embedding_matrix(store)
    if config.clusterer == "hdbscan":
        fit = fit_hdbscan(x, config.hdbscan_min_cluster_size, config.hdbscan_min_samples)
    elif config.clusterer == "kmeans":
        k = int(store.query("SELECT k FROM cluster_sweep WHERE selected")["k"][0])
        point = fit_kmeans(x, k, config.seed)
        fit = Clustering(point.labels, point.centroids, np.zeros(len(ids), dtype=bool))
    else:
        raise ValueError(f"unknown clusterer {config.clusterer!r}: kmeans | hdbscan")
    k = len(fit.centroids)
    # merging only means something when several sub-clusters share a super-domain
    n_super = min(config.super_domains, max(2, k // 2))
    super_of_sub = merge_into_super_domains(fit.centroids, n_super)
    text = dict(store.query("SELECT skill_id, name || ' ' || description AS t FROM skills").iter_rows())
    subs = [int(label) for label in fit.labels]
    supers = [int(super_of_sub[s]) for s in subs]
    sub_kw = class_keywords({c: [text[i] for i, s in zip(ids, subs) if s == c] for c in set(subs)})
    sup_kw = class_keywords({c: [text[i] for i, s in zip(ids, supers) if s == c] for c in set(supers)})
    rows = [{"skill_id": i, "sub_cluster": s, "super_domain": d, "sub_cluster_keywords": " / ".join(sub_kw[s]),
             "super_domain_keywords": " / ".join(sup_kw[d]), "is_noise": bool(n)}
            for i, s, d, n in zip(ids, subs, supers, fit.is_noise)]
    df = store.write("skill_clusters", rows)
    domains = "\n".join(f"- **{d}**: {' / '.join(kw)}" for d, kw in sorted(sup_kw.items()))
    return dg.MaterializeResult(metadata={"dagster/row_count": df, "clusterer": config.clusterer, "k": k,
                                          "super_domains": n_super, "noise_skills": int(fit.is_noise.sum()),
                                          "super_domain_keywords": dg.MetadataValue.md(domains)})


class PoolSettings(dg.Config):
    test_fraction: float = 0.2
    seed: int = 0


@dg.asset(group_name=GROUP, kinds={"duckdb"}, deps=["skill_clusters", "skills"], op_tags=DUCKDB_WRITER_TAG)
def skill_pools(config: PoolSettings, store: DuckDBStore):
    """Train/test pool of every skill, stratified by super-domain and language, before any sampling."""
    rows = store.query("SELECT s.skill_id, s.language, c.sub_cluster, c.super_domain FROM skills s "
                       "JOIN skill_clusters c USING (skill_id) ORDER BY s.skill_id")
    skills = clustered_skills(rows.iter_rows(named=True))
    pools = split_pools(skills, config.test_fraction, config.seed)
    pooled = [{**asdict(s), "pool": pools[s.skill_id]} for s in skills]
    df = store.write("skill_pools", pooled)
    counts = pl.DataFrame(pooled).group_by("pool", "language").len().sort("pool", "language").to_dicts()
    return dg.MaterializeResult(metadata={"dagster/row_count": df,
                                          **{f"{c['pool']}/{c['language']}": c["len"] for c in counts}})


class SamplingSettings(dg.Config):
    train_counts: dict[str, int] = {"1": 4, "2": 3, "3": 2}
    test_counts: dict[str, int] = {"1": 2, "2": 2, "3": 1}
    directions: list[str] = ["en2en", "en2zh", "zh2en", "zh2zh"]
    include_file_operation_skills: bool = False
    seed: int = 0


@dg.asset(group_name=GROUP, kinds={"duckdb"}, deps=["skill_pools"], op_tags=DUCKDB_WRITER_TAG)
def skill_combinations(context: dg.AssetExecutionContext, config: SamplingSettings, store: DuckDBStore):
    """Sampled 1–3-skill sets per (pool, direction, k), each inside one pool and one neighbourhood."""
    where = "" if config.include_file_operation_skills else "WHERE s.file_operation_rule IS NULL"
    pooled = store.query(f"SELECT p.* FROM skill_pools p JOIN skills s USING (skill_id) {where}")
    plan = SamplingPlan(
        counts={"train": {int(k): v for k, v in config.train_counts.items()},
                "test": {int(k): v for k, v in config.test_counts.items()}},
        directions=tuple(config.directions), seed=config.seed)
    combos, shortfalls = sample_combinations(clustered_skills(pooled.iter_rows(named=True)),
                                             dict(zip(pooled["skill_id"], pooled["pool"])), plan)
    for s in shortfalls:
        context.log.warning(f"only {s['drawn']}/{s['wanted']} combinations for {s['pool']} {s['direction']} k={s['k']}")
    df = store.write("skill_combinations", combos)
    return dg.MaterializeResult(metadata={"dagster/row_count": df, "shortfalls": len(shortfalls),
                                          "shortfall_detail": dg.MetadataValue.json(shortfalls)})
