"""Answers before background indexing: a re-index gives way to the answers in flight.

``serve --watch`` re-indexes a changed pool in the process that answers. Most of a re-index over 10,000 skills is
pure-Python steps over the whole pool (reading the kept parse outcomes, each skill's lexical values, the BM25 layout,
the dense rows to keep), and the interpreter's lock is shared evenly between threads that want it: an answer made beside
them took its Python steps at half speed and waited for the lock after each encoder step that released it (measured in
one process: p95 2.71× the quiet p95 on a 10,000-skill pool). The interpreter has no thread priorities, so the re-index
yields of its own accord: its loops run through ``gently``, which, between steps of ``STEP_ITEMS`` items, waits while an
answer is in flight (``answering``), for at most ``WAIT_SECONDS``, so a stream of answers slows a re-index down but
never stops it. A thread that is answering never waits (part of an answer may run such a loop), and with no answer in
flight a step costs one attribute read.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

#: items a background loop handles between two looks at the answers in flight (about a millisecond of work in the
#: re-index's loops over a pool)
STEP_ITEMS = 256
#: the longest one step waits for the answers in flight: a stream of back-to-back answers leaves a re-index about a
#: step every ``WAIT_SECONDS`` (a 10,000-skill re-index's loops are some 400 steps). Measured in one process over a
#: 10,000-skill pool, answers back to back with no gap at all: 5 ms kept their p95 at 1.17× the quiet p95 but made a
#: re-index last 3.9 s; 2 ms gives 1.36× and 1.95 s (without giving way: 2.71× and 0.5 s)
WAIT_SECONDS = 0.002

T = TypeVar("T")


class Answers:
    """How many answers are in flight, and which threads are answering."""

    def __init__(self) -> None:
        self._in_flight = 0
        self._idle = threading.Condition()
        self._local = threading.local()

    @contextmanager
    def answering(self) -> Iterator[None]:
        """Mark an answer in flight, and the calling thread as answering, until the block ends. Blocks may nest, and
        interleave on one thread (an event loop serving several calls): each only adds one while it lasts."""
        self._local.depth = getattr(self._local, "depth", 0) + 1
        with self._idle:
            self._in_flight += 1
        try:
            yield
        finally:
            self._local.depth -= 1
            with self._idle:
                self._in_flight -= 1
                if not self._in_flight:
                    self._idle.notify_all()

    def give_way(self) -> bool:
        """Wait, at most ``WAIT_SECONDS``, until no answer is in flight; never in a thread that is answering. Returns
        whether an answer was in flight when it looked."""
        if not self._in_flight or getattr(self._local, "depth", 0):
            return False
        with self._idle:
            self._idle.wait_for(lambda: not self._in_flight, timeout=WAIT_SECONDS)
        return True

    def gently(self, items: Iterable[T]) -> Iterator[T]:
        """``items``, giving way to the answers in flight before every ``STEP_ITEMS`` of them."""
        for i, item in enumerate(items):
            if not i % STEP_ITEMS:
                self.give_way()
            yield item


#: the process's answers: ``Router.route`` marks them, the index's loops give way to them
answers = Answers()
answering, gently = answers.answering, answers.gently
