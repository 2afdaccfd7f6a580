"""Run claims over their instances: :func:`run_claims` and its :class:`RunResult`.

For every claim, family and instance the runner decides the hypotheses, calls the claim's
check, re-checks a violation at higher precision and a longer horizon, writes a confirmed
counterexample to ``<out>/counterexamples/`` and applies the claim-level verdict rules
(:func:`verify.claim.judge_claim`).  Instances run in a :mod:`concurrent.futures` executor (the
local process pool, or a Dask cluster: :mod:`verify.run._cluster`) and are stored by this
process as they finish (:class:`~verify.run._store.ResultStore`).

**Scheduling.** The instances are handed to the executor a few at a time, the most expensive
first (:func:`~verify.run._costs.expected_seconds`: the seconds an earlier run of the same
instances recorded, ``history``, else a static guess), so that a long instance never runs
alone at the end while the other worker idles; the tasks of several claims judged on one
instance go to one worker together, which integrates their common first run once
(:func:`~verify.run._tasks.run_tasks`, :func:`verify.judge.shared_runs`); *side jobs*
(``side_jobs``: work that does not depend on the verdicts, such as the report's fixed figures,
or that depends on one claim only, such as its figures once its instances are judged) go ahead
of the remaining instances as soon as they are known, so that they are done alongside the
checks instead of after them.  An instance whose worker died (a broken pool, a Dask
``KilledWorker``) is stored as *lost* (``"lost": true``, verdict inconclusive) and computed
again by a resumed run, whichever executor it uses.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

from verify.atomic import write_atomic
from verify.claim import InstanceResult, exit_code, judge_claim
from verify.errors import InvalidArgument
from verify.exact.plain import to_plain
from verify.proof import PROOF_SECONDS, write_certificate
from verify.run._budget import Budget
from verify.run._costs import expected_cost, expected_seconds, recorded_seconds
from verify.run._progress import Progress
from verify.run._store import ResultStore
from verify.run._tasks import Task, _error_result, new_record, run_task, run_tasks, same_instance
from verify.run._workers import new_pool, stop_workers

__all__ = ["run_claims", "RunResult", "InlineExecutor", "new_run_id", "DEFAULT_WORKERS",
           "expected_cost"]

DEFAULT_WORKERS = 2
_TICK_SECONDS = 5.0  # how often the progress lines of a non-terminal may be written


class InlineExecutor(Executor):
    """A :class:`concurrent.futures.Executor` that runs each task at once, in this process
    (debugging, tests, and claims whose checks are registered only here)."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            future.set_exception(exc)
        return future


def new_run_id(parameters: dict | None = None, now: datetime | None = None) -> str:
    """``"YYYYmmddTHHMMSSZ-<6 hex>"``: the UTC time and a short hash of the parameters, the
    time to the microsecond and the process id (two runs never share an id).

    >>> new_run_id({}, datetime(2026, 11, 1, 12, 0, tzinfo=UTC))[:17]
    '20261101T120000Z-'
    """
    now = now or datetime.now(UTC)
    blob = json.dumps([to_plain(parameters or {}), now.isoformat(), os.getpid()],
                      sort_keys=True, default=str)
    return f"{now:%Y%m%dT%H%M%SZ}-{hashlib.sha256(blob.encode()).hexdigest()[:6]}"


