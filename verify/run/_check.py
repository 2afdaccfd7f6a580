r"""``verify check``: judge a conjecture on its instances, search for a counterexample, shrink it.

:func:`check_conjecture` runs, in order:

1. the conjecture's own families (explicit instances and seeded random families), exactly as
   ``verify run`` does (scope, check, re-check of a violation at higher precision and a longer
   horizon, counterexample file);
2. for a universal conjecture (``[search]``), while no violation is confirmed: instances drawn
   by :func:`verify.search.search` (Hypothesis for the structured parameters, a seeded NumPy
   generator for the arrays) until ``instances`` have been drawn or the time ``budget`` ends;
   out-of-scope draws are recorded and never count as support;

   steps 1 and 2 run in an executor (by default the local process pool; a Dask cluster through
   :func:`verify.run.connect`): the draws are made here, in their seeded order, judged a few
   per worker at a time and taken back in draw order (:class:`~verify.run._ordered.InOrder`),
   so the records, the first counterexample and the summary are those of judging them one by
   one (``executor=InlineExecutor()``);
3. for a confirmed violation, in this process (it is sequential):
   :func:`verify.search.shrink` with our moves, a move being kept
   when the shrunk instance is still in scope and still violates the conjecture; the smallest
   instance is then re-checked at higher precision and a longer horizon (walking back along
   the chain to the last confirmed one if needed) and written to
   ``<out>/counterexamples/<id>-minimal.toml``.

Every finished instance is appended to ``<out>/instances.jsonl`` at once (an interrupted check
keeps what it did). The verdict follows design.md; a search that found nothing is *evidence*
("supported by evidence on N instances", with the families covered and the horizon), never a
proof. Exit codes: :data:`EXIT_CODES`.
"""

from __future__ import annotations

import time
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from functools import partial
from itertools import chain, count
from pathlib import Path

from verify.atomic import write_atomic
from verify.claim import (
    EXIT_ERROR,
    InstanceResult,
    InstanceVerdict,
    check_hypotheses,
    effective_verdict,
    judge_claim,
)
from verify.errors import InvalidArgument, UserFunctionError
from verify.exact.plain import to_plain
from verify.model import Instance
from verify.model.instance_file import load_instance_file
from verify.proof import write_certificate
from verify.run._budget import Budget, judge_within
from verify.run._ordered import InOrder
from verify.run._runner import (
    DEFAULT_WORKERS,
    InlineExecutor,
    RunResult,
    _lost_record,
    _write_counterexample,
    lost_record,
    new_run_id,
)
from verify.run._store import INSTANCES_FILE, ResultStore
from verify.run._tasks import Task, instance_fields, judge_on_instance, new_record, run_task
from verify.run._workers import new_pool, stop_workers
from verify.search import build_instance, search, shrink

__all__ = ["check_conjecture", "CheckRun", "EXIT_CODES", "DEFAULT_BUDGET", "SearchFamily",
           "judge_instance_file"]

#: ``verify check`` exit codes by verdict (2 is bad usage, from the CLI; 4,
#: :data:`~verify.claim.EXIT_ERROR`, an instance failed with an error and nothing refuted).
EXIT_CODES = {"supported": 0, "refuted": 1, "inconclusive": 3}
#: Seconds of search when neither a budget nor a number of instances is given.
DEFAULT_BUDGET = 60.0
#: The shrinker gets at least this many seconds after a counterexample is confirmed.
MIN_SHRINK_SECONDS = 30.0


@dataclass
class CheckRun(RunResult):
    """A :class:`~verify.run.RunResult` for one conjecture; ``extra`` holds ``command``,
    ``search`` and ``shrink``."""

    @property
    def exit_code(self) -> int:
        result = self.claim_results[0]
        if result.verdict.value != "refuted" and result.counts.get("error"):
            return EXIT_ERROR
        return EXIT_CODES[result.verdict.value]


