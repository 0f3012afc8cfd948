"""A small English + Chinese skill pool and requests in both languages, with train/dev/test splits.

Hand-written: each skill has one request in its own language and one in the other, so a router
has to cross languages to answer half of them.
"""
from __future__ import annotations

import json
from pathlib import Path

SKILLS = {
    "devops/docker-compose-networking": (
        "docker-compose-networking",
        "Diagnose and fix networking between Docker Compose services: service DNS names, bridge networks, ports.",
        "# Docker Compose networking\n\nWhen containers in a compose project cannot talk to each other, check that "
        "they share a user-defined network, address peers by service name (not localhost), and that the target "
        "listens on 0.0.0.0. Use `docker compose exec web ping db` and `docker network inspect`.\n"),
    "vcs/git-interactive-rebase": (
        "git-interactive-rebase",
        "Rewrite local git history safely with interactive rebase: squash, reorder and edit commits.",
        "# Interactive rebase\n\nRun `git rebase -i HEAD~5`, mark commits as squash or fixup, resolve conflicts "
        "and continue. Never rewrite history that others have pulled; use `git reflog` to recover.\n"),
    "data/pandas-csv-cleaning": (
        "pandas-csv-cleaning",
        "Load messy CSV files with pandas, fix dtypes, parse dates and drop duplicate rows.",
        "# Cleaning CSV data\n\nUse `pd.read_csv(path, parse_dates=[...], dtype=...)`, then `df.drop_duplicates()` "
        "and `df.fillna`. Check `df.info()` for columns read as object.\n"),
    "db/postgres-index-tuning": (
        "postgres-index-tuning",
        "Speed up slow PostgreSQL queries: read EXPLAIN ANALYZE plans and add the right B-tree or GIN indexes.",
        "# Index tuning\n\nRun `EXPLAIN (ANALYZE, BUFFERS)` on the slow query, look for sequential scans on large "
        "tables, and create composite indexes matching the WHERE and ORDER BY clauses.\n"),
    "docs/pdf-form-filling": (
        "pdf-form-filling",
        "Fill in and flatten PDF forms programmatically, reading field names from AcroForm documents.",
        "# PDF forms\n\nList the AcroForm fields with pypdf, write values into them, then flatten the form so "
        "the entries cannot be edited.\n"),
    "writing/cover-letter": (
        "cover-letter",
        "Write a concise, tailored cover letter for a job application.",
        "# Cover letters\n\nOpen with the role and why you fit, give two concrete achievements that match the "
        "job description, and close with a call to action. Keep it under one page.\n"),
    "zh/wechat-article-layout": (
        "wechat-article-layout",
        "微信公众号文章排版：标题、配图、引用块和代码块的样式统一，导出为可直接粘贴的富文本。",
        "# 公众号排版\n\n把 Markdown 文章转换成公众号编辑器可以直接粘贴的富文本，统一标题层级、段落间距、"
        "图片说明和引用块样式，代码块使用等宽字体并保留高亮。\n"),
    "zh/dingtalk-robot": (
        "dingtalk-robot",
        "通过钉钉群自定义机器人的 webhook 发送文本、Markdown 和卡片消息，支持加签和 @ 指定成员。",
        "# 钉钉机器人\n\n在群设置里添加自定义机器人，复制 webhook 地址和加签密钥。发送消息时计算时间戳签名，"
        "消息类型可以是文本、Markdown 或 ActionCard，需要提醒时在 at 字段里填写手机号。\n"),
    "zh/vat-invoice": (
        "vat-invoice",
        "识别增值税发票的图片或 PDF，提取发票代码、号码、金额、税额和开票日期，生成报销清单。",
        "# 发票识别\n\n对发票图片做 OCR，按字段提取发票代码、发票号码、开票日期、不含税金额、税额和价税合计，"
        "校验金额是否一致，最后汇总成报销用的 Excel 表格。\n"),
    "zh/a-share-quotes": (
        "a-share-quotes",
        "获取 A 股股票的日线行情，计算均线、成交量变化和涨跌幅，画出 K 线图。",
        "# A 股行情\n\n按股票代码下载日线数据（开盘、收盘、最高、最低、成交量），计算 5 日、20 日均线和涨跌幅，"
        "用蜡烛图画出 K 线并标出成交量放大的交易日。\n"),
}

