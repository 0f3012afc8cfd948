"""Neighbourhoods stage: cached embeddings, the K sweep, super-domains, pools and sampling."""

import io

import dagster as dg
import numpy as np
import polars as pl

from skill_assets.defs.resources import DUCKDB_WRITER_TAG, DuckDBStore, ModelSettings
from skill_assets.lib.clustering import (candidate_ks, class_keywords, fit_kmeans, merge_into_super_domains,
                                         score_sweep)
from skill_assets.lib.embedding_cache import encode_in_chunks, model_fingerprint, text_hash
from skill_assets.lib.pools import split_pools
from skill_assets.lib.sampling import SamplingPlan, sample_combinations
from skill_assets.lib.skill_text import skill_document

GROUP = "neighbourhoods"


def load_embedding_matrix(store: DuckDBStore) -> tuple[list[str], np.ndarray]:
    df = store.query("SELECT skill_id, embedding FROM skill_embeddings ORDER BY skill_id")
    return df["skill_id"].to_list(), np.asarray(df["embedding"].to_list(), dtype=np.float32)


@dg.asset(group_name=GROUP, kinds={"duckdb", "sentence_transformers"}, deps=["skills"], op_tags=DUCKDB_WRITER_TAG)
def skill_embeddings(context: dg.AssetExecutionContext, store: DuckDBStore, models: ModelSettings):
    """Embedding of every skill document, reusing cached vectors for unchanged (model, text) pairs."""
    skills = store.query("SELECT skill_id, name, description, body FROM skills ORDER BY skill_id").to_dicts()
    fingerprint = model_fingerprint(models.embedder)
    texts = [skill_document(s["name"], s["description"], s["body"]) for s in skills]
    hashes = [text_hash(t) for t in texts]
    cache: dict[str, list[float]] = {}
    if store.exists("skill_embeddings"):
        cached = store.query("SELECT DISTINCT ON (text_hash) text_hash, embedding FROM skill_embeddings "
                             "WHERE model_fingerprint = ?", [fingerprint])
        cache = dict(zip(cached["text_hash"].to_list(), cached["embedding"].to_list()))
    missing = [i for i, h in enumerate(hashes) if h not in cache]
    context.log.info(f"{len(skills)} skills: {len(skills) - len(missing)} cached, {len(missing)} to embed")
    if missing:
        model = models.load_embedder()
        for idx, emb in encode_in_chunks([texts[i] for i in missing],
                                         lambda batch: model.encode(batch, batch_size=models.encode_batch_size,
                                                                    normalize_embeddings=True)):
            for j, vec in zip(idx, emb):
                cache[hashes[missing[j]]] = vec.astype(np.float32).tolist()
            context.log.info(f"embedded {len(idx)} skills")
    rows = [{"skill_id": s["skill_id"], "model_id": models.embedder, "model_fingerprint": fingerprint,
             "text_hash": h, "embedding": cache[h]} for s, h in zip(skills, hashes)]
    df = store.write("skill_embeddings", rows)
    return dg.MaterializeResult(metadata={"dagster/row_count": df, "embedded_now": len(missing),
                                          "cache_hits": len(skills) - len(missing), "model": models.embedder})


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
    super_domains: int = 8
    seed: int = 0


@dg.asset(group_name=GROUP, kinds={"duckdb", "scikitlearn"}, deps=["cluster_sweep", "skill_embeddings"],
          op_tags=DUCKDB_WRITER_TAG)
def skill_clusters(context: dg.AssetExecutionContext, config: ClusterSettings, store: DuckDBStore):
    """Sub-cluster at the selected K and super-domain of every skill, with c-TF-IDF keywords."""
    ids, x = load_embedding_matrix(store)
    k = int(store.query("SELECT k FROM cluster_sweep WHERE selected")["k"][0])
    fit = fit_kmeans(x, k, config.seed)
    # merging only means something when several sub-clusters share a super-domain
    n_super = min(config.super_domains, max(2, k // 2))
    super_of_sub = merge_into_super_domains(fit.centroids, n_super)
    text = dict(store.query("SELECT skill_id, name || ' ' || description AS t FROM skills").iter_rows())
    subs = [int(label) for label in fit.labels]
    supers = [int(super_of_sub[s]) for s in subs]
    sub_kw = class_keywords({c: [text[i] for i, s in zip(ids, subs) if s == c] for c in set(subs)})
    sup_kw = class_keywords({c: [text[i] for i, s in zip(ids, supers) if s == c] for c in set(supers)})
    rows = [{"skill_id": i, "sub_cluster": s, "super_domain": d, "sub_cluster_keywords": " / ".join(sub_kw[s]),
             "super_domain_keywords": " / ".join(sup_kw[d])} for i, s, d in zip(ids, subs, supers)]
    df = store.write("skill_clusters", rows)
    domains = "\n".join(f"- **{d}**: {' / '.join(kw)}" for d, kw in sorted(sup_kw.items()))
    return dg.MaterializeResult(metadata={"dagster/row_count": df, "k": k, "super_domains": n_super,
                                          "super_domain_keywords": dg.MetadataValue.md(domains)})


class PoolSettings(dg.Config):
    test_fraction: float = 0.2
    seed: int = 0


@dg.asset(group_name=GROUP, kinds={"duckdb"}, deps=["skill_clusters", "skills"], op_tags=DUCKDB_WRITER_TAG)
def skill_pools(config: PoolSettings, store: DuckDBStore):
    """Train/test pool of every skill, stratified by super-domain and language, before any sampling."""
    skills = store.query("SELECT s.skill_id, s.language, c.sub_cluster, c.super_domain FROM skills s "
                         "JOIN skill_clusters c USING (skill_id) ORDER BY s.skill_id").to_dicts()
    pools = split_pools(skills, config.test_fraction, config.seed)
    rows = [{**s, "pool": pools[s["skill_id"]]} for s in skills]
    df = store.write("skill_pools", rows)
    counts = pl.DataFrame(rows).group_by("pool", "language").len().sort("pool", "language").to_dicts()
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
    skills = store.query(f"SELECT p.* FROM skill_pools p JOIN skills s USING (skill_id) {where}").to_dicts()
    plan = SamplingPlan(
        counts={"train": {int(k): v for k, v in config.train_counts.items()},
                "test": {int(k): v for k, v in config.test_counts.items()}},
        directions=tuple(config.directions), seed=config.seed)
    combos, shortfalls = sample_combinations(skills, plan)
    for s in shortfalls:
        context.log.warning(f"only {s['drawn']}/{s['wanted']} combinations for {s['pool']} {s['direction']} k={s['k']}")
    df = store.write("skill_combinations", combos)
    return dg.MaterializeResult(metadata={"dagster/row_count": df, "shortfalls": len(shortfalls),
                                          "shortfall_detail": dg.MetadataValue.json(shortfalls)})
