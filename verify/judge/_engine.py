r"""The judging engine: one instance of a claim (paper claim or conjecture) → one decision.

:func:`judge_request` runs, for every claim alike:

1. **Scope of each conclusion.** A conclusion with ``when = [...]`` applies only where those
   hypotheses hold; elsewhere it is *not applicable* (an instance where nothing applies is out
   of scope).
2. **The run.** The instance is simulated with its error estimate. When some conclusion is
   about ``t → ∞`` the run goes to ``3/2`` of the horizon ``T``, so that every asymptotic
   conclusion is judged **twice**: on the run stopped at ``T`` and on the whole run. A first
   float64 run that fails is repeated once in arbitrary precision. A field with kinks (a ReLU
   MLP, :attr:`~verify.model.Model.field_has_kinks`) is simulated without one: its estimate
   has no measured coverage, so its parts on an estimate or a fit are undecided, saying why
   (:func:`~verify.judge._decision.unmeasured_estimate`), and its reference run is not made.
3. **The rules for ``t → ∞``.** An asymptotic conclusion *holds* only if it holds at both
   horizons (a hold is re-checked at a longer horizon exactly as a violation is); it is
   *violated* — able to refute — only on a rigorous basis (:class:`~verify.claim.Basis`: a
   certificate that the end will not change, :mod:`verify.analysis.end_certificates`, or exact
   arithmetic); a violation on a weaker basis (a trend on a window, a lemma whose hypotheses are
   read off the run) stays *violated (estimate / fit / evidence)* with its evidence, which
   never refutes and leaves the conclusion pending; a violation at ``T`` must persist at
   ``3/2 T`` (the rules :func:`~verify.judge._decision.finite_run_violation` and
   :func:`~verify.judge._decision.judged_twice`). Predictions are read once per run, at their
   first certified time, and shared by both horizons (:mod:`verify.predict`).
4. **The horizon policy.** While some asymptotic conclusion is inconclusive or violated on a
   non-rigorous basis, the horizon is
   extended and everything is judged again: doubled, or — when the end state sits near an
   equilibrium with an unstable direction of rate :math:`r`, at distance :math:`\delta` on a
   configuration of size :math:`s` — moved to :math:`T + 2\ln(s/\delta)/r` (the time to
   leave it, and as long again to settle), if that is later; up to the budget
   ``parameters.max_horizon`` (default :data:`DEFAULT_HORIZON_BUDGET` × the horizon, counting
   the ``3/2`` re-check). An extension **continues** the last run, and its reference run, each
   from its own end state (``simulate(..., resume=...)``; the flow map composes, so the
   integrated time is the final horizon, not the sum of the horizons tried) when the
   checkpoints a run from 0 would judge are among the ones it recorded (a doubled horizon),
   and is judged on exactly those (:func:`_extended`; otherwise it runs from 0). A float64
   extension that fails is made again in arbitrary precision from 0 (continued from the
   float64 state, it would carry float64's error, amplified),
   unless its estimated cost exceeds what is left of the instance's wall-clock budget
   (:func:`_escalated`: then float64 itself is not tried where it will not resolve the
   scores). When the budget ends first, or an extension's
   integration fails, the instance is *inconclusive* on the last horizon judged, saying how
   far it got, what was tried and why. Variants that no certificate covers (the rescaled
   form with an MLP, several heads or a mask) are not extended unless the claim sets
   ``max_horizon`` (:func:`_extension_pointless`); nor is a float64 run whose undecided parts
   read tokens that float64 no longer stores at its end (tokens drifting along the kernel of
   the conclusion's functional: :func:`_float64_cannot_resolve`).
5. **Combining** the conclusions' decisions (:func:`verify.judge._decision.combine`): violated
   if one is, inconclusive if one is, holds if all hold. The evidence lists every horizon
   tried (``horizons``) with its verdict and, for autonomous runs, the end state.

Examples
--------
>>> from verify.claim import CheckRequest, parse_claim
>>> claim = parse_claim({"id": "toy", "label": "Remark 0", "kind": "remark", "expected":
...     "holds", "statement": "Consensus.", "conclusion": {"type": "consensus", "variable": "x"},
...     "families": [{"name": "pair", "kind": "explicit", "V": [[1, 0], [0, 1]],
...     "x0": [[1, 0], ["3/5", "4/5"]], "model": {"form": "x", "normalisation": "sphere"},
...     "horizon": 20}]}, "<doc>")
>>> family = claim.families[0]
>>> request = CheckRequest(claim, family, family.instance(0), None, family.horizon, 21,
...                        "float64")
>>> result = judge_request(request)
>>> result.verdict.value, [h["horizon"] for h in result.evidence["horizons"]]
('holds', ['20'])
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from fractions import Fraction

import numpy as np

from verify.analysis.equilibria import classify_end_state
from verify.errors import InvalidArgument
from verify.flow.precision_policy import working_bits
from verify.flow.simulate import (
    checkpoint_times,
    float64_resolution_ends,
    seconds_per_unit_time,
    simulate,
)
from verify.flow.trajectory import Trajectory, token_array
from verify.judge._decision import (
    UNMEASURED_ESTIMATE,
    combine,
    inconclusive,
    judged_twice,
    not_applicable,
    unmeasured_estimate,
)
from verify.judge._verdicts import InstanceResult, InstanceVerdict
from verify.model.instance_file import instance_to_toml
from verify.numerics import RESOLUTION_ULPS, ulps
from verify.numerics._monitor import remaining_wall_seconds
from verify.predict import Unavailable
from verify.predict._evaluation import Evaluation, _functional, projected_tokens
from verify.vocabulary.hypothesis_expressions import check_hypotheses

__all__ = ["judge_request", "DEFAULT_HORIZON_BUDGET", "RECHECK_FACTOR", "checkpoint_grid",
           "shared_runs"]

#: Without ``parameters.max_horizon``, runs are extended up to this many times the horizon
#: (the first run already goes to 3/2 of it; one doubling then reaches 3 times it).
DEFAULT_HORIZON_BUDGET = 4
#: An asymptotic conclusion is judged at ``T`` and re-checked at ``RECHECK_FACTOR · T``.
RECHECK_FACTOR = Fraction(3, 2)
#: ``Trajectory.stats`` key of an extension made again in arbitrary precision: what was tried.
ESCALATED = "escalated"


def checkpoint_grid(horizon: Fraction, count: int, run_to: Fraction) -> list[Fraction]:
    """``count`` equally spaced checkpoints on ``[0, horizon]``, continued with the same
    spacing up to ``run_to`` (which ends the list).

    >>> [str(t) for t in checkpoint_grid(Fraction(2), 3, Fraction(3))]
    ['0', '1', '2', '3']
    """
    step = horizon / (count - 1)
    times = [step * k for k in range(count)]
    while times[-1] + step < run_to:
        times.append(times[-1] + step)
    if times[-1] < run_to:
        times.append(run_to)
    return times


def _count(request) -> int:
    given = request.checkpoints
    if isinstance(given, int):
        return given
    if given is not None:
        return len(given)
    return len(checkpoint_times(request.horizon, None))


def _times(request, horizon: Fraction, run_to: Fraction) -> list[Fraction]:
    times = checkpoint_grid(horizon, _count(request), run_to)
    h = request.instance.model.h
    if h is not None:  # discrete layers: whole numbers of layers only
        times = sorted({round(t / h) * h for t in times})
    return times


_SHARED: ContextVar[dict | None] = ContextVar("shared_runs", default=None)


@contextmanager
def shared_runs() -> Iterator[dict]:
    r"""Within the block, the first runs of :func:`judge_request` are shared: a request whose
    first run is ``simulate(instance, run_to, checkpoints=times, precision=p,
    error_estimate=e)`` with an instance, :math:`T_{\text{run}}`, checkpoints, precision and
    ``e`` equal to an earlier request's gets that request's trajectory instead of integrating
    it again (two claims judged on one instance: ``polytope`` and ``polytope-vertices-generic``
    on ``paper-uniform-2d``).

    It is the very trajectory a run of its own would compute: ``simulate`` depends on nothing
    but these arguments (its one pseudo-random draw is seeded), the instances are compared by
    their exact instance files (:func:`~verify.model.instance_file.instance_to_toml`, which
    reads back to the same instance) and the arguments exactly, and no judge changes a
    trajectory (an extension continues it into a new one). Only the first run is shared, never
    an extension, and not under an instance's wall-clock budget
    (:func:`~verify.numerics._monitor.wall_budget`: where such a run stops depends on the time
    its own instance had); the shared runs (yielded: ``{key: Trajectory}``) are dropped with the
    block. One per thread and task (a :class:`~contextvars.ContextVar`).

    >>> with shared_runs() as runs:
    ...     len(runs)
    0
    """
    runs: dict = {}
    token = _SHARED.set(runs)
    try:
        yield runs
    finally:
        _SHARED.reset(token)


def _first_run(instance, run_to: Fraction, times: list[Fraction], precision,
               error_estimate: bool = True) -> Trajectory:
    """``simulate(instance, run_to, checkpoints=times, precision=precision,
    error_estimate=error_estimate)``, shared within :func:`shared_runs`."""
    def run() -> Trajectory:
        return simulate(instance, run_to, checkpoints=times, precision=precision,
                        error_estimate=error_estimate)

    runs = _SHARED.get()
    if runs is None or remaining_wall_seconds() is not None:  # where a budgeted run stops
        return run()  # is its own
    key = (instance_to_toml(instance), str(run_to), tuple(str(t) for t in times),
           repr(precision), error_estimate)
    if key not in runs:
        runs[key] = run()
    return runs[key]


def _simulate(request, horizon: Fraction, run_to: Fraction, previous=None):
    """``(trajectory, None)`` or ``(None, inconclusive result)``. A float64 run that fails
    (float64 no longer resolves the scores, typically) is repeated once in arbitrary precision
    (``"auto"``). With ``previous`` (the run of the last horizon judged) the run is *extended*
    (:func:`_extended`) and a failure says what was tried."""
    times = _times(request, horizon, run_to)
    tried = None
    if previous is not None:
        traj, tried = _extended(request, previous, times, run_to)
        if traj is None:
            return None, inconclusive(request, tried)
    else:
        estimate = _estimate_decides(request)
        traj = _first_run(request.instance, run_to, times, request.precision, estimate)
        if not traj.success and request.precision == "float64":
            traj = _first_run(request.instance, run_to, times, "auto", estimate)
    if not traj.success:
        return None, inconclusive(request, f"the integration to t = {float(run_to):.4g} failed "
                                  f"({traj.status}: {traj.message})"
                                  + ("." if tried is None else f"; tried: {tried}."))
    if traj.error is None and _estimate_decides(request):
        return None, inconclusive(request, "the trajectory has no error estimate (the "
                                  "reference run failed: "
                                  f"{(traj.reference or {}).get('message', '')}), so no margin "
                                  "can be judged.", {"reference": traj.reference})
    return traj, None


def _estimate_decides(request) -> bool:
    """Whether the run's error estimate can decide anything, so that its reference run is
    worth making: not for a field with kinks (:attr:`~verify.model.Model.field_has_kinks`),
    whose estimate has no measured coverage (:data:`~verify.judge._decision.UNMEASURED_ESTIMATE`;
    its parts on an estimate or a fit are undecided, :func:`unmeasured_estimate`)."""
    return not request.instance.model.field_has_kinks


def _extended(request, previous, times: list[Fraction], run_to: Fraction):
    """``(trajectory, what was tried)``: the run of the last horizon judged, ``previous``,
    continued to ``run_to`` — run and reference run each from its own end state
    (``simulate(..., resume=previous)``), so that the integrated time is ``run_to`` in all,
    not the sum of the horizons tried — and judged on exactly the checkpoints a run from 0
    would have, ``times``. That needs ``times`` up to ``previous``'s end to be among its
    checkpoints (a doubled horizon); otherwise (a horizon aimed past a saddle, or cut at the
    budget) the run is made from 0, as its judged checkpoints cannot be recorded from the
    end. A float64 extension goes on in arbitrary precision when it fails
    (:func:`_escalated`); ``(None, reason)`` when that cannot be tried."""
    end = previous.times[-1]
    before = [t for t in times if t <= end]
    resume = previous if set(before) <= set(previous.times) else None
    full = times if resume is None else [*previous.times, *(t for t in times if t > end)]
    if request.precision != "float64":
        traj = simulate(request.instance, run_to, checkpoints=full,
                        precision=request.precision, resume=resume,
                        error_estimate=_estimate_decides(request))
        tried = f"{request.precision} " + (f"continued from t = {float(end):.4g}"
                                           if resume is not None else "from t = 0")
    else:
        traj, tried = _escalated(request, previous, resume, full, times, run_to)
    if traj is not None and traj.success and resume is not None:
        kept = set(before)
        traj = traj.at([t for t in full if t in kept or t > end])
    return traj, tried


def _escalated(request, previous, resume, full: list[Fraction], times: list[Fraction],
               run_to: Fraction):
    """A float64 extension of ``previous`` to ``run_to`` (checkpoints ``full``), continuing
    ``resume`` (``previous`` or ``None``: from 0), made again in arbitrary precision
    (``"auto"``: :func:`~verify.flow.precision_policy.working_bits` for ``run_to``) from 0,
    at the checkpoints ``times``, when float64 fails. Not from ``resume``'s end: its float64
    state carries float64's error, which the growth that made float64 fail then amplifies
    (real-heads 4.7 continued from t = 24: an error estimate of 0.18 at t = 32 instead of
    6·10⁻¹¹ from 0, and another leader map read). Arbitrary
    precision is not tried when its estimated cost (:func:`_arb_seconds`) exceeds what is left
    of the instance's wall-clock budget (:func:`~verify.numerics._monitor.wall_budget`, when
    one is set); float64 is not tried either then if it will not resolve the scores before
    ``run_to`` (:func:`~verify.flow.simulate.float64_resolution_ends`). ``(trajectory, what
    was tried)`` or ``(None, why nothing more was tried)``."""
    start = 0.0 if resume is None else float(resume.times[-1])
    where = f"continued from t = {start:.4g}" if resume is not None else "from t = 0"
    need = _arb_seconds(request, previous, 0.0, float(run_to))
    remaining = remaining_wall_seconds()
    hopeless = need is not None and remaining is not None and need > remaining
    cost = f"arbitrary precision would need ≈ {need:.0f} s, {remaining:.0f} s of the " \
        "instance's budget remain" if hopeless else ""
    resolves_until = float64_resolution_ends(previous, request.instance)
    if hopeless and resolves_until is not None and resolves_until < float(run_to):
        return None, (f"the extension to t = {float(run_to):.4g} is not integrated: float64 "
                      f"will not resolve the scaled score margins beyond t ≈ "
                      f"{resolves_until:.3g} (their decay up to t = {start:.4g}, continued), "
                      f"and {cost}.")
    traj = simulate(request.instance, run_to, checkpoints=full, precision="float64",
                    resume=resume, error_estimate=_estimate_decides(request))
    tried = f"float64 {where}"
    if traj.success:
        return traj, tried
    tried = f"{tried} ({traj.status}: {traj.message})"
    if hopeless:
        return None, (f"the extension to t = {float(run_to):.4g} failed: {tried}; it was not "
                      f"tried in arbitrary precision: {cost}.")
    traj = simulate(request.instance, run_to, checkpoints=times, precision="auto",
                    error_estimate=_estimate_decides(request))
    tried = f"{tried}, then arbitrary precision from t = 0"
    traj.stats[ESCALATED] = tried  # named in the horizons' evidence and the reason
    return traj, tried


def _arb_seconds(request, previous, start: float, run_to: float) -> float | None:
    """The estimated wall seconds of an arbitrary-precision run from ``start`` to ``run_to``
    with its reference (:func:`_escalated`), from ``previous``'s arb reference run, or
    ``None`` when it has none."""
    ref = previous.reference_run
    rate = None if ref is None else seconds_per_unit_time(ref)
    bits = (ref.precision or {}).get("bits") if ref is not None else None
    if rate is None or not bits or (ref.precision or {}).get("backend") != "arb":
        return None
    scale = 3 * working_bits(request.instance, run_to) / bits
    return rate * (run_to - start) * scale


def _judge(request, traj, spec, cache: dict, shared: dict, run) -> InstanceResult:
    """One conclusion on ``traj``, a part of ``run`` (``cache`` shared by the conclusions judged
    on that part: certificates, fits; ``shared`` by every part of ``run``: the predictions, read
    once at their first certified time); an error of the user's data (``InvalidArgument``) is
    raised, and the instance's verdict is *error* (:mod:`verify.run._tasks`)."""

    try:
        return spec.kind.judge(Evaluation(request, traj, spec, cache, shared, run))
    except Unavailable as exc:
        return inconclusive(request, f"{spec.where} ({spec.type}): the prediction is not "
                            f"available at t = {float(traj.times[-1]):.4g}: {exc}")
    except InvalidArgument as exc:
        raise InvalidArgument(f"{spec.where} ({spec.type}) could not be evaluated: {exc}") \
            from None