@dataclass(frozen=True)
class SearchFamily:
    """What a check sees as ``request.family`` for an instance of the search or the shrinker."""

    name: str
    horizon: Fraction
    checkpoints: object
    precision: object
    kind: str = "search"
    description: str = ""


def _record(claim, family, k, instance, result, extra, draw=None) -> dict:
    record = new_record(claim, family.name, k, result.seed, family.precision, family.horizon)
    record.update(instance_fields(claim, instance, family.horizon, family.precision),
                  draw=draw, **extra)
    record["result"] = result.to_json()
    return record


def judge_drawn(claim, family: SearchFamily, k: int, instance, seed, draw=None,
                budget: Budget | None = None) -> dict:
    """The record of ``claim`` judged on ``instance`` (with the re-check of a violation),
    under ``budget``: the unit of work of the search, run on a worker."""
    result, extra = judge_within(budget, lambda: judge_on_instance(
        claim, family, instance, seed=seed, horizon=family.horizon,
        checkpoints=family.checkpoints, precision=family.precision))
    return _record(claim, family, k, instance, result, extra, draw)


def _confirmed(record: dict) -> bool:
    """A violation that counts: on a rigorous basis and confirmed by its re-check."""
    verdict, _ = effective_verdict(InstanceResult.from_json(record["result"]))
    return verdict is InstanceVerdict.VIOLATED


class _Session:
    """The state of one check: the store, the records, the executor and the callbacks."""

    def __init__(self, conjecture, out_dir: Path, progress, executor: Executor | None = None,
                 budget: Budget | None = None, window: int = 1):
        self.conjecture, self.claim = conjecture, conjecture.claim
        self.out_dir, self.store = out_dir, ResultStore(out_dir)
        self.records: dict = {}
        self.progress = progress
        self.executor = executor or InlineExecutor()
        self.budget, self.window = budget, window

    def keep(self, record: dict) -> dict:
        record = write_certificate(_write_counterexample(record, self.out_dir), self.out_dir)
        self.store.append(record)
        self.records[record["key"]] = record
        if callable(self.progress):
            self.progress(record["key"], record)
        return record

    def jobs(self) -> InOrder:
        return InOrder(self.executor, self.window)

    def outcome(self, future, lost) -> dict:
        """The record a job delivered, kept; ``lost(exc)`` makes the record of a job whose
        worker died."""

        try:
            record = future.result()
        except UserFunctionError:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. a worker process died
            record = lost(exc)
        return self.keep(record)

    def families(self) -> dict | None:
        jobs = self.jobs()
        tasks = [Task(self.claim, family.name, k, budget=self.budget)
                 for family in self.claim.families
                 for k in range(1 if family.kind == "explicit" else family.count)]
        taken = (pair for task in tasks for pair in jobs.submit(task, run_task, task))
        for task, future in chain(taken, jobs.drain()):
            record = self.outcome(future, partial(_lost_record, task))
            if _confirmed(record):
                jobs.cancel()
                return record
        return None

    def judge(self, instance, family: SearchFamily, k: int, seed, draw=None) -> dict:
        """Judge ``instance`` here (with the re-check of a violation) and keep its record."""
        return self.keep(judge_drawn(self.claim, family, k, instance, seed, draw, self.budget))

    def first_pass_violated(self, instance, family: SearchFamily) -> bool:
        """The shrinker's oracle: in scope and violated by the first run (no re-check) on a
        rigorous basis (only such a violation can refute)."""
        result, _ = judge_within(self.budget, lambda: judge_on_instance(
            self.claim, family, instance, seed=None, horizon=family.horizon,
            checkpoints=family.checkpoints, precision=family.precision, recheck=False))
        return result.rigorous_violation

    def finish(self, run_id: str, started: datetime, clock: float, parameters: dict,
               extra: dict) -> CheckRun:
        """The :class:`CheckRun` of the records kept so far."""
        results = [InstanceResult.from_json(r["result"]) for r in self.records.values()]
        return CheckRun(run_id, self.out_dir, [self.claim], self.records,
                        [judge_claim(self.claim, results)], parameters, started.isoformat(),
                        datetime.now(UTC).isoformat(), time.monotonic() - clock, 0,
                        type(self.executor).__name__, extra)


