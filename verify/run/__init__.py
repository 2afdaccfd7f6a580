"""Running claims over instances: the runner, its executors and the results store.

:func:`run_claims` checks claims on their instances and returns a :class:`RunResult`; the
reports are written from it by :mod:`verify.report.results`.

* Parallelism: any :class:`concurrent.futures.Executor`. The default is a process pool with
  :data:`DEFAULT_WORKERS` = 2 workers; :func:`connect` opens a :class:`ClusterPool` on a Dask
  cluster (the optional extra ``[dask]``; its tasks run as in the local pool, so the numbers
  agree: :mod:`verify.run._cluster`). :class:`InlineExecutor` runs in this process.
* Budgets: a :class:`Budget` bounds the wall time and memory of each instance; one that uses
  it up is *inconclusive (budget)* (:mod:`verify.run._budget`).
* Storage: ``<out>/instances.jsonl`` gains one line per finished instance; ``resume=True``
  (``verify run --resume DIR``) never recomputes a stored instance of an unchanged claim file.
* Conjectures (``verify check``): :func:`load_conjecture` reads a user's file,
  :func:`check_conjecture` judges its families, searches its ``[search]`` space and shrinks a
  counterexample (:mod:`verify.run._check`).
* Re-checks: a violation is re-run with ``recheck=True`` at :func:`higher_precision` and the
  horizon × 3/2; if it persists, ``<out>/counterexamples/<claim>-<family>-<k>.toml`` is an
  instance file that ``verify simulate`` reproduces.

Examples
--------
>>> from verify.run import run_claims, InlineExecutor
>>> callable(run_claims) and issubclass(InlineExecutor, object)
True
"""

import importlib

from verify.run._budget import Budget, parse_memory
from verify.run._cluster import ClusterPool, connect
from verify.run._progress import Progress, progress_enabled
from verify.run._runner import DEFAULT_WORKERS, InlineExecutor, RunResult, new_run_id, run_claims
from verify.run._store import ResultStore
from verify.run._tasks import (
    Task,
    exact_inputs,
    higher_precision,
    longer_checkpoints,
    run_task,
    run_tasks,
)

# start-up: the conjecture modules (``verify check``) import the search and with it Hypothesis
# (~0.2 s, measured with `python -X importtime -c "import verify.run"`), which ``verify run``
# and its workers never use: they are imported on first use of one of their names.
_CONJECTURE_NAMES = {"EXIT_CODES": "_check", "CheckRun": "_check",
                     "check_conjecture": "_check", "judge_instance_file": "_check",
                     "Conjecture": "_conjecture", "load_conjecture": "_conjecture",
                     "parse_conjecture": "_conjecture"}


def __getattr__(name: str):
    if name not in _CONJECTURE_NAMES:
        raise AttributeError(f"module 'verify.run' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"verify.run.{_CONJECTURE_NAMES[name]}"), name)
    globals()[name] = value
    return value


__all__ = ["run_claims", "RunResult", "InlineExecutor", "new_run_id", "DEFAULT_WORKERS",
           "ResultStore", "Progress", "progress_enabled", "Task", "run_task", "run_tasks",
           "exact_inputs",
           "higher_precision", "longer_checkpoints", "Conjecture", "load_conjecture",
           "parse_conjecture", "check_conjecture", "judge_instance_file", "CheckRun",
           "EXIT_CODES", "Budget", "parse_memory", "ClusterPool", "connect"]
