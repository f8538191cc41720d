"""The GIL is released while a kernel runs: another thread runs Python code meanwhile."""

import sys
import threading

import numpy as np

import relayout


def test_another_thread_runs_while_a_kernel_runs():
    a = np.zeros((2048, 4096), np.float32)
    relayout.transpose(a)  # compiled and cached: the next call only runs the kernel
    started, finished = threading.Event(), []

    def work():
        started.set()
        relayout.transpose(a)
        finished.append(True)

    interval = sys.getswitchinterval()
    # The interpreter never takes the GIL from a thread on its own now, so the main thread gets
    # it back from `started.wait()` only when the worker lets go of it: inside the kernel, or
    # when the worker ends.
    sys.setswitchinterval(1000)
    try:
        worker = threading.Thread(target=work)
        worker.start()
        started.wait()
        during = not finished
        worker.join()
    finally:
        sys.setswitchinterval(interval)
    assert during, "the main thread ran only after the kernel: the GIL was held"
