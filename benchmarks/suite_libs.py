"""Does a dependency release cost the suite? Instance CPU by claim under two Pythons (issue 26).

    python benchmarks/suite_libs.py --python A/bin/python --python B/bin/python [--repeat N] [ID]

e.g. a fresh venv with the newest releases against one with older ones (``pip install
'numpy==2.2.*' 'python-flint==0.8.0' ...``), both running this tree (``PYTHONPATH`` is set to it,
so neither needs ``verify`` installed, only its dependencies). Each run is a fresh process that
judges the instances of the named claims (default: all) one after the other in that process
(``InlineExecutor``, no proofs, no figures) and records each instance's CPU seconds, exactly as a
worker of ``verify run --proof-seconds 0`` does. The runs alternate A, B, A, B, ... so that both see
the same load; the script prints each run's instance CPU by claim, the releases each interpreter
loaded, and per claim the ratio B / A of the summed CPU. Only the CPU is read, never asserted: a
measurement, not a test. On a loaded machine a CPU second buys less work, so read the ratio, not
the seconds, and say the load (printed with every run).

``--profile FILE`` writes a cProfile of each run's instances (``FILE.A1``, ``FILE.B1``, ...).

Measured with it (session 11): python-flint 0.9.0's abi3 wheel against 0.8.0 on CPython 3.11,
and NumPy 2.4.6 against 2.2.6 (benchmarks/README.md, "suite_libs.py").
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_TREE = Path(__file__).resolve().parent.parent

# what one run does, in a fresh interpreter (argv: out dir, profile file or "", claim ids)
_CHILD = r"""
import cProfile, importlib, json, sys, time
from verify.claim import load_claims
from verify.cli import default_claims_dir
from verify.run import Budget, InlineExecutor, run_claims
out, profile, ids = sys.argv[1], sys.argv[2], sys.argv[3:]
claims = [c for c in load_claims(default_claims_dir()) if not ids or c.id in ids]
profiler = cProfile.Profile() if profile else None
started = time.process_time()
if profiler:
    profiler.enable()
run_claims(claims, out_dir=out + "/run", executor=InlineExecutor(), budget=Budget(None, None, 0),
           progress=False)
if profiler:
    profiler.disable()
    profiler.dump_stats(profile)
versions = {}
for name in ("numpy", "scipy", "sympy", "flint", "mpmath", "networkx"):
    versions[name] = getattr(importlib.import_module(name), "__version__", "?")
print(json.dumps({"cpu": time.process_time() - started, "versions": versions}))
"""


def run_once(python: str, ids: list[str], profile: str = "") -> dict:
    """One fresh process of ``python`` judging the instances of ``ids``: its CPU seconds by claim
    (from the run's ``instances.jsonl``), its whole CPU and the releases it loaded."""
    with tempfile.TemporaryDirectory(prefix="suite-libs-") as out:
        env = dict(os.environ, PYTHONPATH=str(_TREE))
        done = subprocess.run([python, "-c", _CHILD, out, profile, *ids], env=env, check=True,
                              capture_output=True, text=True)
        by_claim: dict[str, float] = collections.defaultdict(float)
        with open(Path(out) / "run" / "instances.jsonl", encoding="utf-8") as lines:
            for line in lines:
                record = json.loads(line)
                by_claim[record["claim"]] += record.get("cpu_seconds") or 0.0
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    return {"claims": dict(by_claim), "cpu": summary["cpu"], "versions": summary["versions"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", required=True,
                        help="an interpreter (give two: A, then B)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each (default 2)")
    parser.add_argument("--profile", default="", help="cProfile each run to FILE.A1, FILE.B1, ...")
    parser.add_argument("ids", nargs="*", help="claim ids (default: all)")
    args = parser.parse_args(argv)
    if len(args.python) != 2:
        parser.error("give --python twice: A, then B")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    totals: dict[str, list[dict]] = {"A": [], "B": []}
    for k in range(1, args.repeat + 1):
        for label, python in zip("AB", args.python, strict=True):
            load = os.getloadavg()[0]
            profile = f"{args.profile}.{label}{k}" if args.profile else ""
            started = time.time()
            result = run_once(python, args.ids, profile)
            totals[label].append(result)
            claims = sorted(result["claims"].items(), key=lambda item: -item[1])
            print(f"{label}{k} (load {load:.1f}, {time.time() - started:.0f} s wall): instances "
                  f"{sum(result['claims'].values()):.2f} CPU s; "
                  + ", ".join(f"{c} {s:.2f}" for c, s in claims if s >= 0.05), flush=True)
    for label, python in zip("AB", args.python, strict=True):
        versions = " ".join(f"{k} {v}" for k, v in totals[label][0]["versions"].items())
        print(f"{label} = {python}: {versions}")
    names = sorted({c for runs in totals.values() for r in runs for c in r["claims"]},
                   key=lambda c: -sum(r["claims"].get(c, 0.0) for r in totals["A"]))
    print(f"{'claim':28s} {'A: CPU s':>18s} {'B: CPU s':>18s} {'B / A':>7s}")
    for name in [*names, None]:
        seconds = {label: [sum(r["claims"].values()) if name is None else r["claims"].get(name, 0.0)
                           for r in runs] for label, runs in totals.items()}
        if name is not None and max(seconds["A"] + seconds["B"]) < 0.05:
            continue
        a, b = sum(seconds["A"]), sum(seconds["B"])
        ratio = f"{b / a:7.2f}" if a > 0 else "      -"
        print(f"{name or 'all instances':28s} {', '.join(f'{s:.2f}' for s in seconds['A']):>18s} "
              f"{', '.join(f'{s:.2f}' for s in seconds['B']):>18s} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
