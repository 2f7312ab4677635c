"""Tasks in forked processes: the trials of one search batch trained side by side (:func:`in_processes`)."""

from __future__ import annotations

import multiprocessing
import pickle
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any, cast

import torch

from srdiv.registry import culprit


def in_processes(task: Callable[[int], Any], n: int, workers: int) -> list:
    """``[task(0), ..., task(n - 1)]``, each in a forked process (which reads the parent's data without a
    copy), at most ``workers`` at once, one torch thread each. A task's exception is raised here; a process
    that ends without an answer (killed: out of memory?) is an error naming its task; when this raises
    or is interrupted, the processes still running are stopped."""
    context = multiprocessing.get_context("fork")
    results: list = [None] * n
    todo, running = list(range(n)), dict[Connection, tuple[int, Any]]()
    try:
        while todo or running:
            while todo and len(running) < workers:
                i = todo.pop(0)
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_answer, args=(task, i, send), daemon=True)
                process.start()
                send.close()
                running[receive] = (i, process)
            for receive in cast(list[Connection], wait(list(running))):     # the ones of running that are ready
                i, process = running.pop(receive)
                try:
                    ok, value = pickle.loads(receive.recv_bytes())
                except EOFError:
                    process.join()
                    raise RuntimeError(f"the process of task {i + 1} of {n} ended (exit code {process.exitcode}) "
                                       "without an answer: killed, out of memory?") from None
                process.join()
                if not ok:
                    raise value
                results[i] = value
    finally:
        for _, process in running.values():
            process.terminate()
            process.join()
    return results


def _answer(task: Callable[[int], Any], i: int, send) -> None:
    """The forked process of :func:`in_processes`: ``task(i)`` on one thread, sent back with whether it
    succeeded (an error of a user's module names it: :func:`srdiv.registry.culprit`). Ctrl-C is the parent's to
    answer; SIGTERM (from the parent stopping it) ends it quietly."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    torch.set_num_threads(1)
    try:
        answer = (True, task(i))
    except (Exception, SystemExit) as err:   # a user's component that calls sys.exit is an error, not an answer
        # which user's module raised it (its traceback is not sent back); setattr: exceptions declare no such field
        setattr(err, "culprit", culprit(err))  # noqa: B010
        answer = (False, err)
    try:                # plain pickle: the tensors' bytes, not torch's shared-memory handles to this process
        message = pickle.dumps(answer)
    except Exception as err:      # an answer that cannot be pickled: say what it was
        message = pickle.dumps((False, RuntimeError(f"task {i + 1}: {answer[1]!r} (not sent back: {err})")))
    send.send_bytes(message)
    send.close()
