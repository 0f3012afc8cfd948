"""A long request splits into the parts that state its needs, in English and Chinese; a short one stays whole."""
from __future__ import annotations

import pytest

from skill_assets.lib.retrieval.task_parts import need_parts, task_parts

TICKET = """Ticket OPS-42: the nightly export job has failed three nights in a row.

Background: the reporting team reads a CSV that our nightly job writes to the shared drive every morning at six.

What to do:
1. Find out why the export job has been failing since Tuesday and fix the scheduler entry that runs it.
2. Clean the exported CSV: parse the date columns, drop duplicated rows and fix the column types.
3. When the file is ready, post a short summary to the team chat channel with the row count.

Constraints:
- Do not change the database schema or touch any production table.
- Keep the file name the reporting team already uses."""

BULLETS = """We are moving the marketing site to a new host this week and need three things done.

- Set up the container build so the site image is small and starts in under two seconds.
- Write the deployment manifests for the cluster, with health checks and resource limits.
* Move the DNS records over without downtime, keeping the mail records as they are."""

PLAIN = ("Our support inbox receives about four hundred customer emails every day and the two people reading it "
         "cannot keep up anymore. Sort each incoming message into billing, bug report or feature request and draft "
         "a polite first answer for the billing ones. Every Friday, turn the week's bug reports into a short summary "
         "table with counts per product area and send it to the engineering lead. The drafts must never promise a "
         "refund, and anything mentioning a lawyer goes to the manager untouched.")

ZH_NUMBERED = """背景：我们是一家做跨境电商的小公司，客服每天要处理几百封英文邮件，最近退货纠纷越来越多。
请帮我完成下面几件事：
1. 把上个月所有退货邮件按原因分类，统计每一类的数量，并找出最常被投诉的三个商品。
2. 根据分类结果写一份中英双语的标准回复模板，语气礼貌，不要承诺全额退款。
3. 把统计结果做成一张柱状图，插入到周报的演示文稿里，周五前发给运营负责人。
交付物：分类表格、回复模板、更新后的周报。
约束：不能把客户的真实邮箱和姓名写进任何对外文件。"""

ZH_ORDINALS = """【数据工单】门店销售分析
任务：一、把三家门店过去一年的销售流水合并成一张表，统一日期格式，去掉重复记录；二、按月份和品类做透视，算出同比和环比增长率；三、把结果写成一页给老板看的中文简报，结论放在最前面。
（1）简报里所有的金额和百分比都保留一位小数，并注明统计口径；（2）图表不超过三张，每张都要有标题和单位说明。"""


def _has(parts: list[str], *words: str) -> int:
    """How many parts hold every one of ``words``."""
    return sum(all(w in p for w in words) for p in parts)


def test_numbered_steps_are_parts_and_headings_join_their_first_item():
    parts = task_parts(TICKET)
    assert _has(parts, "scheduler entry") == 1 and _has(parts, "duplicated rows") == 1 and _has(parts, "team chat") == 1
    assert any(p.startswith("What to do: 1.") for p in parts)  # the heading travels with its first step
    assert any(p.startswith("Constraints: - Do not change") for p in parts)
    assert len(parts) == 7


def test_bullet_items_are_parts():
    parts = task_parts(BULLETS)
    assert len(parts) == 4 and parts[1].startswith("- Set up the container") and parts[3].startswith("* Move the DNS")


def test_a_paragraph_without_layout_is_cut_at_its_sentences():
    parts = task_parts(PLAIN)
    assert len(parts) >= 3 and _has(parts, "billing, bug report") == 1 and _has(parts, "Every Friday") == 1
    assert " ".join(parts).split() == PLAIN.split()  # nothing is lost or reordered


def test_chinese_numbered_lines_and_labels_are_parts():
    parts = task_parts(ZH_NUMBERED)
    assert len(parts) == 6
    assert parts[1].startswith("请帮我完成下面几件事： 1.")  # the heading line joins the first step
    assert parts[2].startswith("2.") and parts[3].startswith("3.") and parts[4].startswith("交付物")


def test_chinese_ordinals_and_bracketed_numbers_inside_a_line_start_parts():
    parts = task_parts(ZH_ORDINALS)
    assert _has(parts, "一、把三家门店") == 1 and any(p.startswith("二、按月份") for p in parts)
    assert any(p.startswith("三、把结果") for p in parts)
    assert any(p.startswith("（1）") for p in parts) and any(p.startswith("（2）") for p in parts)


def test_chinese_sentences_are_cut_at_full_stops_when_a_part_is_long():
    text = "".join(f"第{i}段说明：这一段讲的是客服工作流程里的第{i}个环节，需要仔细核对每一条记录并写下处理意见。"
                   for i in range(1, 9))
    parts = task_parts(text)
    assert len(parts) > 1 and all(p.endswith("。") for p in parts) and "".join(parts) == text


@pytest.mark.parametrize("request_text", [
    "my docker compose containers cannot reach each other by service name",
    "My compose services cannot reach each other. How do I fix it?",
    "订单表上的一个查询要跑九秒，看看执行计划应该加什么索引",
    "帮我写一封求职信。一页以内。",
    "  a request with spaces around it  ",
])
def test_a_short_request_is_one_part_the_text_itself(request_text):
    assert task_parts(request_text) == [request_text]


def test_setup_parts_are_left_out_but_never_every_part():
    parts = task_parts(TICKET)
    needs = need_parts(parts)
    assert not any(p.startswith(("Background", "Constraints")) for p in needs)
    assert any(p.startswith("What to do") for p in needs) and len(needs) == len(parts) - 2
    zh = need_parts(task_parts(ZH_NUMBERED))
    assert not any(p.startswith(("背景", "交付物", "约束")) for p in zh) and len(zh) == 3
    only_setup = ["Background: we run a shop.", "Constraints: no downtime."]
    assert need_parts(only_setup) == only_setup
