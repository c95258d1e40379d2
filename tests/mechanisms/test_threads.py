"""The shared two-thread pool (mechanisms/_threads.py): results in the order of the calls, errors raised again,
and a forked child that does not hang on its parent's pool."""

import os
import signal
import threading
import time

import pytest

from dpledger.mechanisms._threads import run_in_parallel


def test_results_come_back_in_the_order_of_the_calls_and_on_two_threads():
    names = []
    barrier = threading.Barrier(2, timeout=10)

    def call(i):
        names.append(threading.current_thread().name)
        barrier.wait()  # both calls must be running at once, or this times out
        return i * i

    assert run_in_parallel([lambda i=i: call(i) for i in range(2)]) == [0, 1]
    assert len(set(names)) == 2
    assert run_in_parallel([lambda: 7]) == [7] and run_in_parallel([]) == []


def test_an_error_in_one_call_is_raised_after_all_have_finished():
    done = []

    def slow():
        done.append(True)
        return 1

    def broken():
        raise ValueError("broken call")

    with pytest.raises(ValueError, match="broken call"):
        run_in_parallel([broken, slow])
    assert done == [True]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_makes_its_own_pool():
    run_in_parallel([lambda: 1, lambda: 2])  # the parent's pool exists
    pid = os.fork()
    if pid == 0:  # the child: its inherited pool has no threads, so work submitted there would never run
        code = 0 if run_in_parallel([lambda: 1, lambda: 2]) == [1, 2] else 1
        os._exit(code)
    deadline = time.monotonic() + 60.0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung on its parent's pool")
        time.sleep(0.01)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