def _end_state(request, traj):
    """The classification of an autonomous run's end (for the record and to aim the next
    horizon), or ``None``."""
    if request.instance.model.rescaled:
        return None

    try:
        return classify_end_state(request.instance, traj)
    except Exception:  # noqa: BLE001 - only aims the horizon; never decides
        return None


def _next_horizon(horizon: Fraction, end) -> Fraction:
    """Doubled, or aimed past the escape from a saddle (module docstring)."""
    doubled = 2 * horizon
    if end is None or end.kind != "metastable" or not end.unstable_rate > 0:
        return doubled
    scale = max(float(abs(end.equilibrium).max()), 1e-300) if end.equilibrium is not None \
        else 1.0
    distance = max(end.distance, 1e-300) if math.isfinite(end.distance) else scale
    escape = math.log(max(scale / distance, math.e)) / end.unstable_rate
    aimed = float(horizon) + 2 * escape  # leave the saddle, then settle for as long again
    unit = 10 ** max(0, math.floor(math.log10(aimed)) - 1)  # two significant digits, up
    return max(doubled, Fraction(math.ceil(aimed / unit) * unit))


def _extension_pointless(request) -> str | None:
    """Why extending the horizon cannot change this instance's verdict (``None`` when it can).

    For the rescaled form with an MLP, several heads, a mask, a normalisation or a non-softmax
    attention, no certificate that the end will not change exists
    (:mod:`verify.analysis.end_certificates`: the field depends on ``t`` and none of the theory's
    trapping arguments covers the variant), so no longer run can refute. Such a variant is
    judged at the claim's horizon and its ``3/2`` re-check only, unless the claim asks for
    longer runs with ``parameters.max_horizon``: an ReLU field integrated to ``4T`` cost a
    third of the suite and stalled in the non-smooth sliding without changing a verdict.
    """
    model = request.instance.model
    if "max_horizon" in request.parameters or not model.rescaled or not model.departures():
        return None
    return (f"no certificate that the end will not change exists for this variant "
            f"({', '.join(model.departures())}): a longer run could never refute, and a hold "
            "not seen at the claim's horizon is not searched for further (set "
            "parameters.max_horizon in the claim to integrate longer)")


