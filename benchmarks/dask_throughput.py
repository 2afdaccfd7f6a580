#!/usr/bin/env python
r"""Benchmark: throughput of ``verify check``'s search on the local process pool and on a Dask
cluster, against the number of workers, with the overhead per task measured in the same run.

Setup: the worked example ``claims/conjectures/sphere-consensus-generic.toml`` (post-LN tokens
on the sphere, ``V = I``, generic data: every draw holds, so the search judges all ``N`` draws;
``n ≤ 5``, ``d ≤ 3``, ``T = 20`` and the re-check at ``3T/2``), seed 0.

What is timed, in one run of this script (the ratios are what carries over to another machine):

* the search in this process (``InlineExecutor``: what ``verify check`` did before it used a
  pool) — the baseline, after a warm-up search of 2 draws;
* the same search on the local process pool and on a ``LocalCluster`` (processes, one thread
  each, on 127.0.0.1), with 1 and 2 workers: instances per second, after a warm-up search on
  the same executor (the workers have imported ``verify``); the records are compared with the
  baseline's (they must be identical apart from timing);
* the overhead per task on each executor: ``M`` tasks that do nothing but carry the payload of
  a search task (the claim, the drawn instance, the draw), all in flight at once, and the same
  one at a time (the round trip);
* the rate at which this process generates draws (Hypothesis, the seeded NumPy generators,
  building the instances): the search makes them centrally, so it bounds any cluster.

Run from the repository root: ``python benchmarks/dask_throughput.py`` (``--quick``: fewer
instances and tasks). Needs the ``dask`` extra. No wall-clock assertion; this is not a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONJECTURE = ROOT / "claims" / "conjectures" / "sphere-consensus-generic.toml"

if __name__ == "__main__":  # one BLAS thread, as `verify` itself sets it (before numpy loads)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.path.insert(0, str(ROOT))


def _noop(*payload) -> int:
    """A task that does nothing with the payload of a search task."""
    return len(payload)


def payload(conjecture) -> tuple:
    """The arguments of one search task (:func:`verify.run._check.judge_drawn`)."""
    from verify.exact.plain import to_plain
    from verify.run._check import _search_family
    from verify.search import build_instance, draw_strategy

    space = conjecture.search
    draw = draw_strategy(space).example()
    instance = build_instance(space, draw, "search#0")
    return (conjecture.claim, _search_family(space), 0, instance, draw.seed,
            to_plain(draw.to_json()), None)


def overhead(executor, args: tuple, tasks: int) -> tuple[float, float]:
    """Seconds per task with ``tasks`` in flight at once, and one at a time (round trip)."""
    start = time.perf_counter()
    for future in [executor.submit(_noop, *args) for _ in range(tasks)]:
        future.result()
    batched = (time.perf_counter() - start) / tasks
    start = time.perf_counter()
    for _ in range(max(5, tasks // 10)):
        executor.submit(_noop, *args).result()
    single = (time.perf_counter() - start) / max(5, tasks // 10)
    return batched, single


def draw_rate(conjecture, draws: int) -> float:
    """Draws per second generated and built in this process (no judging)."""
    from verify.errors import InvalidArgument
    from verify.search import build_instance, search

    space = conjecture.search

    def build(draw) -> bool:
        try:
            build_instance(space, draw, "search#?")
        except InvalidArgument:
            pass
        return False

    start = time.perf_counter()
    stats = search(space, build, seed=0, max_examples=draws)
    return stats.drawn / (time.perf_counter() - start)


def timed_search(conjecture, executor, instances: int, folder: Path, name: str):
    """``(instances per second, records)`` of a search of ``instances`` draws."""
    from verify.run import check_conjecture

    run = check_conjecture(conjecture, out_dir=folder / name, instances=instances, seed=0,
                           executor=executor)
    search = run.extra["search"]
    records = {k: {f: v for f, v in r.items() if f != "seconds"} for k, r in run.records.items()}
    return search["drawn"] / search["seconds"], records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 instances, 100 tasks")
    parser.add_argument("--instances", type=int, help="search draws (default 24)")
    parser.add_argument("--tasks", type=int, help="no-op tasks for the overhead (default 400)")
    args = parser.parse_args(argv)
    instances = args.instances or (8 if args.quick else 24)
    tasks = args.tasks or (100 if args.quick else 400)

    from distributed import LocalCluster

    from verify.run import InlineExecutor, connect, load_conjecture
    from verify.run._workers import new_pool

    conjecture = load_conjecture(CONJECTURE)
    args_ = payload(conjecture)
    folder = Path(tempfile.mkdtemp(prefix="dask-throughput-"))
    rows = []
    timed_search(conjecture, InlineExecutor(), 2, folder, "warm-inline")  # first imports
    base_rate, base_records = timed_search(conjecture, InlineExecutor(), instances, folder,
                                           "inline")
    rows.append(("this process (baseline)", 1, base_rate, None, None, True, None))
    for workers in (1, 2):
        pool = new_pool(workers)
        timed_search(conjecture, pool, 2 * workers, folder, f"warm-pool-{workers}")
        rate, records = timed_search(conjecture, pool, instances, folder, f"pool-{workers}")
        rows.append(("local process pool", workers, rate, *overhead(pool, args_, tasks),
                     records == base_records, None))
        pool.shutdown()
        started = time.perf_counter()
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          host="127.0.0.1", dashboard_address=None) as cluster:
            dask = connect(cluster.scheduler_address)
            startup = time.perf_counter() - started
            timed_search(conjecture, dask, 2 * workers, folder, f"warm-dask-{workers}")
            rate, records = timed_search(conjecture, dask, instances, folder, f"dask-{workers}")
            rows.append(("Dask LocalCluster", workers, rate, *overhead(dask, args_, tasks),
                         records == base_records, startup))
            dask.shutdown()
    generated = draw_rate(conjecture, 4 * instances)

    print(f"search of {CONJECTURE.name}: {instances} draws, seed 0; overhead: {tasks} no-op "
          f"tasks with a search task's payload ({len(__import__('pickle').dumps(args_))} bytes "
          "pickled)")
    print(f"{'executor':<26}{'workers':>8}{'inst/s':>9}{'× base':>8}{'ms/task batched':>17}"
          f"{'ms/task round trip':>20}{'same records':>14}{'start s':>9}")
    for name, workers, rate, batched, single, same, startup in rows:
        print(f"{name:<26}{workers:>8}{rate:>9.2f}{rate / base_rate:>8.2f}"
              + (f"{1e3 * batched:>17.2f}{1e3 * single:>20.2f}" if batched else f"{'':>37}")
              + f"{'yes' if same else 'NO':>14}" + (f"{startup:>9.2f}" if startup else ""))
    print(f"draws generated and built in this process: {generated:.1f} per second")
    per_instance = 1 / rows[0][2]
    dask2 = rows[-1]
    cap = 1 / dask2[3]
    predicted = min(64 / per_instance, cap, generated)
    print(f"64 workers (extrapolated): one instance ≈ {per_instance:.2f} s of one worker → "
          f"{64 / per_instance:.0f} inst/s if it scaled linearly; Dask sustains ≈ {cap:.0f} "
          f"tasks/s with this payload (2 workers, batched) and this process draws ≈ "
          f"{generated:.0f}/s → ≈ {predicted:.0f} inst/s (the smallest of the three)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
