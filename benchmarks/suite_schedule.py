"""Where the wall time of `verify run` goes: its instances replayed on the workers.

    python benchmarks/suite_schedule.py RUN_DIR [--order-from OTHER_RUN_DIR] [--workers 2]
                                        [--without CLAIM ...]

RUN_DIR is a finished run (``reports/<run-id>`` or the folder holding its ``instances.jsonl``).
Each instance's recorded seconds (``cpu_seconds`` where the record has them — what a quiet
machine would take — else its wall ``seconds``) are handed to ``--workers`` workers by list
scheduling (the next instance to the first free worker), as :func:`verify.run.run_claims`
does, in four orders:

* the claims' order (no ordering at all);
* the static guess :func:`verify.run._costs.expected_cost` (a first run in a new folder);
* the seconds recorded by ``--order-from`` (default: RUN_DIR itself, the longest-first order of
  the true seconds, as a second run in the same folder gets it);

and prints each makespan with its ratio to the lower bound max(Σ seconds / workers, longest
instance), which no order beats. The difference between the observed wall of the checks and
the replay is what the replay does not model: start-up, the report's figures drawn alongside
the checks, the load. ``--without real-heads`` replays the suite as ``pip install .`` runs it
(without the ``weights`` extra the real-heads claim is out of scope).
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
from pathlib import Path

from verify.claim import load_claims
from verify.cli import default_claims_dir
from verify.run._costs import expected_cost
from verify.run._runner import _tasks


def _store(folder: str) -> Path:
    path = Path(folder)
    found = sorted(path.glob("instances.jsonl")) or sorted(path.glob("*/instances.jsonl"))
    if not found:
        sys.exit(f"{folder}: no instances.jsonl")
    return found[-1]


def _seconds(folder: str) -> dict[str, float]:
    out = {}
    for line in _store(folder).read_text().splitlines():
        record = json.loads(line)
        out[record["key"]] = float(record.get("cpu_seconds", record["seconds"]) or 0)
    return out


def makespan(order: list[str], seconds: dict[str, float], workers: int) -> float:
    """List scheduling: each instance, in ``order``, to the first worker free.

    >>> makespan(["a", "b", "c"], {"a": 3, "b": 1, "c": 2}, 2)
    3.0
    """
    free = [0.0] * workers
    for key in order:
        heapq.heappush(free, heapq.heappop(free) + seconds[key])
    return max(free)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run")
    parser.add_argument("--order-from", metavar="RUN")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--without", nargs="*", default=[], metavar="CLAIM")
    args = parser.parse_args(argv)
    seconds = _seconds(args.run)
    guide = _seconds(args.order_from) if args.order_from else seconds
    claims = load_claims(default_claims_dir())
    tasks = [t for t in _tasks(claims, None, None, None, None)
             if t.key in seconds and t.claim.id not in args.without]
    keys = [t.key for t in tasks]
    total = sum(seconds[k] for k in keys)
    bound = max(total / args.workers, max(seconds[k] for k in keys))
    unit = "CPU" if "cpu_seconds" in _store(args.run).read_text() else "wall"
    print(f"{len(keys)} instances, {total:.1f} {unit} s in all, longest "
          f"{max(keys, key=seconds.get)} {max(seconds[k] for k in keys):.1f} s; "
          f"{args.workers} workers")
    orders = {
        "claims' order": keys,
        "static guess (expected_cost)": [t.key for t in sorted(tasks, key=expected_cost,
                                                               reverse=True)],
        "recorded seconds" + (f" of {args.order_from}" if args.order_from else ""):
            sorted(keys, key=lambda k: guide.get(k, 0.0), reverse=True),
    }
    print(f"{'lower bound':<44} {bound:8.1f} s   x1.000")
    for name, order in orders.items():
        span = makespan(order, seconds, args.workers)
        print(f"{name:<44} {span:8.1f} s   x{span / bound:.3f}")


if __name__ == "__main__":
    main()
