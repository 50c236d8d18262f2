"""kipopt._shared: the lock a forked child gets afresh, and the setting overlapping blocks share."""

from __future__ import annotations

import os
import threading

import pytest

from kipopt._shared import ForkSafeLock, SharedSetting


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_a_child_forked_while_another_thread_holds_the_lock_can_take_it():
    lock, held, done = ForkSafeLock(), threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            held.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(30)
    pid = os.fork()
    if pid == 0:  # the child: the holder does not exist here
        taken = lock._lock.acquire(timeout=5)
        os._exit(0 if taken else 1)
    _, status = os.waitpid(pid, 0)
    done.set()
    thread.join(30)
    assert os.waitstatus_to_exitcode(status) == 0


def test_overlapping_blocks_make_the_setting_once_and_undo_it_once():
    log = []
    setting = SharedSetting(lambda: log.append("make") or len(log), lambda saved: log.append(("undo", saved)))
    outer = setting()
    outer.__enter__()
    with setting():
        with setting():
            pass
    assert log == ["make"]
    outer.__exit__(None, None, None)
    with setting():
        pass
    assert log == ["make", ("undo", 1), "make", ("undo", 3)]
