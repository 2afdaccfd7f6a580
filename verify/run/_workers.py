"""Worker processes that never outlive the run that started them.

:func:`new_pool` makes the default process pool of :func:`verify.run.run_claims`; each worker
runs :func:`worker_init` first, which

* ignores SIGINT: Ctrl-C on a terminal reaches the whole process group, and the parent decides
  (it stops the workers and keeps what is stored);
* restores the default SIGTERM action (a forked worker inherits the parent's Python handler);
* sets up the numerics as every worker of a run, local or on a Dask cluster, must have them
  (:func:`worker_numerics`: one BLAS thread), so that the numbers do not depend on where an
  instance ran;
* dies with its parent: on Linux the kernel sends SIGKILL when the parent dies
  (``prctl(PR_SET_PDEATHSIG)``), elsewhere a daemon thread polls ``os.getppid()`` every second.
  Without it a worker of a killed run waits for work forever.

:func:`stop_workers` ends a pool at once (an interruption): pending tasks are cancelled and the
running workers terminated; their instances were not stored and a resumed run computes them.

Examples
--------
>>> pool = new_pool(1)
>>> pool.submit(pow, 2, 10).result()
1024
>>> stop_workers(pool)
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

__all__ = ["new_pool", "worker_init", "worker_numerics", "stop_workers"]

_PR_SET_PDEATHSIG = 1
_POLL_SECONDS = 1.0


def new_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool of ``workers`` processes initialised by :func:`worker_init`."""
    return ProcessPoolExecutor(workers, initializer=worker_init)


def worker_init() -> None:
    """Run in each new worker: ignore SIGINT, default SIGTERM, one BLAS thread, die with the
    parent."""
    worker_numerics()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no usable libc: the watch thread alone
            pass
    if os.getppid() != parent:  # the parent died before the watch began
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="verify-parent-watch",
                     daemon=True).start()


def worker_numerics() -> None:
    """One BLAS/OpenMP thread in this process (the instances are small: a threaded BLAS costs
    more than it gains, and its reduction order could depend on the thread count).

    The environment variables reach a BLAS loaded later; an already loaded one is limited with
    ``threadpoolctl`` when it is installed (the ``dask`` extra installs it).
    """
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(1)


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(_POLL_SECONDS)
        if os.getppid() != parent:
            os._exit(1)


def stop_workers(pool: ProcessPoolExecutor, timeout: float = 5.0) -> None:
    """Cancel the pending tasks of ``pool``, terminate its workers and wait for them to end
    (SIGKILL for one still alive after ``timeout`` seconds)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout)
        if process.is_alive():
            process.kill()
            process.join()