#: (request id, query, ground-truth skill, split); the id's prefix is the direction <skill lang>2<query lang>
REQUESTS = [
    ("en2en-1", "my docker compose containers cannot reach each other by service name", "devops/docker-compose-networking", "train"),
    ("en2zh-1", "我的 docker compose 里的几个容器互相访问不到，服务名也解析不了", "devops/docker-compose-networking", "train"),
    ("en2en-2", "squash my last five commits into one before I open the pull request", "vcs/git-interactive-rebase", "train"),
    ("en2zh-2", "提交 PR 之前想把最近五个 commit 合并成一个，顺便改一下提交说明", "vcs/git-interactive-rebase", "train"),
    ("en2en-3", "this csv has duplicated rows and the date column is read as text", "data/pandas-csv-cleaning", "train"),
    ("en2zh-3", "这个 CSV 文件里有重复的行，日期那一列被读成了字符串，帮我清洗一下", "data/pandas-csv-cleaning", "train"),
    ("en2en-4", "a query on our orders table takes 9 seconds, which index should I add", "db/postgres-index-tuning", "train"),
    ("en2zh-4", "订单表上的一个查询要跑九秒，看看执行计划应该加什么索引", "db/postgres-index-tuning", "dev"),
    ("en2en-5", "fill the fields of this government PDF form and make it non-editable", "docs/pdf-form-filling", "train"),
    ("en2zh-5", "把这个 PDF 表单的各个字段填好，然后设成不能再编辑", "docs/pdf-form-filling", "dev"),
    ("en2en-6", "help me write a one-page letter for a data analyst job application", "writing/cover-letter", "dev"),
    ("en2zh-6", "帮我写一封应聘数据分析师岗位的求职信，一页以内", "writing/cover-letter", "train"),
    ("zh2zh-7", "把这篇 Markdown 文章排版成公众号可以直接粘贴的格式", "zh/wechat-article-layout", "train"),
    ("zh2en-7", "turn my markdown post into rich text I can paste into the WeChat official account editor", "zh/wechat-article-layout", "train"),
    ("zh2zh-8", "构建失败的时候往钉钉群里发一条 Markdown 通知并 @ 负责人", "zh/dingtalk-robot", "train"),
    ("zh2en-8", "post a markdown alert to our DingTalk group through the robot webhook when the build fails", "zh/dingtalk-robot", "dev"),
    ("zh2zh-9", "这一堆增值税发票的照片，帮我把金额和税额提取出来做报销", "zh/vat-invoice", "train"),
    ("zh2en-9", "extract amounts and tax from these photos of VAT invoices for my expense claim", "zh/vat-invoice", "train"),
    ("zh2zh-10", "下载这只 A 股的日线数据，算一下 20 日均线并画 K 线图", "zh/a-share-quotes", "dev"),
    ("zh2en-10", "download daily prices for a Shanghai-listed stock, compute the 20-day moving average and plot candles", "zh/a-share-quotes", "train"),
    ("en2en-t", "THIS TEST REQUEST MUST NEVER BE READ BY TRAINING", "writing/cover-letter", "test"),
]


def write_skill(root: Path, sid: str, name: str, description: str, body: str) -> None:
    """One skill folder ``root/sid`` holding its SKILL.md."""
    folder = root / sid
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {json.dumps(description, ensure_ascii=False)}"
                                     f"\n---\n{body}", encoding="utf-8")


def write_pool(root: Path) -> Path:
    for sid, (name, description, body) in SKILLS.items():
        write_skill(root, sid, name, description, body)
    return root


def write_requests(path: Path) -> Path:
    """The requests in the curated benchmark's JSON-lines format."""
    with path.open("w", encoding="utf-8") as fh:
        for rid, query, sid, split in REQUESTS:
            fh.write(json.dumps({"id": rid, "query": query, "lang": "zh" if rid.split("-")[0].endswith("zh") else "en",
                                 "direction": rid.split("-")[0], "k": 1, "gt": [sid], "gt_groups": [[sid]],
                                 "style": "task_direct", "split": split}, ensure_ascii=False) + "\n")
    return path