def _search_family(space, name: str = "search") -> SearchFamily:
    return SearchFamily(name, Fraction(space.horizon), space.checkpoints, space.precision,
                        description="instances drawn from the [search] space")


class _DrawJudge:
    """The search's evaluator (:func:`verify.search.search`): each draw is built here (a draw
    that cannot be built is skipped), numbered, judged in the session's executor
    (:func:`judge_drawn`) and kept in draw order; the first confirmed violation stops it."""

    def __init__(self, session: _Session, space, family: SearchFamily):
        self.session, self.space, self.family = session, space, family
        self.build = build_instance
        self.jobs = session.jobs()
        self.skipped: list[str] = []
        self.found: dict = {}
        self.judged = count()
        self.decided = 0  # draws whose outcome was taken (what an interrupted search reports)

    def submit(self, draw) -> list:
        try:
            instance = self.build(self.space, draw, f"{self.family.name}#?")
        except InvalidArgument as exc:
            self.skipped.append(str(exc))
            return self._decide(self.jobs.resolved((draw, None), None))
        k = next(self.judged)
        instance = _renamed(instance, f"{self.family.name}#{k}")
        return self._decide(self.jobs.submit(
            (draw, (k, instance)), judge_drawn, self.session.claim, self.family, k,
            instance, draw.seed, to_plain(draw.to_json()), self.session.budget))

    def drain(self, wait: bool = True) -> list:
        return self._decide(self.jobs.drain(wait))

    def cancel(self) -> None:
        self.jobs.cancel()

    def _decide(self, taken) -> list:
        """Keep the records of ``taken`` in order, up to the first confirmed violation (what
        ran ahead of it is dropped, as the sequential search never judged it)."""
        out = []
        for (draw, job), future in taken:
            if self.found:
                break
            if job is None:
                out.append((draw, False))
                continue
            (k, instance), family = job, self.family
            record = self.session.outcome(future, partial(
                lost_record, self.session.claim, family.name, k, draw.seed, family.precision,
                family.horizon))
            if _confirmed(record):
                self.found.update(record=record, instance=instance)
            out.append((draw, _confirmed(record)))
        self.decided += len(out)
        return out


def _run_search(session: _Session, deadline: float, instances: int | None, seed: int):
    space = session.conjecture.search
    judge = _DrawJudge(session, space, _search_family(space))
    try:
        summary = to_plain(search(space, judge, seed=seed, max_examples=instances,
                                  deadline=deadline).to_json())
    except KeyboardInterrupt:
        judge.drain(wait=False)  # keep the outcomes already finished (in draw order)
        judge.cancel()
        summary = {"stopped": "interrupted", "drawn": judge.decided}
    summary.update(space=space.describe().splitlines(), horizon=str(space.horizon),
                   skipped=len(judge.skipped), skipped_examples=judge.skipped[:3])
    return judge.found, summary


