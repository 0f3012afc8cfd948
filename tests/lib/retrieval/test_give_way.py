"""``give_way``: background loops wait for the answers in flight, never in an answering thread, never for long.

The waits are observed by their outcome (whether a call waited, whether a waiting thread was let go when the answer
ended, with ``WAIT_SECONDS`` far beyond the test's hang guard), never by how long they took.
"""
from __future__ import annotations

import threading
import time

import anyio

from skill_assets.lib.retrieval import give_way
from skill_assets.lib.retrieval.give_way import Answers

HANG_GUARD_S = 60.0


def waiting(answers: Answers) -> None:
    """Return once a thread waits on ``answers`` (its condition's waiters; a hang guard, not a timing)."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not answers._idle._waiters:
        assert time.monotonic() < deadline, "no thread came to wait"
        time.sleep(0.01)


def test_gently_yields_every_item_in_order():
    answers = Answers()
    assert list(answers.gently(iter(range(1000)))) == list(range(1000))


def test_no_answer_in_flight_means_no_wait():
    assert Answers().give_way() is False


def test_an_answering_thread_never_waits_even_nested():
    answers = Answers()
    with answers.answering(), answers.answering():
        assert answers.give_way() is False
    assert answers._in_flight == 0


def test_answers_interleaved_on_one_event_loop_are_in_flight_until_the_last_ends():
    """Two calls served by one event loop: the first to end must not mark the other over."""
    answers = Answers()
    first_in, second_in, first_out = anyio.Event(), anyio.Event(), anyio.Event()
    seen: list[int] = []

    async def first() -> None:
        with answers.answering():
            first_in.set()
            await second_in.wait()
        first_out.set()

    async def second() -> None:
        await first_in.wait()
        with answers.answering():
            second_in.set()
            await first_out.wait()
            seen.append(answers._in_flight)

    async def both() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(first)
            tasks.start_soon(second)

    anyio.run(both)
    assert seen == [1] and answers._in_flight == 0


def test_a_background_step_waits_for_the_answer_and_is_let_go_when_it_ends(monkeypatch):
    monkeypatch.setattr(give_way, "WAIT_SECONDS", 10 * HANG_GUARD_S)  # only the answer's end can let it go
    answers = Answers()
    outcome: list[bool] = []
    with answers.answering():
        worker = threading.Thread(target=lambda: outcome.append(answers.give_way()))
        worker.start()
        waiting(answers)
        assert not outcome  # still waiting: the answer is in flight
    worker.join(HANG_GUARD_S)
    assert not worker.is_alive() and outcome == [True]
