import pytest

from skill_assets.lib.common.hashing import squash
from skill_assets.lib.generation.query_audit import AuditWindow, audit_queries, leaked_names, normalised_query

FLAGS = ("duplicate_exact", "duplicate_normalised", "name_leakage", "length_out_of_window",
         "language_mismatch", "empty_or_refusal")


def _en(n: int, seed_word: str = "deploy") -> str:
    words = [seed_word, "my", "web", "service", "to", "the", "staging", "cluster", "and", "check", "logs"]
    return " ".join(words[i % len(words)] for i in range(n)) + "."


def _rec(rid, query, direction="en2en", k=1, names=("unrelated-skill",)):
    return {"record_id": rid, "query": query, "direction": direction, "k": k, "skill_names": list(names)}


def _flags(row):
    return {f for f in FLAGS if row[f]}


def test_leaked_names_case_space_hyphen_insensitive():
    names = ["docker-compose-debugging", "pdf_tools", "Git Rebase", "   ", "kubernetes"]
    q = "Help me with Docker Compose Debugging and PDF-Tools; also gitrebase please"
    assert leaked_names(q, names) == ["docker-compose-debugging", "pdf_tools", "Git Rebase"]
    assert leaked_names("Docker compose is failing to debug", names) == []
    assert squash("A - b_C  d") == "abcd"


def test_clean_query_passes():
    rows = audit_queries([_rec("r1", _en(60))])
    assert len(rows) == 1
    row = rows[0]
    assert row["passed"] is True and _flags(row) == set()
    assert row["reasons"] == ""
    assert row["query_length"] == 60 and row["query_language"] == "en"
    assert row["leaked_names"] == []
    assert (row["record_id"], row["direction"], row["k"]) == ("r1", "en2en", 1)


def test_name_leakage_flagged_with_reason():
    q = _en(60) + " Use Docker Compose Debugging for it."
    row = audit_queries([_rec("r1", q, names=["docker-compose-debugging", "other"])])[0]
    assert _flags(row) == {"name_leakage"}
    assert row["leaked_names"] == ["docker-compose-debugging"]
    assert row["reasons"] == "mentions docker-compose-debugging"
    assert row["passed"] is False


def test_duplicates_flagged_only_on_later_occurrences():
    base = _en(60)
    rows = audit_queries([
        _rec("r1", base),
        _rec("r2", base),  # exact copy
        _rec("r3", base.upper().replace(".", "!!")),  # same after normalisation
        _rec("r4", _en(60, "build")),
        _rec("r5", base),
    ])
    assert _flags(rows[0]) == set()
    assert _flags(rows[1]) == {"duplicate_exact"} and "same text as r1" in rows[1]["reasons"]
    assert _flags(rows[2]) == {"duplicate_normalised"} and "same normalised text as r1" in rows[2]["reasons"]
    assert _flags(rows[3]) == set()
    assert _flags(rows[4]) == {"duplicate_exact"} and "r1" in rows[4]["reasons"]
    assert normalised_query("Hello,   WORLD!!") == normalised_query("hello world") == "hello world"


def test_length_window_words_for_english():
    w = AuditWindow(min_length=50, max_length=300)
    rows = audit_queries([_rec("a", _en(49)), _rec("b", _en(50, "b")), _rec("c", _en(300, "c")),
                          _rec("d", _en(301, "d"))], w)
    assert [r["query_length"] for r in rows] == [49, 50, 300, 301]
    assert [r["length_out_of_window"] for r in rows] == [True, False, False, True]
    assert "length 49 outside [50, 300]" in rows[0]["reasons"]


def test_length_window_cjk_characters_for_chinese():
    zh = "请帮我把网站部署到测试集群然后检查日志"  # 19 CJK characters, one "word"
    w = AuditWindow(min_length=10, max_length=25)
    row = audit_queries([_rec("z", zh, direction="en2zh")], w)[0]
    assert row["query_length"] == 19
    assert row["query_language"] == "zh"
    assert _flags(row) == set()
    # Latin words and punctuation do not count toward the Chinese length
    row = audit_queries([_rec("z2", "用 docker 部署，然后 check 日志。", direction="zh2zh")], w)[0]
    assert row["query_length"] == 7
    assert row["length_out_of_window"]


def test_language_mismatch():
    zh = "请帮我把网站部署到测试集群然后检查日志" * 3
    rows = audit_queries([
        _rec("a", _en(60), direction="en2zh"),
        _rec("b", zh, direction="zh2en"),
        _rec("c", zh + "。", direction="zh2zh"),
        _rec("d", "请帮我把数据库备份到云端存储然后验证完整性", direction="zh2zh"),
    ], AuditWindow(min_length=1, max_length=1000))
    assert rows[0]["language_mismatch"] and "query is en, direction wants zh" in rows[0]["reasons"]
    assert rows[1]["language_mismatch"] and rows[1]["query_language"] == "zh"
    assert not rows[2]["language_mismatch"]
    assert _flags(rows[2]) == {"duplicate_normalised"}  # same text as b once punctuation is dropped
    assert rows[3]["passed"] and rows[3]["query_language"] == "zh"


@pytest.mark.parametrize("query", [
    "I can't help with that request. " + _en(55),
    "I cannot do this. " + _en(55),
    "As an AI language model, " + _en(55),
])
def test_refusal_english(query):
    row = audit_queries([_rec("r", query)])[0]
    assert _flags(row) == {"empty_or_refusal"}


def test_refusal_chinese_and_empty():
    w = AuditWindow(min_length=1, max_length=1000)
    rows = audit_queries([
        _rec("a", "抱歉，我无法完成这个请求，请换一个问题试试看吧", direction="zh2zh"),
        _rec("b", "   ", direction="en2en"),
    ], w)
    assert rows[0]["empty_or_refusal"]
    assert rows[1]["empty_or_refusal"] and rows[1]["length_out_of_window"]
    assert not rows[1]["passed"]


def test_reasons_join_in_flag_order():
    q = "I can't. Docker Compose Debugging."
    row = audit_queries([_rec("r", q, direction="en2zh", names=["docker-compose-debugging"])])[0]
    assert _flags(row) == {"name_leakage", "length_out_of_window", "language_mismatch", "empty_or_refusal"}
    assert row["reasons"].split("; ") == [
        "mentions docker-compose-debugging", "length 0 outside [50, 300]",
        "query is en, direction wants zh", "empty or a refusal",
    ]
