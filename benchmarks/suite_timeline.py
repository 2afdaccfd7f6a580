"""Where the wall time of one `verify run` goes, measured while it runs (issue 26).

    python benchmarks/suite_timeline.py [VERIFY RUN ARGUMENTS ...] [--trace FILE]

e.g. ``python benchmarks/suite_timeline.py --proof-seconds 0 --out /tmp/tl``. It runs
``verify run`` with the given arguments in this process, exactly as the command does, and
records a timeline: when the parent finished its imports, when the worker pool started, and for
every job a worker ran — an instance (:func:`verify.run._tasks.run_task`) or a figure drawn
alongside the checks (:func:`verify.report.html.draw_ahead`) — its worker, its start and end
(wall clock) and its CPU seconds (``time.process_time`` in the worker: load does not inflate it
much), the modules it imported; then the report written after the last job. It prints

* the parent's start-up (imports, pool) and the report at the end, in wall and CPU seconds;
* per worker: its jobs, its CPU in instances and in figures, the wall seconds it sat idle
  between jobs and after its last job until the run returned (the tail);
* the CPU of the whole run (the parent and its workers, ``getrusage``) and its lower bound on the
  wall of a quiet machine with one free core per worker: the serial start-up and report plus
  the rest of the CPU divided among the workers;
* the figure jobs' CPU: the paper's, the claims' and the dependency graph's;
* the instance CPU by claim (the biggest first).

The wall figures depend on the machine's load; the CPU figures and the split between the parts
much less (say the load with them). Only the wall clock is read, never asserted: this is a
measurement, not a test. The wrappers are installed before the pool starts, and the pool forks
(Linux), so its workers run them; elsewhere (spawn) only the parent's phases are recorded.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

_START, _START_CPU = time.time(), time.process_time()


def _log(path: str, **fields) -> None:
    with open(path, "a", encoding="utf-8") as out:  # one short line: atomic with O_APPEND
        out.write(json.dumps(fields) + "\n")


_TRACE: dict = {}  # the file and the wrapped functions (module globals: the workers unpickle
#                    the wrappers by name, and a forked worker has this module's state)


def _timed(what: str, name: str, function, *args):
    start, cpu, modules = time.time(), time.process_time(), len(sys.modules)
    try:
        return function(*args)
    finally:
        _log(_TRACE["path"], what=what, key=name, pid=os.getpid(), t0=start, t1=time.time(),
             cpu=time.process_time() - cpu, modules=len(sys.modules) - modules)


def traced_instance(task):
    """:func:`verify.run._tasks.run_task`, timed."""
    return _timed("instance", task.key, _TRACE["run_task"], task)


def traced_figure(job):
    """:func:`verify.report.html.draw_ahead`, timed."""
    maker, args = job
    name = f"figures of {args[1]['id']}" if maker.__name__ == "default_figures" \
        else f"figures: {maker.__name__}"
    return _timed("figure", name, _TRACE["draw_ahead"], job)


def run_traced(argv: list[str], path: str) -> int:
    """Run ``verify run ARGV`` with the timeline written to ``path`` (JSON lines)."""
    import verify.cli as cli
    import verify.report.results as results
    import verify.run._runner as runner
    import verify.run._tasks as tasks

    _log(path, what="imported", t=time.time(), cpu=time.process_time() - _START_CPU)
    _TRACE.update(path=path, run_task=runner.run_task, draw_ahead=results.draw_ahead)
    # one instance, or each instance of a bundle judged on one instance (tasks.run_tasks)
    runner.run_task = tasks.run_task = traced_instance
    results.draw_ahead = traced_figure
    new_pool, write_reports = runner.new_pool, results.write_reports

    def pool(workers: int):
        _log(path, what="pool", t=time.time(), workers=workers)
        return new_pool(workers)

    def report(run, **options):
        start, cpu = time.time(), time.process_time()
        try:
            return write_reports(run, **options)
        finally:
            _log(path, what="report", t0=start, t1=time.time(), cpu=time.process_time() - cpu)

    runner.new_pool, results.write_reports = pool, report
    try:
        return cli.main(["run", *argv])
    finally:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        _log(path, what="end", t=time.time(), cpu=time.process_time() - _START_CPU,
             children=children.ru_utime + children.ru_stime)


def summary(path: str) -> str:
    """The breakdown of a timeline written by :func:`run_traced`."""
    events = [json.loads(line) for line in Path(path).read_text().splitlines()]
    one = {e["what"]: e for e in events if e["what"] in ("imported", "pool", "report", "end")}
    workers = one.get("pool", {}).get("workers", 2)
    jobs = sorted((e for e in events if e["what"] in ("instance", "figure")),
                  key=lambda e: e["t0"])
    if not jobs or "end" not in one:
        return "no jobs were recorded (nothing to run, or the pool does not fork here)"
    start = next(e["t"] for e in events if e["what"] == "start")

    def t(moment: float) -> float:  # seconds since the start
        return moment - start

    returned = one["report"]["t0"] if "report" in one else one["end"]["t"]
    lines = [f"start-up: imports {t(one['imported']['t']):.2f} s wall "
             f"({one['imported']['cpu']:.2f} CPU s); first job at {t(jobs[0]['t0']):.2f} s"]
    by_worker: dict = defaultdict(list)
    for e in jobs:
        by_worker[e["pid"]].append(e)
    last_instance = max((e["t1"] for e in jobs if e["what"] == "instance"), default=jobs[0]["t0"])
    for pid, own in sorted(by_worker.items()):
        cpu = {kind: sum(e["cpu"] for e in own if e["what"] == kind)
               for kind in ("instance", "figure")}
        idle = sum(b["t0"] - a["t1"] for a, b in zip(own, own[1:], strict=False))
        lines.append(f"worker {pid}: {len(own)} jobs; CPU {cpu['instance']:.1f} s in instances, "
                     f"{cpu['figure']:.1f} s in figures; idle {idle:.2f} s between jobs and "
                     f"{returned - own[-1]['t1']:.2f} s at the end; first job imported "
                     f"{own[0]['modules']} modules")
    after = [e for e in jobs if e["t1"] > last_instance and e["what"] == "figure"]
    lines.append(f"last instance ends at {t(last_instance):.1f} s; the run returns at "
                 f"{t(returned):.1f} s ({len(after)} figure jobs end after the last instance)")
    if "report" in one:
        r = one["report"]
        lines.append(f"report: {r['t1'] - r['t0']:.2f} s wall, {r['cpu']:.2f} CPU s")
    end = one["end"]
    serial = one["imported"]["cpu"] + one.get("report", {}).get("cpu", 0.0)
    total = end["cpu"] + end["children"]
    lines.append(f"whole run: {t(end['t']):.1f} s wall, {total:.1f} CPU s "
                 f"(parent {end['cpu']:.1f}, "
                 f"workers {end['children']:.1f}); lower bound on {workers} free cores "
                 f"≈ {serial:.1f} + {total - serial:.1f}/{workers} = "
                 f"{serial + (total - serial) / workers:.1f} s")
    kinds: dict = defaultdict(list)  # the figure jobs' CPU: the paper's, the claims', the graph
    for e in jobs:
        if e["what"] == "figure":
            kind = "claims" if e["key"].startswith("figures of ") else \
                "graph" if e["key"].endswith("dependency_figures") else "paper"
            kinds[kind].append(e["cpu"])
    lines.append("figure CPU s: " + ", ".join(f"{kind} {sum(cpu):.1f} ({len(cpu)} jobs)"
                                              for kind, cpu in sorted(kinds.items())))
    claims: dict = defaultdict(float)
    for e in jobs:
        claims[e["key"].split("/")[0] if e["what"] == "instance" else "(figures)"] += e["cpu"]
    lines.append("CPU s by claim: " + ", ".join(
        f"{c} {s:.1f}" for c, s in sorted(claims.items(), key=lambda kv: -kv[1]) if s >= 0.05))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if "--trace" in argv:
        i = argv.index("--trace")
        path, argv = argv[i + 1], argv[:i] + argv[i + 2:]
    else:
        path = tempfile.mkstemp(prefix="verify-timeline-", suffix=".jsonl")[1]
    Path(path).write_text("")
    _log(path, what="start", t=_START)
    try:
        code = run_traced(argv, path)
    finally:
        print(f"\n--- timeline ({path}; load average {os.getloadavg()[0]:.1f}) ---")
        print(summary(path))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
