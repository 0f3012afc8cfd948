
from skill_assets.lib.generation.query_audit import audit_queries
from skill_assets.lib.splits.benchmark_queries import (
    AUDIT_FLAGS,
    MAX_SKIP_PARTNERS,
    build_benchmark_queries,
    skip_partners_by_neighbourhood,
)


def _audit(**raised):
    row = {f: False for f in AUDIT_FLAGS}
    row.update(raised)
    row["passed"] = not any(row[f] for f in AUDIT_FLAGS)
    return row

HOODS = {
    # sub-cluster c1 and c2 in super-domain D; c3 in super-domain E
    **{s: {"sub_cluster": "c1", "super_domain": "D"} for s in ["a", "b", "c", "d"]},
    **{s: {"sub_cluster": "c2", "super_domain": "D"} for s in ["e", "f", "g"]},
    **{s: {"sub_cluster": "c3", "super_domain": "E"} for s in ["x", "y", "z"]},
}


def _write(rid, pool, k, hood, ids, query="q"):
    return {"record_id": rid, "pool": pool, "k": k, "neighbourhood": hood, "skill_ids": ids, "query": query,
            "direction": "en2en", "style": "scene", "model": "m"}


SKIPS = [
    {"pool": "train", "k": 2, "neighbourhood": "sub_cluster:c1", "skill_ids": ["a", "c"]},
    {"pool": "train", "k": 2, "neighbourhood": "sub_cluster:c1", "skill_ids": ["b", "d"]},
    {"pool": "train", "k": 3, "neighbourhood": "super_domain:D", "skill_ids": ["e", "f", "a"]},
    {"pool": "train", "k": 1, "neighbourhood": "any", "skill_ids": ["z"]},  # k=1 SKIPs never give partners
    {"pool": "test", "k": 2, "neighbourhood": "sub_cluster:c1", "skill_ids": ["c", "d"]},
    {"pool": "train", "k": 2, "neighbourhood": "sub_cluster:c3", "skill_ids": ["x", "y"]},
]


def test_skip_partners_by_neighbourhood():
    got = skip_partners_by_neighbourhood(SKIPS)
    assert got == {
        ("train", "sub_cluster:c1"): ["a", "b", "c", "d"],
        ("train", "super_domain:D"): ["a", "e", "f"],
        ("test", "sub_cluster:c1"): ["c", "d"],
        ("train", "sub_cluster:c3"): ["x", "y"],
    }


def test_excluded_rows_keep_reasons_and_passed_rows_take_their_pool():
    writes = [
        _write("w1", "train", 2, "sub_cluster:c1", ["a", "b"]),
        _write("w2", "test", 2, "sub_cluster:c1", ["a", "b"]),
        _write("w3", "train", 1, "any", ["g"]),
        _write("w4", "test", 1, "any", ["x"]),
        _write("w5", "test", 1, "any", ["y"]),
    ]
    audits = {
        "w1": _audit(),
        "w2": _audit(),
        "w3": _audit(name_leakage=True, length_out_of_window=True),
        "w5": _audit(duplicate_exact=True),
    }
    rows = build_benchmark_queries(writes, audits, SKIPS, HOODS)
    by_id = {r["query_id"]: r for r in rows}
    assert [r["query_id"] for r in rows] == ["w1", "w2", "w3", "w4", "w5"]
    assert by_id["w1"]["split"] == "train" and by_id["w1"]["exclusion_reason"] == ""
    assert by_id["w2"]["split"] == "test"
    assert by_id["w3"]["split"] == "excluded"
    assert by_id["w3"]["exclusion_reason"] == "name_leakage, length_out_of_window"
    assert by_id["w4"]["split"] == "excluded" and by_id["w4"]["exclusion_reason"] == "not_audited"
    assert by_id["w5"]["split"] == "excluded" and by_id["w5"]["exclusion_reason"] == "duplicate_exact"
    assert by_id["w1"]["generator_model"] == "m" and by_id["w1"]["style"] == "scene"
    assert by_id["w1"]["skill_ids"] == ["a", "b"]


def test_exclude_flags_select_which_audit_flags_exclude():
    writes = [_write("w1", "train", 1, "any", ["a"]), _write("w2", "train", 1, "any", ["b"])]
    audits = {"w1": _audit(length_out_of_window=True), "w2": _audit(name_leakage=True)}
    rows = {r["query_id"]: r for r in build_benchmark_queries(writes, audits, [], HOODS,
                                                               exclude_flags=("name_leakage",))}
    assert rows["w1"]["split"] == "train" and rows["w1"]["exclusion_reason"] == ""
    assert rows["w2"]["split"] == "excluded" and rows["w2"]["exclusion_reason"] == "name_leakage"
    rows = build_benchmark_queries(writes, audits, [], HOODS, exclude_flags=())
    assert [r["split"] for r in rows] == ["train", "train"]