@dataclass
class RunResult:
    """What a run produced.

    Attributes
    ----------
    run_id : str
    out_dir : pathlib.Path
    claims : list of Claim
    records : dict
        Instance records (:func:`verify.run._tasks.run_task`) by key ``"<claim>/<family>#<k>"``.
    claim_results : list of ClaimResult
        In the order of ``claims``.
    parameters : dict
        ``instances``, ``seed``, ``precision``, ``horizon`` (``None``: each family's own).
    started, finished : str
        UTC ISO times.
    seconds : float
        Wall time of this invocation.
    resumed : int
        Instances read back from the store instead of being computed.
    side : dict
        The results of the side jobs (``run_claims(side_jobs=...)``) by their key; a job that
        raised or was lost is absent.
    """

    run_id: str
    out_dir: Path
    claims: list
    records: dict
    claim_results: list
    parameters: dict
    started: str
    finished: str
    seconds: float
    resumed: int = 0
    executor: str = ""
    extra: dict = field(default_factory=dict)
    side: dict = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0 when no claim expected to hold is refuted, else 1."""
        return exit_code(self.claim_results)

    def claim_records(self, claim_id: str) -> list[dict]:
        """The instance records of one claim, in family and index order."""
        claim = next(c for c in self.claims if c.id == claim_id)
        order = {f.name: i for i, f in enumerate(claim.families)}
        found = [r for r in self.records.values() if r["claim"] == claim_id]
        return sorted(found, key=lambda r: (order.get(r["family"], 99), r["k"]))


def _tasks(claims, instances, seed, precision, horizon, budget=None) -> list[Task]:
    tasks = []
    for claim in claims:
        for family in claim.families:
            count = 1 if family.kind == "explicit" else (instances or family.count)
            if family.kind == "weights":  # one instance per listed head: at most that many
                count = min(count, family.count)
            for k in range(count):
                tasks.append(Task(claim, family.name, k, seed, precision, horizon, budget))
    return tasks


def _in_flight(pool: Executor) -> int | None:
    """How many jobs to keep submitted to ``pool`` (its workers and one spare each, so that no
    worker waits while the next job is chosen); ``None``: all at once (an executor that runs
    jobs as they are submitted, or whose size is unknown)."""
    workers = getattr(pool, "workers", None) or getattr(pool, "_max_workers", None)
    return None if isinstance(pool, InlineExecutor) or not workers else 2 * int(workers)


def _check_parameters(given: dict, stored: dict, out_dir: Path) -> dict:
    merged = dict(stored)
    for key, value in given.items():
        if value is None:
            continue
        if key in stored and stored[key] != value:
            raise InvalidArgument(f"{key}={value!r} differs from the resumed run's {key}="
                                  f"{stored[key]!r} (None: each family's own; "
                                  f"{out_dir / 'run.json'}); drop the option or start a new "
                                  "run.")
        merged[key] = value
    return merged


def _check_same_claims(ids: list, stored: list | None, out_dir: Path) -> None:
    """A resumed run keeps the claims it was started with: resuming only some of them would
    rewrite its ``run.json`` without the others, and a later resume could not restore them."""
    if stored is None or sorted(ids) == sorted(stored):
        return
    dropped = [c for c in stored if c not in ids]
    added = [c for c in ids if c not in stored]
    change = "; ".join(part for part in (
        f"it would drop {', '.join(dropped)}" if dropped else "",
        f"it would add {', '.join(added)}" if added else "") if part)
    raise InvalidArgument(f"{out_dir} is a run of {', '.join(stored) or 'no claims'}: resume it "
                          f"with the same claims ({change}); to check other claims, start a new "
                          "run.")


def _write_counterexample(record: dict, out_dir: Path) -> dict:
    text = record.pop("counterexample_toml", None)
    if not text:
        return record
    folder = out_dir / "counterexamples"
    folder.mkdir(exist_ok=True)
    name = f"{record['claim']}-{record['family']}-{record['k']}.toml"
    write_atomic(folder / name, text)
    result = InstanceResult.from_json(record["result"])
    record["result"] = replace(result, counterexample=f"counterexamples/{name}").to_json()
    return record


def run_claims(claims: Iterable, *, instances: int | None = None, seed: int | None = None,
               precision: object = None, horizon: object = None, out_dir: str | Path,
               executor: Executor | None = None,
               progress: bool | Callable[[str, dict], None] | None = None,
               resume: bool = False, run_id: str | None = None,
               budget: Budget | None = None,
               side_jobs: Callable[[object, list[dict]], Mapping] | None = None,
               history: str | Path | None = None,
               workers: int = DEFAULT_WORKERS) -> RunResult:
    """Check every claim on its instances and judge it.

    Parameters
    ----------
    claims : iterable of Claim
    instances : int, optional
        Number of instances of every random family (default: each family's ``count``);
        explicit families always have one.
    seed : int, optional
        Overrides every random family's seed (instance ``k`` uses ``seed + k``).
    precision : "float64", "auto" or int, optional
        Overrides every family's precision.
    horizon : number, optional
        Overrides every family's horizon.
    out_dir : path
        Where ``run.json``, ``instances.jsonl`` and ``counterexamples/`` go.
    executor : concurrent.futures.Executor, optional
        Default: a :class:`~concurrent.futures.ProcessPoolExecutor` with 2 workers that die
        with this process (:mod:`verify.run._workers`), shut down at the end; on an exception
        (``KeyboardInterrupt``: SIGINT, or SIGTERM through the CLI) its workers are stopped at
        once and the finished instances stay stored for ``resume``.  A given executor is left
        open.  For a Dask cluster use :func:`verify.run.connect` (its tasks run as in the
        local pool, and each result is released on the cluster once fetched, so a worker that
        dies later costs only the instances it was running).  :class:`InlineExecutor` runs
        everything in this process.
    progress : bool or callable, optional
        ``None``: a progress bar on stderr when it is a terminal and ``CI`` is not true,
        else a progress line every 30 s (:class:`~verify.run._progress.Progress`);
        ``False``: silent; a callable ``progress(key, record)`` is called per finished instance.
    resume : bool
        Read the finished instances of ``out_dir`` back and run only the others.  Parameters
        default to the stored ones; a different explicit value is an error.
    run_id : str, optional
        Default: the stored one when resuming, else :func:`new_run_id`.
    budget : Budget, optional
        Wall time and memory of each instance (:mod:`verify.run._budget`); one that uses it up
        is inconclusive, with a reason starting ``budget:``.
    side_jobs : callable, optional
        ``side_jobs(claim, records) -> {key: (function, args)}``: work to do in the same
        executor, ahead of the instances not yet started. Called once with ``(None, [])`` at
        the start, then with each claim and its instance records (in family order) once all of
        them are stored. ``function(*args)`` must be picklable and its result is stored in
        :attr:`RunResult.side` under ``key`` (a job that raises is left out: its caller does the
        work itself). The run waits for the side jobs before it returns.
    history : path, optional
        A folder of earlier runs (``reports``): the seconds the newest of them recorded for
        these instances with the same parameters and proof budget
        (:func:`~verify.run._costs.recorded_seconds`) order the work, longest first; nothing
        else depends on them.
    workers : int
        How many worker processes the default pool has (:data:`DEFAULT_WORKERS`; ignored when
        ``executor`` is given): more workers finish sooner on a machine with more free cores.
        Every worker judges an instance with the same code and one BLAS thread, whichever it
        is; a proof attempt's budget is its worker's CPU seconds, which workers sharing a core
        (more workers than free cores, hyperthreads) stretch like any other load.

    Returns
    -------
    RunResult

    Raises
    ------
    InvalidArgument
        ``out_dir`` already holds results and ``resume`` is false, or a parameter conflicts
        with the resumed run's, or ``claims`` are not the resumed run's (a narrowed run would
        lose the others from its ``run.json``), or ``workers`` is not a positive integer.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidArgument(f"workers={workers!r} must be a positive integer (the worker "
                              "processes of the local pool).")
    started, clock = datetime.now(UTC), time.perf_counter()
    claims = list(claims)
    out_dir = Path(out_dir)
    store = ResultStore(out_dir)
    horizon = None if horizon is None else str(Fraction(str(horizon)))
    given = {"instances": instances, "seed": seed, "precision": precision, "horizon": horizon}
    stored_run = store.read_run()
    if resume:
        parameters = _check_parameters(given, (stored_run or {}).get("parameters", {}), out_dir)
        _check_same_claims([c.id for c in claims], (stored_run or {}).get("claims"), out_dir)
        records = store.load()
    else:
        if store.path.exists() and store.path.stat().st_size:
            raise InvalidArgument(f"out_dir={str(out_dir)!r} already holds results; resume it "
                                  "(--resume) or choose another directory.")
        parameters, records = given, {}
    run_id = run_id or (stored_run or {}).get("run_id") or new_run_id(parameters, started)
    proof = PROOF_SECONDS if budget is None or budget.proof is None else budget.proof
    store.write_run({"run_id": run_id, "parameters": parameters, "started":
                     (stored_run or {}).get("started", started.isoformat()),
                     "claims": [c.id for c in claims],
                     "proof_seconds": proof})
    h = parameters.get("horizon")
    tasks = _tasks(claims, parameters.get("instances"), parameters.get("seed"),
                   parameters.get("precision"), None if h is None else Fraction(h), budget)
    sha = {c.id: c.sha256 for c in claims}
    done = {t.key for t in tasks if t.key in records and not records[t.key].get("lost")
            and records[t.key].get("claim_sha256") == sha[t.claim.id]}
    todo = [t for t in tasks if t.key not in done]
    records = {t.key: records[t.key] for t in tasks if t.key in done}
    bar = Progress(len(todo), enabled=False if progress is False or callable(progress)
                   else None)
    expected = expected_seconds(todo, {} if history is None else recorded_seconds(
        history, parameters=parameters, proof=proof, exclude=out_dir))
    queue = sorted(_bundles(todo), key=lambda bundle: sum(expected[t.key] for t in bundle),
                   reverse=True)  # the longest first
    side: list = []  # (key, function, args), ahead of the queued instances
    side_results: dict = {}
    remaining = {claim.id: sum(t.claim.id == claim.id and t.key not in records
                               for t in tasks) for claim in claims}

    def claim_done(claim) -> None:
        if side_jobs is not None:
            keys = [t.key for t in tasks if t.claim.id == claim.id]
            side.extend((key, *job) for key, job in side_jobs(claim, [records[k] for k in keys])
                        .items())

    if side_jobs is not None:
        side.extend((key, *job) for key, job in side_jobs(None, []).items())
        for claim in claims:
            if not remaining[claim.id]:
                claim_done(claim)
    own = executor is None and bool(todo or side)
    pool = new_pool(workers) if own else executor or InlineExecutor()
    limit = _in_flight(pool)
    finished = False
    try:
        futures: dict = {}  # future -> ("side", key) or ("tasks", bundle)
        order: dict = {}

        def submit() -> None:
            while (side or queue) and (limit is None or len(futures) < limit):
                if side:
                    key, function, args = side.pop(0)
                    future, what = pool.submit(function, *args), ("side", key)
                else:
                    bundle = queue.pop(0)
                    future = pool.submit(run_task, bundle[0]) if len(bundle) == 1 else \
                        pool.submit(run_tasks, bundle)
                    what = ("tasks", bundle)
                futures[future], order[future] = what, len(order)

        submit()
        while futures:
            ready, _ = wait(set(futures), timeout=_TICK_SECONDS, return_when=FIRST_COMPLETED)
            for future in sorted(ready, key=order.__getitem__):
                kind, what = futures.pop(future)
                if kind == "side":  # a side job: its caller redoes what failed
                    if not future.cancelled() and future.exception() is None:
                        side_results[what] = future.result()
                    continue
                try:
                    found = future.result()
                    found = [found] if len(what) == 1 else found
                except Exception as exc:  # noqa: BLE001 - e.g. a worker process died
                    found = [_lost_record(task, exc) for task in what]
                for task, record in zip(what, found, strict=True):
                    record = write_certificate(_write_counterexample(record, out_dir), out_dir)
                    store.append(record)
                    records[task.key] = record
                    bar.update(task.key, record["result"]["verdict"])
                    if callable(progress):
                        progress(task.key, record)
                    remaining[task.claim.id] -= 1
                    if not remaining[task.claim.id]:
                        claim_done(task.claim)
            submit()
            bar.tick()
        finished = True
    finally:
        bar.close()
        if own and finished:
            pool.shutdown(cancel_futures=True)
        elif own:  # interrupted (SIGINT, SIGTERM) or failed: what is stored stays stored
            stop_workers(pool)
    results = []
    for claim in claims:
        keys = [t.key for t in tasks if t.claim.id == claim.id]
        results.append(judge_claim(claim, [InstanceResult.from_json(records[k]["result"])
                                           for k in keys]))
    return RunResult(run_id, out_dir, claims, records, results, parameters,
                     (stored_run or {}).get("started", started.isoformat()),
                     datetime.now(UTC).isoformat(), time.perf_counter() - clock, len(done),
                     type(pool).__name__ if todo else "", side=side_results)


def _bundles(tasks: list[Task]) -> list[tuple[Task, ...]]:
    """``tasks`` in bundles of one :func:`~verify.run._tasks.same_instance` key (in their
    order; mostly of one task): a bundle goes to one worker, which integrates each first run
    once (:func:`~verify.run._tasks.run_tasks`)."""
    groups: dict[str, list[Task]] = {}
    for task in tasks:
        groups.setdefault(same_instance(task), []).append(task)
    return [tuple(group) for group in groups.values()]


def _lost_record(task: Task, exc: BaseException) -> dict:
    family = task.claim.family(task.family)
    return lost_record(task.claim, family.name, task.k, family.seed_of(task.k, task.seed),
                       task.precision, task.horizon, exc)


def lost_record(claim, family: str, k: int, seed: int | None, precision: object,
                horizon: object, exc: BaseException) -> dict:
    """The record of an instance whose worker failed (``exc``): inconclusive, ``"lost":
    true`` (a resumed run computes it again)."""

    out = _error_result(f"{family}#{k}", family, seed, "the worker", exc, lost=True)
    record = new_record(claim, family, k, seed, precision, horizon)
    record.update(exception=out["exception"], traceback=out["traceback"],
                  result=out["result"].to_json(), seconds=None, lost=True)
    return record
