"""Running instances on a Dask distributed cluster (the optional extra ``pip install '.[dask]'``).

:func:`connect` opens a :class:`ClusterPool`, a :class:`concurrent.futures.Executor` over
``distributed.Client(address)``; :func:`verify.run.run_claims` and
:func:`verify.run.check_conjecture` take it as their ``executor`` exactly like the local process
pool, so the records are written by this process, as they arrive, to the same store.

* Every task goes through :func:`on_worker`: once per worker process it applies
  :func:`~verify.run._workers.worker_numerics` (one BLAS thread, as in the local pool), and it
  runs one instance at a time per process (a lock), because the working precisions of mpmath
  and FLINT are process-wide: a worker started with several threads computes the same numbers,
  only not faster (start workers with ``--nthreads 1``).
* A worker that dies mid-instance: the scheduler gives the task to another worker (up to
  ``distributed.scheduler.allowed-failures`` times); then the future fails with
  ``KilledWorker`` and the runner records the instance as *lost*, recomputed on ``--resume``.
  ``retries`` re-runs a task that raised (the tasks of the runner do not raise: an exception
  on an instance is an inconclusive record).
* Each result is fetched as soon as it is ready and released on the cluster, so a worker that
  dies later costs only the instances it was running (``distributed``'s own
  ``Client.get_executor()`` keeps every future alive: the scheduler would recompute finished
  instances held by a dead worker).
* The local pool's other worker settings do not apply: a Dask worker is not in this process's
  group (Ctrl-C here cancels what is queued for it, :meth:`ClusterPool.shutdown`) and outlives
  the client by design. Shutting down closes the client; the cluster keeps running.

Examples
--------
>>> connect("tcp://127.0.0.1:1", timeout=0.5)       # doctest: +SKIP
Traceback (most recent call last):
...
verify.errors.InvalidArgument: --scheduler=tcp://127.0.0.1:1: no Dask scheduler answered ...
"""

from __future__ import annotations

import re
import socket
import threading
from concurrent.futures import Executor, Future

from verify.errors import InvalidArgument
from verify.run._workers import worker_numerics

__all__ = ["ClusterPool", "connect", "on_worker", "DEFAULT_RETRIES"]

DEFAULT_RETRIES = 1
#: Seconds :func:`connect` waits for the scheduler, then for a worker.
CONNECT_SECONDS = 30.0
_TASK_LOCK = threading.Lock()
_READY: list[bool] = []


def on_worker(fn, /, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` on a Dask worker as the local pool would run it: numerics
    set up once per process (:func:`~verify.run._workers.worker_numerics`), one task at a time.

    Not run here (it would set this process to one BLAS thread):

    >>> on_worker(pow, 2, 10)          # doctest: +SKIP
    1024
    """
    with _TASK_LOCK:
        if not _READY:
            worker_numerics()
            _READY.append(True)
        return fn(*args, **kwargs)


class ClusterPool(Executor):
    """An executor on a Dask cluster; ``workers`` is the number of worker threads it had when
    connected (how many instances to keep in flight).

    Each task's result is fetched as soon as it is ready and then released on the cluster, so
    a worker that dies later holds nothing this run still needs: only the instances it was
    running are computed again.
    """

    def __init__(self, client, retries: int = DEFAULT_RETRIES) -> None:
        self.client, self.retries = client, retries
        self.address = client.scheduler.address
        self.workers = max(1, sum(client.nthreads().values()))
        self._pending: dict[Future, object] = {}
        self._lock = threading.Lock()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        task = self.client.submit(on_worker, fn, *args, pure=False, retries=self.retries,
                                  **kwargs)
        out: Future = Future()
        with self._lock:
            self._pending[out] = task
        out.add_done_callback(self._cancelled)
        task.add_done_callback(lambda done: self._deliver(done, out))
        return out

    def _deliver(self, done, out: Future) -> None:
        """Hand the outcome of the Dask future ``done`` to ``out``, then release ``done``."""
        with self._lock:
            self._pending.pop(out, None)
        try:
            if out.cancelled():
                return
            if done.status == "finished":
                out.set_result(done.result())
            elif done.status == "cancelled":
                if out.cancel():
                    out.set_running_or_notify_cancel()  # wakes concurrent.futures.wait
            else:
                out.set_exception(done.exception())
        except BaseException as exc:  # noqa: BLE001 - e.g. the result could not be fetched
            if not out.done():
                out.set_exception(exc)
        finally:
            done.release()

    def _cancelled(self, out: Future) -> None:
        if out.cancelled():
            with self._lock:
                task = self._pending.pop(out, None)
            if task is not None:
                task.cancel()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Cancel the pending tasks when ``cancel_futures`` (or not ``wait``), else wait for
        them; then close the client (the cluster itself keeps running)."""
        with self._lock:
            pending = dict(self._pending)
        try:
            if cancel_futures or not wait:
                for out in pending:
                    if out.cancel():
                        out.set_running_or_notify_cancel()
                self.client.cancel(list(pending.values()))
            else:
                for out in pending:
                    out.exception()
        finally:
            self.client.close()


def connect(address: str, *, timeout: float | None = None, retries: int = DEFAULT_RETRIES,
            flag: str = "--scheduler") -> ClusterPool:
    """Connect to the Dask scheduler at ``address`` and wait (up to ``timeout`` seconds,
    default :data:`CONNECT_SECONDS`) for a worker.

    Raises
    ------
    InvalidArgument
        Dask is not installed, no scheduler answers, no worker joins, or the workers run
        other versions of ``verify`` or of its numerical libraries (their numbers could
        differ: :data:`NUMERIC_PACKAGES`).
    """
    timeout = CONNECT_SECONDS if timeout is None else timeout
    _check_address(address, flag, timeout)
    try:
        import distributed
    except ImportError:
        raise InvalidArgument(f"{flag} needs Dask: pip install '.[dask]' in the source tree "
                              "(or pip install distributed threadpoolctl).") from None
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise InvalidArgument(f"{flag}={address}: no Dask scheduler answered within "
                              f"{timeout:g} s ({type(exc).__name__}: {exc}); start one with "
                              "`dask scheduler` and workers with `dask worker ADDRESS`.") from None
    try:
        client.wait_for_workers(1, timeout=timeout)
        versions = client.run(_worker_version)
    except (OSError, TimeoutError) as exc:
        client.close()
        raise InvalidArgument(f"{flag}={address}: no worker joined within {timeout:g} s "
                              f"({type(exc).__name__}); start one with `dask worker "
                              f"{address} --nthreads 1`.") from None
    except Exception as exc:  # noqa: BLE001 - e.g. a worker that cannot import verify
        client.close()
        raise InvalidArgument(f"{flag}={address}: the workers cannot run verify ("
                              f"{type(exc).__name__}: {exc}); install it where they run.") \
            from None
    here = _worker_version()
    other = {w: {k: v for k, v in found.items() if here.get(k) != v}
             for w, found in versions.items() if found != here}
    if other:
        client.close()
        raise InvalidArgument(f"{flag}={address}: workers run other versions ({other}; here: "
                              f"{here}); their numbers could differ, install the same ones.")
    return ClusterPool(client, retries)


