"""Tiny checks for the runner and report tests (registered once, see ``ensure_registered``).

``run_test_margin`` returns the claim's ``parameters.margin`` (``recheck_margin`` when
re-checking) with error estimate ``parameters.error``; ``run_test_raises`` raises.
``CALLS`` counts the calls made in this process (the resume test uses it).
"""

from __future__ import annotations

import math
from fractions import Fraction

from verify.claim import CHECKS, judge_instance, register_check

CALLS: list[str] = []


def margin_check(request):
    CALLS.append(f"{request.claim.id}/{request.instance.name}{'/re' if request.recheck else ''}")
    p = request.parameters
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
    return judge_instance(margin, Fraction(p["error"]), instance=request.instance.name,
                          family=request.family.name, seed=request.seed, what="toy bound",
                          evidence=evidence)


def raising_check(request):
    raise ZeroDivisionError("boom")


def ensure_registered() -> None:
    for name, function in (("run_test_margin", margin_check), ("run_test_raises",
                                                               raising_check)):
        if name not in CHECKS:
            register_check(name)(function)