def _shrink(session: _Session, record: dict, instance, family: SearchFamily,
            deadline: float, space) -> dict:
    """Shrink a confirmed counterexample, never leaving the claim: every candidate must keep
    the hypotheses — those on the data included, decided before any run — and, when the
    counterexample lies in the conjecture's ``[search]`` space, stay in it (moves that leave
    are refused and counted; the oracle also judges an out-of-scope candidate as not
    violated)."""

    inside_space = space is not None and space.contains(instance) is None

    def outside(candidate) -> str | None:
        """Why ``candidate`` is not an instance of the claim: outside the space, or a
        hypothesis (on the data too) not certainly met. Refused before any run."""
        reason = space.contains(candidate) if inside_space else None
        try:
            met = check_hypotheses(session.claim.hypotheses, candidate).holds
        except InvalidArgument as exc:
            met, reason = None, reason or f"the hypotheses cannot be decided: {exc}"
        return reason or (None if met is True else "a hypothesis is not met (or undecided)")

    result = shrink(instance, lambda c: session.first_pass_violated(c, family),
                    deadline=deadline, outside=outside)
    summary = {"from": record["key"], "moves": list(result.moves),
               "evaluations": result.evaluations, "refused": result.refused,
               "within": "the hypotheses and the [search] space" if inside_space
               else "the hypotheses", "stopped": result.stopped,
               "n": [instance.n, result.instance.n], "d": [instance.d, result.instance.d]}
    shrunk = SearchFamily("shrunk", family.horizon, family.checkpoints, family.precision,
                          description="the counterexample after shrinking")
    for step, candidate in enumerate(reversed(result.chain[1:])):
        kept = session.judge(_renamed(candidate, f"shrunk#{step}"), shrunk, step, None)
        if _confirmed(kept):
            return _minimal(session, summary, kept, walked_back=step)
    return _minimal(session, summary, record, walked_back=len(result.chain) - 1)


def _minimal(session: _Session, summary: dict, record: dict, walked_back: int) -> dict:
    """Name the minimal confirmed counterexample ``counterexamples/<id>-minimal.toml``."""
    name = f"counterexamples/{session.claim.id}-minimal.toml"
    source = record["result"].get("counterexample")
    if source:
        write_atomic(session.out_dir / name, (session.out_dir / source).read_text("utf-8"))
    summary.update(minimal=record["key"], walked_back=walked_back,
                   counterexample=name if source else None,
                   minimal_n=record["inputs"] and len(record["inputs"]["x0"]),
                   minimal_d=record["inputs"] and len(record["inputs"]["x0"][0]))
    return summary


def _renamed(instance, name: str):
    """``instance`` under another name (the same exact data)."""

    return Instance(instance.model, instance.x0, name=name)


def check_conjecture(conjecture, *, out_dir: str | Path, budget: float | None = None,
                     instances: int | None = None, seed: int = 0, progress=None,
                     run_id: str | None = None, executor: Executor | None = None,
                     instance_budget: Budget | None = None) -> CheckRun:
    """Judge ``conjecture`` (a :class:`~verify.run.Conjecture`): its families, then a search
    for a counterexample, then shrinking; see the module docstring.

    Parameters
    ----------
    conjecture : Conjecture
    out_dir : path
        Where ``instances.jsonl``, ``run.json`` and ``counterexamples/`` go (must not hold a
        previous check's results).
    budget : float, optional
        Seconds for the search (default :data:`DEFAULT_BUDGET` when ``instances`` is not given).
    instances : int, optional
        Number of search draws (no time limit unless ``budget`` is also given).
    seed : int
        Seed of the search: the same seed gives the same draws.
    progress : callable, optional
        ``progress(key, record)`` after every instance.
    executor : concurrent.futures.Executor, optional
        Where the families and the search draws are judged (a few per worker in flight, taken
        back in draw order: the outcome does not depend on it). Default: a local process pool
        of :data:`~verify.run.DEFAULT_WORKERS` workers, shut down at the end; a
        :class:`~verify.run._cluster.ClusterPool` runs them on a Dask cluster;
        :class:`~verify.run.InlineExecutor` in this process. Shrinking runs here.
    instance_budget : Budget, optional
        Wall time and memory of each instance (:mod:`verify.run._budget`).
    """
    if budget is not None and budget <= 0:
        raise InvalidArgument(f"budget={budget} must be a positive number of seconds.")
    if instances is not None and (isinstance(instances, bool) or instances < 1):
        raise InvalidArgument(f"instances={instances} must be a positive integer.")
    started, clock = datetime.now(UTC), time.monotonic()
    out_dir = Path(out_dir)
    stored = out_dir / INSTANCES_FILE
    if stored.exists() and stored.stat().st_size:
        raise InvalidArgument(f"out_dir={str(out_dir)!r} already holds results; choose another "
                              "directory.")
    pool = executor or new_pool(DEFAULT_WORKERS)
    try:
        return _check(_Session(conjecture, out_dir, progress, pool, instance_budget,
                               in_flight(pool)), started, clock, budget, instances, seed,
                      run_id)
    finally:
        if executor is None:  # what still runs (draws past a counterexample, the deadline or
            stop_workers(pool)  # an interruption) is not needed: stop the workers at once


