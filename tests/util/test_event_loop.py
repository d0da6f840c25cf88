"""Waking a waiter: at once on its own loop's thread, through the loop from any other thread."""

import asyncio
import threading

import pytest

from evaldag._util.event_loop import engine_loop, on_engine_loop, wake


def test_a_waiter_woken_on_its_own_loop_is_resolved_at_once():
    async def woken() -> tuple[bool, bool]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        wake(loop, future)
        done = future.done()  # no pass of the loop in between
        cancelled = loop.create_future()
        cancelled.cancel()
        wake(loop, cancelled)  # a waiter cancelled meanwhile stays cancelled
        return done, cancelled.cancelled()

    assert on_engine_loop(woken()) == (True, True)


def test_a_waiter_woken_from_another_thread_is_resolved_on_its_loop():
    loop = engine_loop()
    made = asyncio.run_coroutine_threadsafe(_future(), loop).result(5)
    resolved_on: list[threading.Thread] = []
    made.add_done_callback(lambda _: resolved_on.append(threading.current_thread()))
    wake(loop, made)
    asyncio.run_coroutine_threadsafe(asyncio.wait_for(asyncio.shield(made), 5), loop).result(5)
    assert made.done() and resolved_on and resolved_on[0] is not threading.current_thread()


def test_waking_a_waiter_of_a_closed_loop_raises():
    loop = asyncio.new_event_loop()
    future = loop.create_future()
    loop.close()
    with pytest.raises(RuntimeError):
        wake(loop, future)


async def _future() -> asyncio.Future[None]:
    return asyncio.get_running_loop().create_future()