_ADDRESS = re.compile(r"^(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9a-fA-F:.]+\]|[^\s/:\[\]]+)"
                      r":(?P<port>\d{1,5})$")
_SCHEMES = ("tcp", "tls", "inproc")
_PROBE_SECONDS = 5.0


def _check_address(address: str, flag: str, timeout: float) -> None:
    """``address`` must read ``tcp://HOST:PORT`` (or ``tls://``, ``inproc://``, or ``HOST:PORT``)
    and a Dask scheduler must listen there: a web address, a file path, a typo or another kind
    of server is refused within seconds instead of a long wait and a traceback. A scheduler
    greets a new connection at once with its handshake, a frame whose 8-byte little-endian
    length comes first; a web server, say, waits for a request."""
    if address.startswith("inproc://"):
        return
    match = _ADDRESS.match(address.strip())
    hint = ("a Dask scheduler's address reads tcp://HOST:PORT (port 8786 by default; the "
            "dashboard's http:// address is not the scheduler)")
    if match is None or (match["scheme"] or "tcp") not in _SCHEMES:
        raise InvalidArgument(f"{flag}={address} is not a scheduler address: {hint}.")
    host, port = match["host"].strip("[]"), int(match["port"])
    if match["scheme"] == "tls":
        return  # the TLS handshake is Dask's
    try:
        with socket.create_connection((host, port), timeout=min(timeout, 10)) as probe:
            probe.settimeout(_PROBE_SECONDS)
            try:
                greeting = probe.recv(16)
            except TimeoutError:
                greeting = b""
    except OSError as exc:
        raise InvalidArgument(f"{flag}={address}: no Dask scheduler answered, nothing listens "
                              f"there ({exc.strerror or exc}); start a scheduler with `dask "
                              "scheduler` and workers with `dask worker ADDRESS`.") from None
    if len(greeting) < 8 or int.from_bytes(greeting[:8], "little") > 2**24:
        raise InvalidArgument(f"{flag}={address}: no Dask scheduler answered: a server listens "
                              f"there but sent no Dask handshake within {_PROBE_SECONDS:g} s; "
                              f"{hint}.")


#: The packages whose versions must agree between this process and the workers.
NUMERIC_PACKAGES = ("selfattention-verify", "numpy", "scipy", "mpmath", "python-flint", "sympy")


def _worker_version() -> dict:
    """The versions of :data:`NUMERIC_PACKAGES` in this process (``None``: not installed)."""
    import importlib.metadata

    found = {}
    for name in NUMERIC_PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found