def in_flight(executor: Executor) -> int:
    """How many instances :func:`check_conjecture` keeps not yet taken: four per worker (so a
    slow instance at the head of the draw order leaves the others work for three instance
    times), one in this process.

    >>> in_flight(InlineExecutor()), in_flight(new_pool(2))
    (1, 8)
    """
    if isinstance(executor, InlineExecutor):
        return 1
    workers = getattr(executor, "workers", None) or getattr(executor, "_max_workers", None)
    return 4 * (workers or DEFAULT_WORKERS)


def _check(session: _Session, started: datetime, clock: float, budget: float | None,
           instances: int | None, seed: int, run_id: str | None) -> CheckRun:
    conjecture = session.conjecture
    seconds = budget if budget is not None else (None if instances else DEFAULT_BUDGET)
    deadline = None if seconds is None else clock + seconds
    parameters = {"instances": instances, "seed": seed, "precision": None, "horizon": None}
    run_id = run_id or new_run_id(parameters, started)
    session.store.write_run({"run_id": run_id, "parameters": parameters,
                             "started": started.isoformat(), "claims": [conjecture.claim.id],
                             "command": "check"})
    extra: dict = {"command": "check", "budget_seconds": seconds}
    confirmed = session.families()
    instance = family = None
    if confirmed is not None:
        fam = conjecture.claim.family(confirmed["family"])
        instance = fam.instance(confirmed["k"])
        family = SearchFamily(fam.name, fam.horizon, fam.checkpoints, fam.precision)
    elif conjecture.search is not None:
        found, extra["search"] = _run_search(session, deadline, instances, seed)
        if found:
            confirmed, instance = found["record"], found["instance"]
            family = _search_family(conjecture.search)
    if confirmed is not None:
        remaining = MIN_SHRINK_SECONDS if deadline is None else deadline - time.monotonic()
        extra["shrink"] = _shrink(session, confirmed, instance, family,
                                  time.monotonic() + max(remaining, MIN_SHRINK_SECONDS),
                                  conjecture.search)
    return session.finish(run_id, started, clock, parameters, extra)


def judge_instance_file(conjecture, path: str | Path, *, out_dir: str | Path,
                        run_id: str | None = None,
                        instance_budget: Budget | None = None) -> CheckRun:
    """Judge ``conjecture`` on the single instance of an instance file (a counterexample written
    by a previous check replays this way), at the file's horizon and precision, in this
    process (under ``instance_budget``).

    Raises
    ------
    InvalidArgument
        If the file does not say its horizon (``[simulation] horizon``).
    """

    started, clock = datetime.now(UTC), time.monotonic()
    loaded = load_instance_file(path)
    simulation = loaded.simulation
    if "horizon" not in simulation:
        raise InvalidArgument(f"{path}: simulation.horizon: missing; the replay integrates to "
                              "the file's horizon (a counterexample file always has one).")
    family = SearchFamily("replay", Fraction(str(simulation["horizon"])),
                          simulation.get("checkpoints"), simulation.get("precision", "float64"),
                          description=f"the instance of {path}")
    session = _Session(conjecture, Path(out_dir), None, budget=instance_budget)
    session.judge(_renamed(loaded.instance, "replay#0"), family, 0, None)
    parameters = {"instances": None, "seed": None, "precision": None, "horizon": None}
    return session.finish(run_id or new_run_id(parameters, started), started, clock,
                          parameters, {"command": "check", "replay": str(path)})
