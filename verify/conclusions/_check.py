r"""The check ``conclusion``: simulate an instance once and judge every conclusion of the file.

1. Simulate ``request.instance`` to the requested horizon (with the error estimate and the
   reference run every conclusion uses for its error bars).
2. When some conclusion is about ``t → ∞`` (``final_state``), classify the end of the run
   (:func:`verify.equilibria.classify_end_state`): a state near an equilibrium whose Jacobian
   (restricted to the sphere's tangent space, or to the exact invariant subspace the run was
   kept on) has an unstable direction is **metastable**, not a limit. The horizon is then
   doubled — up to ``max_horizon`` (the claim's ``parameters.max_horizon``, default
   :data:`DEFAULT_HORIZON_BUDGET` × the horizon) — and the run repeated; when the budget ends
   first the instance is *inconclusive* with the time reached.
3. Judge each conclusion on the final run; the instance verdict is the worst part
   (:func:`verify.checks._parts.combine_parts`): violated if one is violated, inconclusive if one
   is undecided, holds only if all hold. The evidence lists each part, the end-state
   classification and every extension of the horizon.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from verify.checks._parts import combine_parts, inconclusive
from verify.claim import register_check
from verify.conclusions._base import Evaluation, parse_conclusions

__all__ = ["check_conclusions", "run_until_settled", "DEFAULT_HORIZON_BUDGET"]

#: Without ``parameters.max_horizon``, a metastable run is extended up to this many times its
#: horizon (three doublings).
DEFAULT_HORIZON_BUDGET = 8


def _needs_final_state(specs) -> bool:
    return any(s.kind.final_state or bool(s.parameters.get("final_state")) for s in specs)


def run_until_settled(request, final_state: bool):
    """``(trajectory, extensions, None)`` or ``(None, extensions, inconclusive result)``.

    ``extensions`` lists the end-state classifications (plain dicts) of every run; the horizon
    is doubled while the end state is metastable and the budget allows.
    """
    from verify.checks._runs import simulate_checked
    from verify.equilibria import classify_end_state
    from verify.simulate import scaled_checkpoints

    horizon, checkpoints = Fraction(request.horizon), request.checkpoints
    budget = Fraction(request.parameters.get("max_horizon",
                                             DEFAULT_HORIZON_BUDGET * request.horizon))
    extensions: list[dict] = []
    while True:
        traj, failure = simulate_checked(replace(request, horizon=horizon,
                                                 checkpoints=checkpoints))
        if failure is not None:
            return None, extensions, replace(failure, evidence={**failure.evidence,
                                                                 "end_state": extensions})
        if not final_state:
            return traj, extensions, None
        end = classify_end_state(request.instance, traj)
        extensions.append(end.to_dict())
        if end.kind != "metastable":
            return traj, extensions, None
        if 2 * horizon > budget:
            return None, extensions, inconclusive(
                request, f"metastable: at t = {float(horizon):.4g} the run sits near an "
                f"equilibrium with an unstable direction (rate {end.unstable_rate:.3g} ± "
                f"{end.rate_error:.2g}); doubling the horizon up to the budget "
                f"{float(budget):.4g} did not leave it, so nothing is said about the final "
                "state.", {"end_state": extensions, "time_reached": float(horizon)})
        horizon, checkpoints = 2 * horizon, scaled_checkpoints(checkpoints, 2)


@register_check("conclusion")
def check_conclusions(request):
    """Judge the conclusions in ``request.parameters["conclusions"]`` on one instance."""
    source = getattr(request.claim, "source", "") or "<conjecture>"
    specs = parse_conclusions(request.parameters.get("conclusions"), source)
    traj, extensions, failure = run_until_settled(request, _needs_final_state(specs))
    if failure is not None:
        return failure
    cache: dict = {}
    parts = [spec.kind.judge(Evaluation(request, traj, spec, cache)) for spec in specs]
    evidence = {"horizon_reached": str(traj.times[-1]), "error_estimate": traj.error_estimate,
                "symmetry": None if traj.symmetry is None else traj.symmetry["description"]}
    if extensions:
        evidence["end_state"] = extensions
    if len(parts) == 1:
        part = parts[0]
        return replace(part, evidence={**evidence, **part.evidence})
    return combine_parts(request, parts, evidence)
