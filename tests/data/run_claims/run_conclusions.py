"""Tiny conclusions for the runner and report tests (registered once, see ``ensure_registered``).

``run-test-margin`` decides on the margin its table states (``recheck_margin`` when
re-checking) with error estimate ``error``; ``run-test-raises`` raises. Neither is about
``t -> infinity``, so the engine judges them once, on the family's horizon.
``CALLS`` counts the calls made in this process (the resume test uses it).
``run-test-allocates`` allocates ``megabytes`` MiB and holds (the memory budget test).
``run-test-gate`` (the interruption and cluster tests) appends the instance's name and its
process id to ``$VERIFY_TEST_GATE/calls`` and holds at once on instance ``#0``; on any other
it records its process id in ``$VERIFY_TEST_GATE/pids/`` and waits for
``$VERIFY_TEST_GATE/release``.
"""

from __future__ import annotations

import math
import os
import time
from fractions import Fraction

from verify.claim import CONCLUSIONS, register_conclusion
from verify.judge import decide

CALLS: list[str] = []
KEYS = {"margin": "the margin (exact)", "recheck_margin": "the margin when re-checking",
        "error": "the error estimate", "figure": "attach evidence['figure']",
        "basis": "what the decision rests on (default: exact for error 0, else estimate)"}


def margin_judge(evaluation):
    request = evaluation.request
    CALLS.append(f"{request.claim.id}/{request.instance.name}{'/re' if request.recheck else ''}")
    p = evaluation.parameters
    margin = Fraction(p["recheck_margin"] if request.recheck and "recheck_margin" in p
                      else p["margin"])
    evidence = {"observed": float(-margin), "predicted": 0}
    if p.get("figure"):
        x0 = [[float(v) for v in row] for row in request.instance.x0]
        times = [0.0, 1.0, 2.0, 3.0, 4.0]
        evidence["figure"] = {
            "predicted": {"polytope_vertices": x0, "label": r"$\mathcal{K}$"},
            "convergence": {"times": times, "distances": [math.exp(-t) for t in times],
                            "errors": 1e-12, "fit": [1.0, 0.0]}}
    error = Fraction(p["error"])
    return decide(request, margin, error, "toy bound", unit="toy", evidence=evidence,
                  basis=p.get("basis", "exact" if error == 0 else "estimate"))


def raising_judge(evaluation):
    raise ZeroDivisionError("boom")


def allocating_judge(evaluation):
    """Allocates ``megabytes`` MiB (a memory budget below it must stop the instance)."""
    import numpy as np

    block = np.ones(int(evaluation.parameters["megabytes"]) * 2**17)
    return decide(evaluation.request, Fraction(int(block[-1])), Fraction(0), "toy allocation",
                  unit="toy", basis="exact")


def gate_judge(evaluation):
    request = evaluation.request
    gate = os.environ.get("VERIFY_TEST_GATE")
    if gate:
        with open(os.path.join(gate, "calls"), "a", encoding="utf-8") as calls:
            calls.write(f"{request.instance.name} {os.getpid()}\n")
    if gate and not request.instance.name.endswith("#0"):
        os.makedirs(os.path.join(gate, "pids"), exist_ok=True)
        open(os.path.join(gate, "pids", str(os.getpid())), "w").close()
        for _ in range(6000):  # at most ~5 minutes, then give up
            if os.path.exists(os.path.join(gate, "release")):
                break
            time.sleep(0.05)
    return decide(request, Fraction(1), Fraction(0), "toy gate", unit="toy", basis="exact")


def ensure_registered() -> None:
    if "run-test-margin" not in CONCLUSIONS:
        register_conclusion("run-test-margin", summary="a toy bound with a stated margin",
                            needs="nothing", asymptotic=False, keys=KEYS,
                            required=("margin", "error"))(margin_judge)
    if "run-test-raises" not in CONCLUSIONS:
        register_conclusion("run-test-raises", summary="a broken judge", needs="nothing",
                            asymptotic=False)(raising_judge)
    if "run-test-allocates" not in CONCLUSIONS:
        register_conclusion("run-test-allocates", summary="allocates some memory",
                            needs="nothing", asymptotic=False,
                            keys={"megabytes": "MiB to allocate"},
                            required=("megabytes",))(allocating_judge)
    if "run-test-gate" not in CONCLUSIONS:
        register_conclusion("run-test-gate", summary="waits for the test's release file",
                            needs="nothing", asymptotic=False)(gate_judge)