def test_unaudited_rows_excluded_whatever_the_exclude_flags():
    writes = [_write("w1", "test", 1, "any", ["c"])]
    rows = build_benchmark_queries(writes, {}, [], HOODS, exclude_flags=())
    assert rows[0]["split"] == "excluded" and rows[0]["exclusion_reason"] == "not_audited"


def test_real_audit_rows_drive_the_split():
    good = " ".join(["deploy my web service to the staging cluster and check its logs"] * 5)
    records = [
        {"record_id": "w1", "query": good, "direction": "en2en", "k": 1, "skill_names": ["helm"]},
        {"record_id": "w2", "query": good, "direction": "en2en", "k": 1, "skill_names": ["helm"]},
        {"record_id": "w3", "query": "Use Git-Rebase now", "direction": "en2en", "k": 1, "skill_names": ["git rebase"]},
    ]
    audits = {a["record_id"]: a for a in audit_queries(records)}
    writes = [_write(r["record_id"], "test", 1, "any", ["a"], r["query"]) for r in records]
    rows = {r["query_id"]: r for r in build_benchmark_queries(writes, audits, [], HOODS)}
    assert rows["w1"]["split"] == "test"
    assert rows["w2"]["split"] == "excluded" and rows["w2"]["exclusion_reason"] == "duplicate_exact"
    assert rows["w3"]["exclusion_reason"] == "name_leakage, length_out_of_window"


def test_skip_partners_same_pool_and_neighbourhood_without_own_skills():
    writes = [
        _write("w1", "train", 2, "sub_cluster:c1", ["a", "b"]),
        _write("w2", "test", 2, "sub_cluster:c1", ["a", "b"]),
        _write("w3", "train", 1, "any", ["g"]),
        _write("w4", "train", 1, "any", ["x"]),
        _write("w5", "test", 1, "any", ["e"]),
    ]
    audits = {w["record_id"]: _audit() for w in writes}
    rows = {r["query_id"]: r for r in build_benchmark_queries(writes, audits, SKIPS, HOODS)}
    # train c1 SKIPs give a,b,c,d; train D SKIPs give a,e,f; own skills a,b removed
    assert sorted(rows["w1"]["skip_partners"]) == ["c", "d", "e", "f"]
    # test pool only: c, d from the test SKIP; the train-pool SKIPs never leak in
    assert sorted(rows["w2"]["skip_partners"]) == ["c", "d"]
    # k=1 in sub-cluster c2 / super-domain D: partners from the D SKIP only
    assert sorted(rows["w3"]["skip_partners"]) == ["a", "e", "f"]
    # k=1 'z' SKIP is not a partner; x removed as own skill
    assert rows["w4"]["skip_partners"] == ["y"]
    # no test-pool SKIP in c2 or D
    assert rows["w5"]["skip_partners"] == []


def test_partners_capped_and_deterministic():
    skips = [{"pool": "train", "k": 2, "neighbourhood": "sub_cluster:c1", "skill_ids": [f"p{i}", f"p{i + 1}"]}
             for i in range(0, 20, 2)]
    writes = [_write("w1", "train", 2, "sub_cluster:c1", ["a", "b"])]
    audits = {"w1": _audit()}
    one = build_benchmark_queries(writes, audits, skips, HOODS, seed=0)[0]["skip_partners"]
    two = build_benchmark_queries(writes, audits, skips, HOODS, seed=0)[0]["skip_partners"]
    assert one == two
    assert len(one) == MAX_SKIP_PARTNERS == 4
    assert set(one) <= {f"p{i}" for i in range(20)}
    others = {tuple(build_benchmark_queries(writes, audits, skips, HOODS, seed=s)[0]["skip_partners"]) for s in range(1, 6)}
    assert len(others | {tuple(one)}) > 1  # the seed changes which partners are kept


def test_dev_fraction_moves_only_passed_train_rows():
    writes = [_write(f"t{i}", "train", 1, "any", ["a"]) for i in range(40)]
    writes += [_write("s0", "test", 1, "any", ["a"]), _write("x0", "train", 1, "any", ["a"])]
    audits = {w["record_id"]: _audit(language_mismatch=w["record_id"] == "x0") for w in writes}
    rows = {r["query_id"]: r["split"] for r in build_benchmark_queries(writes, audits, [], HOODS, dev_fraction=0.5, seed=3)}
    n_dev = sum(v == "dev" for v in rows.values())
    assert 5 <= n_dev <= 35
    assert set(rows[f"t{i}"] for i in range(40)) == {"train", "dev"}
    assert rows["s0"] == "test" and rows["x0"] == "excluded"
    again = {r["query_id"]: r["split"] for r in build_benchmark_queries(writes, audits, [], HOODS, dev_fraction=0.5, seed=3)}
    assert again == rows
    none = build_benchmark_queries(writes, audits, [], HOODS)
    assert not any(r["split"] == "dev" for r in none)
