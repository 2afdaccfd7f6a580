r"""Exact identities along the flow: ``identity`` (a statement about finite times).

"``q(t) = v`` at every time" — a conserved quantity (``"sum(z[:, 0])"`` for a flow that keeps
the mean), a flat configuration staying flat (``quantity = "hull-volume"``, ``value = "0"``).
An ``inequality`` cannot state it: the margin of an equality is ``-|q − v| ≤ 0``, which never
exceeds a nonzero error. The rule of an identity is the other way round:

* **violated** when ``|q − v|`` exceeds κ times its error estimate at some checkpoint (basis:
  estimate, the run against its reference run; κ the measured safety factor);
* **holds** when ``|q − v|`` stays within κ times its error estimate at every checkpoint: the
  identity is confirmed *to the accuracy of the run*, never beyond it (basis: estimate). The
  evidence gives the largest discrepancy and its error, and the reason says so.

Checked at the checkpoints only, on ``[from_time, until]``.
"""

from __future__ import annotations

import numpy as np

from verify.analysis.evidence import Basis
from verify.judge._decision import decide, holds, inconclusive
from verify.judge._quantities import (
    _bound_series,
    check_quantity,
    check_window,
    checkpoint_window,
    quantity_columns,
)
from verify.numerics import estimate_bound
from verify.predict._expressions import check_expression
from verify.vocabulary.conclusions import register_conclusion

__all__ = ["judge_identity"]


def _validate_identity(p: dict, source: str, where: str) -> None:
    check_quantity(p, source, where)
    check_expression(p.get("value"), "state", source, f"{where}.value")
    check_window(p, source, where)


@register_conclusion(
    "identity", asymptotic=False,
    summary="A quantity equals a value at every time: q(t) = v (an exact identity: a conserved "
            "quantity, a hull volume staying 0).",
    needs="q and v at every checkpoint with q's error |q(run) − q(reference run)| + rounding "
          "(and v's): violated when |q − v| exceeds its error at some checkpoint; holds when "
          "|q − v| is within its error at every checkpoint — confirmed to the accuracy of the "
          "run, never beyond (basis: estimate). Checkpoints only.",
    keys={"quantity": "a named quantity (vector quantities: every component) or a scalar "
                      "formula over t, z, x, P, x0, V, ...",
          "value": "formula: the value (over x0, V, n, d, ... or t, z, x, P), e.g. '0'",
          "variable": "the tokens of a named quantity: 'z' or 'x'",
          "from_time": "check only the checkpoints with t >= this (default 0)",
          "until": "check only the checkpoints with t <= this (default: the horizon)"},
    required=("quantity", "value"), validate=_validate_identity)
def judge_identity(evaluation):
    """Judge ``identity`` (module docstring)."""
    p, request = evaluation.parameters, evaluation.request
    t, values, errors, reason = quantity_columns(evaluation, p["quantity"], p.get("variable"))
    if reason:
        return inconclusive(request, reason)
    target, target_error = _bound_series(evaluation, p["value"])
    keep = checkpoint_window(t, p)
    if not np.any(keep):
        return inconclusive(request, "no checkpoint between from_time and until.")
    gap = np.abs(values - target[:, None])[keep]
    error = (errors + target_error[:, None])[keep]
    bound = estimate_bound(error)  # what decide compares with (an estimate, times κ)
    what = f"{p['quantity']} = {p['value']}"
    evidence = {"largest_discrepancy": float(np.max(gap)), "checkpoints": int(np.sum(keep)),
                "error_there": float(error.flat[int(np.argmax(gap))])}
    worst = int(np.argmax(gap - bound))
    k, c = np.unravel_index(worst, gap.shape)
    if gap[k, c] > bound[k, c]:
        return decide(request, -float(gap[k, c]), float(error[k, c]),
                      f"{what} at t = {t[keep][k]:.4g}", unit=str(p["quantity"]),
                      evidence=evidence, basis=Basis.ESTIMATE)
    if "until" in p and float(p["until"]) > t[-1]:
        return inconclusive(request, f"{what} within its error up to t = {t[-1]:.4g}, but the "
                            f"statement runs until t = {float(p['until']):.4g}.", evidence)
    return holds(request, f"{what} holds to the accuracy of the run: |q − v| ≤ "
                 f"{evidence['largest_discrepancy']:.3g}, within κ times its error estimate at "
                 f"each of the {int(np.sum(keep))} checkpoints (an identity is confirmed to the "
                 "run's accuracy, never beyond; basis: estimate).",
                 evidence=evidence, unit=str(p["quantity"]), basis=Basis.ESTIMATE)