def _resolution_ratio(ev) -> np.ndarray:
    r"""Per checkpoint of ``ev``'s run, how finely float64 can store the tokens the conclusion
    reads, relative to their size: :math:`R(t) = \max_{i,k} \varepsilon\,(|W|\,|v_i(t)|)_k /
    \max_{i,k} |(W v_i(t))_k|`, ``v`` the conclusion's variable (``z``, ``x`` or ``x/|x|``),
    ``W`` its functional (the identity without one), ``|·|`` entrywise: one ulp of every entry
    of ``v_i``, carried through ``W``, against the largest projected token. Without a functional
    :math:`R \le \varepsilon`; with one, ``R`` grows where the tokens grow along the kernel of
    ``W`` while ``W v`` stays bounded (a follower drifting along its hyperplane): where
    :math:`R \ge 1` some token's ``W v_i`` has no digit in float64, however it is integrated."""
    v = token_array(ev.trajectory, ev.variable())
    W = _functional(ev)
    weights = np.eye(v.shape[2]) if W is None else np.abs(W.array)
    floor = ulps(RESOLUTION_ULPS, np.max(np.abs(v) @ weights.T, axis=(1, 2)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return floor / np.max(np.abs(projected_tokens(ev, v)), axis=(1, 2))


def _float64_cannot_resolve(request, traj, pending: list, cache: dict, shared: dict,
                            run_to: Fraction) -> str | None:
    r"""Why no float64 run to ``run_to`` (the next horizon's re-check) can decide the parts
    ``pending`` (``(part, spec)`` pairs), or ``None`` when one might.

    The ladder's next rung is a float64 run when the claim asks for float64, ``traj`` (the
    last run) is float64, and float64 will still resolve the scores at ``run_to``
    (:func:`~verify.flow.simulate.float64_resolution_ends`; otherwise the float64 run stalls
    and arbitrary precision is tried, which can resolve them: that rung is kept). Such a run
    stores the tokens a conclusion reads to one ulp at best, so where the resolution ratio
    :func:`_resolution_ratio` is ``≥ 1`` some token's projected quantity has no digit — its
    limit, read off the run's last checkpoints, is undetermined, and a statement about every
    token's limit can be neither held nor violated on it. The rule asks that ``R`` be ``≥ 1``
    *already* at the end :math:`t_1 = 3T/2` of ``traj`` and not have decreased over its last
    third (from :math:`t_a`): a hold at the next horizon :math:`T' > T` needs its re-check at
    :math:`3T'/2 > t_1`, whose limits are read at checkpoints beyond :math:`t_1`, where the
    drifting tokens only grow further. Nothing is extrapolated beyond the run: continuing
    ``R`` at its observed rate would have stopped codimension's random-3d#0 a horizon
    earlier, but its ``W z`` starts to grow too after t ≈ 25 (an arbitrary-precision run:
    0.93 at 28, 8·10⁶ at 42), and the extrapolated 6·10⁷ at t = 42 is 5 there. The rule
    applies when every pending part is inconclusive without a margin (its judge could not
    form its quantity on this run: no weak violation waiting for a certificate, no margin
    that a longer run might carry above its error).
    """
    if request.precision != "float64" or (traj.precision or {}).get("backend") != "float64":
        return None
    scores_until = float64_resolution_ends(traj, request.instance)
    if scores_until is not None and scores_until < float(run_to):
        return None
    t = traj.t
    a = min(int(np.searchsorted(t, t[-1] - (t[-1] - t[0]) / 3)), len(t) - 2)
    said = []
    for part, spec in pending:
        if part.verdict is not InstanceVerdict.INCONCLUSIVE or part.margin is not None:
            return None
        try:
            ratio = _resolution_ratio(Evaluation(request, traj, spec, cache, shared, traj))
        except (Unavailable, InvalidArgument):
            return None
        now, before = float(ratio[-1]), float(ratio[a])
        if not (math.isfinite(now) and now > 0 and math.isfinite(before) and before > 0):
            return None
        if now < 1 or now < before:
            return None
        said.append(f"{spec.where} ({spec.type}): {now:.2g} at t = {t[-1]:.4g}, up from "
                    f"{before:.2g} at t = {t[a]:.4g}")
    return ("float64 no longer resolves the tokens these parts read, and the next run is "
            "judged beyond here — the ulp of their entries through the functional, over the "
            f"largest projected token, is {'; '.join(said)}: some token has no digit, its "
            "limit is undetermined; arbitrary precision could resolve them, but the ladder "
            'tries it only where float64 fails (precision = "auto" integrates in it)')


def judge_request(request) -> InstanceResult:
    """Judge the claim's conclusions on ``request.instance`` (see the module docstring)."""
    specs = request.claim.conclusions
    instance = request.instance
    parts_na, applying = [], []
    for spec in specs:
        scope = check_hypotheses(spec.when, instance) if spec.when else None
        if scope is None or scope.holds is True:
            applying.append(spec)
        elif scope.holds is False:
            parts_na.append(not_applicable(request, f"{spec.where} ({spec.type}) does not apply:"
                                           f" {'; '.join(scope.explanations)}"))
        else:
            parts_na.append(inconclusive(request, f"whether {spec.where} applies is undecided: "
                                         f"{'; '.join(scope.explanations)}"))
    if not applying:
        return combine(request, parts_na)
    asymptotic = any(spec.asymptotic for spec in applying)
    horizon = Fraction(request.horizon)
    budget = Fraction(request.parameters.get("max_horizon",
                                             DEFAULT_HORIZON_BUDGET * horizon))
    if asymptotic and horizon * RECHECK_FACTOR > budget:
        horizon = max(budget / RECHECK_FACTOR, horizon / RECHECK_FACTOR)
    attempts: list[dict] = []
    overall = traj = None  # the verdict and the run at the last horizon judged
    while True:
        run_to = horizon * RECHECK_FACTOR if asymptotic else horizon
        traj, failure = _simulate(request, horizon, run_to, traj)
        if failure is not None and overall is not None:  # the last horizon judged stands
            return replace(overall, reason=f"{overall.reason} [extending the horizon stopped "
                           f"here: {failure.reason}]")
        if failure is not None:
            return replace(failure, evidence={**failure.evidence, "horizons": attempts})
        prefix = traj.until(horizon) if asymptotic else traj
        at_T, at_R, shared = {}, {}, {}
        parts = list(parts_na)
        for spec in applying:
            if spec.asymptotic:
                parts.append(judged_twice(request,
                                          _judge(request, prefix, spec, at_T, shared, traj),
                                          _judge(request, traj, spec, at_R, shared, traj),
                                          horizon, run_to))
            else:
                parts.append(_judge(request, traj, spec, at_R, shared, traj))
        if not _estimate_decides(request):
            parts = [unmeasured_estimate(p) for p in parts]
        end = _end_state(request, traj) if asymptotic else None
        attempts.append({"horizon": str(horizon), "re_check": str(run_to) if asymptotic
                         else None, "verdict": combine(request, parts).verdict.value,
                         **({"end_state": end.kind, "end_state_reason": end.reason}
                            if end is not None else {}),
                         **({"integration": traj.stats[ESCALATED]}
                            if ESCALATED in traj.stats else {})})
        overall = combine(request, parts, {"horizons": attempts,
                                           "error_estimate": traj.error_estimate,
                                           **({} if _estimate_decides(request) else
                                              {"no_error_estimate": UNMEASURED_ESTIMATE}),
                                           "symmetry": None if traj.symmetry is None
                                           else traj.symmetry["description"]})
        pending = [(p, spec) for p, spec in zip(parts[len(parts_na):], applying, strict=True)
                   if spec.asymptotic and (p.verdict is InstanceVerdict.INCONCLUSIVE
                                           or p.weak_violation)]
        if not pending or overall.rigorous_violation:
            return overall
        nxt = _next_horizon(horizon, end)
        pointless = _extension_pointless(request)
        if pointless is not None:
            return replace(overall, reason=f"{overall.reason} [the horizon is not extended: "
                           f"{pointless}]")
        if horizon * RECHECK_FACTOR >= budget:
            how = f"; the last: {traj.stats[ESCALATED]}" if ESCALATED in traj.stats else ""
            return replace(overall, reason=f"{overall.reason} [the horizon budget "
                           f"max_horizon = {float(budget):.4g} ends here, after "
                           f"{len(attempts)} horizon(s) up to t = {float(run_to):.4g}{how}]")
        horizon = min(nxt, budget / RECHECK_FACTOR)
        unresolved = _float64_cannot_resolve(request, traj, pending, at_R, shared,
                                             horizon * RECHECK_FACTOR)
        if unresolved is not None:
            return replace(overall, reason=f"{overall.reason} [the horizon is not extended: "
                           f"{unresolved}]")
