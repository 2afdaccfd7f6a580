r"""Simulate an instance: compose the vector field, a backend, a solver and a step-size
controller (:mod:`verify.flow.solvers`) into a :class:`~verify.flow.trajectory.Trajectory` that
carries its own error estimate. Certified legs (:mod:`verify.flow.legs`) take over from the solver
in the one leg loop, ``_solve``.

* float64: SciPy's DOP853 (order 8, embedded error control) with dense output at checkpoints;
* arbitrary precision: Gragg–Bulirsch–Stoer extrapolation with exact rational coefficients
  (:class:`verify.numerics.GraggBulirschStoer`) in python-flint ``arb`` at a precision chosen
  from what grows along the run (:func:`verify.flow.precision_policy.working_bits`: ``2 μ T / ln 2``
  extra bits where the scores grow like ``e^{2 μ t}``, constant in ``T`` on the sphere and with
  pre-LN) or given;
* discrete layers: the recursion itself, in the backend's arithmetic.

**Error estimate.** Unless ``error_estimate=False``, the run is repeated by the same call with a
tighter controller and more bits (:func:`reference_settings`,
:meth:`~verify.flow.solvers.StepController.tighter`) and every checkpoint records how far the
two runs are apart (``Trajectory.error``) and on how many digits they agree
(``Trajectory.digits``). Where a float64 reference suffices (large systems; one head in
continuous time without an MLP whose scores stay bounded, or whose rescaled tokens grow by at
most ``e^3``: :func:`~verify.flow.precision_policy.float64_reference_suffices`) it starts from
:func:`float64_twin`'s tokens and the field's round-off, measured in ``arb`` at a few
checkpoints (:mod:`verify.flow.roundoff`), is added.

**Certified hardmax continuation** (rescaled softmax form; ``continuation=False`` turns
it off). After every DOP853 step the scores are tested; once every row's scaled margin minus its
error bound makes the float64 attention exactly 0/1 and the leader map ``l`` is idempotent, the
run follows the exact flow of the linear field, ``z_i(t) = z_{l(i)} + e^{-(t-t0)V}(z_i(t0) -
z_{l(i)})``, checks the leader map on a grid with cancellation-free gaps and falls back to DOP853
where a margin closes (:mod:`verify.flow.continuation`). The state error the switch assumed is
checked against the reference run; if the reference contradicts it, the run is made again without
the continuation (``stats["continuation_rejected"]``), and if that fails its error estimate is
``inf`` after the switch. ``arb`` runs do the same at every checkpoint,
in balls, once the non-leader weights are below the working precision (without symmetry
projection; a run of ``V`` with ``λ_1 ≈ 6.7`` to ``T = 15`` at 20 digits: 2.6 s instead of 10.5 s).
The run and its reference run switch on their own.

**Certified consensus on the sphere** (``V = cI``, ``c ≥ 0``, tokens on the sphere; the same
switch). Every cap of angle below ``π/2`` that holds all tokens holds them for all later time
(:mod:`verify.flow.consensus_cap`); once the tokens fit in a cap of chord ``≤ 100·atol`` (tested
after every step, float64 and arb), the run stops integrating, repeats that state at the later
checkpoints and adds to their error estimate the chord, widened by twice the state error there
(the exact tokens' cap is the computed one widened by it). A long horizon then costs what reaching
consensus costs (the explicit integrators are otherwise held to small steps by stability there).

For ``V`` symmetric, or diagonalisable over
``R`` with a well-conditioned eigenvector matrix, the float64 run integrates in eigen-coordinates
(:class:`~verify.flow.fields.EigenRescaledField`).

**Exact invariant sets.** With ``symmetry="auto"`` the exact symmetries of the weights and the
initial tokens are detected (:func:`verify.exact.symmetry.find_symmetries`); if there are any, the
state is projected back onto the fixed subspace after every step (exactly, in the backend's
arithmetic) and the trajectory records it.

Examples
--------
>>> from verify.model import Model, Instance
>>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, 0], [0, 1], ["1/2", "1/2"]])
>>> traj = simulate(inst, 3, checkpoints=4)
>>> traj.status, traj.t.tolist()
('success', [0.0, 1.0, 2.0, 3.0])
>>> bool(traj.digits.min() > 8)              # agreement with the tighter re-run
True
"""

from __future__ import annotations

import copy
import math
import time
from fractions import Fraction

import numpy as np

from verify.errors import IntegrationError, InvalidArgument
from verify.exact.inputs import as_float_array, to_rational
from verify.exact.symmetry import find_symmetries
from verify.flow.consensus_cap import CapCertifier, CapLeg, cap_bound, cap_unavailable
from verify.flow.continuation import (
    ArbHardmaxCertifier,
    HardmaxCertifier,
    continuation_unavailable,
)
from verify.flow.exponential import ValueExponential
from verify.flow.fields import EigenRescaledField, VectorField, attention_weights
from verify.flow.legs import Certifier, follow_leg
from verify.flow.precision_policy import (
    DEFAULT_DIGITS,
    choose_bits,
    reference_settings,
    score_growth_rate,
    working_bits,
)
from verify.flow.roundoff import SPOT_CHECKS, accumulated, score_perturbation, spot_check
from verify.flow.solvers import (
    DOP853,
    Extrapolation,
    ResidualLayers,
    Solver,
    StepController,
)
from verify.flow.trajectory import Trajectory
from verify.model import Instance
from verify.numerics import (
    ESTIMATE_SAFETY,
    RESOLUTION_ULPS,
    Arb,
    Backend,
    Float64,
    reachable_rtol,
    ulps,
)
from verify.numerics._monitor import RunMonitor, stderr_progress

__all__ = ["simulate", "choose_bits", "reference_settings", "checkpoint_times",
           "scaled_checkpoints", "seconds_per_unit_time", "float64_resolution_ends"]

DEFAULT_FLOAT_RTOL = 1e-10
DEFAULT_FLOAT_ATOL = 1e-12
SYMMETRY_MAX_DIM = 6  # exact symmetries are searched for d ≤ 6
STALL_WINDOW = 2_000  # DOP853 steps between two checks that the horizon is still reachable
_LOOP = "_leg_loop"  # the key under which _solve hands its _LegLoop to _finish (not saved)


def checkpoint_times(horizon: object, checkpoints: int | list | None) -> list[Fraction]:
    """Exact checkpoint times: ``checkpoints`` equally spaced points on ``[0, horizon]``
    (default one per unit of time, at least 11), or an explicit increasing list from 0.

    >>> [str(t) for t in checkpoint_times(1, 3)]
    ['0', '1/2', '1']
    """
    T, _ = to_rational(horizon, "horizon")
    if T <= 0:
        raise InvalidArgument(f"horizon={horizon!r} must be positive.")
    if checkpoints is None:
        checkpoints = max(11, min(201, int(T) + 1))
    if isinstance(checkpoints, int):
        if checkpoints < 2:
            raise InvalidArgument(f"checkpoints={checkpoints} must be at least 2 (0 and horizon).")
        return [T * k / (checkpoints - 1) for k in range(checkpoints)]
    times = [to_rational(v, "checkpoints[]")[0] for v in checkpoints]
    if times[0] != 0 or any(b <= a for a, b in zip(times, times[1:], strict=False)):
        raise InvalidArgument("checkpoints must increase strictly and start at 0.")
    return times


def scaled_checkpoints(checkpoints: int | list | tuple | None, factor: object
                       ) -> int | tuple | None:
    """Checkpoints for the horizon × ``factor``: the same spacing (a count grows to cover the
    longer interval) or the same times scaled (an explicit list); ``None`` stays ``None``.

    >>> scaled_checkpoints(33, Fraction(3, 2)), [str(t) for t in scaled_checkpoints((0, 1), 2)]
    (49, ['0', '2'])
    """
    if checkpoints is None:
        return None
    factor = Fraction(factor)
    if isinstance(checkpoints, int):
        return int(math.ceil((checkpoints - 1) * factor)) + 1
    return tuple(Fraction(t) * factor for t in checkpoints)


def simulate(instance: Instance, horizon: object, *, checkpoints: int | list | None = None,
             precision: str | int | Backend = "float64", rtol: float | None = None,
             atol: float | None = None, error_estimate: bool = True, symmetry: str = "auto",
             max_steps: int = 200_000, throw: bool = False,
             continuation: bool = True, progress=None,
             budget: float | None = None, resume: Trajectory | None = None) -> Trajectory:
    """Integrate ``instance`` from 0 to ``horizon`` and return its :class:`Trajectory`.

    Parameters
    ----------
    instance : Instance
    horizon : number
        Final time (for ``form="discrete"``: ``horizon / h`` layers).
    checkpoints : int or list, optional
        See :func:`checkpoint_times`.
    precision : "float64", "auto", int or Backend
        ``"float64"`` (fast path), ``"auto"`` (arb at
        :func:`~verify.flow.precision_policy.working_bits`, 20 correct digits), an integer number
        ``D`` of correct decimal digits to aim at (arb at ``working_bits(instance, horizon, D)``:
        ``D`` digits plus the growth of the scores and guard bits; tolerance ``10^-(D+1)``), or a
        backend object.
    rtol, atol : float, optional
        Tolerances of the integrator (defaults: 1e-10/1e-12 in float64, ``10^-21`` for
        ``"auto"``, ``10^-(D+1)`` for ``D`` digits).
    error_estimate : bool
        Re-run at tighter tolerance and higher precision and record the differences.
    symmetry : {"auto", "off"}
        Keep the run exactly on the invariant subspace of the instance's exact symmetries
        (searched for one head, full attention, no MLP and ``d ≤ 6``).
    max_steps : int
    throw : bool
        Raise :class:`~verify.errors.IntegrationError` instead of returning a failed trajectory.
    continuation : bool
        Runs of the rescaled softmax form: once every scaled score margin minus its error bound
        certifies a 0/1 attention (float64: weights exactly 0 and 1, tested after every step;
        arb: weights below the working precision, gap balls tested at every checkpoint),
        continue with the exact flow of the linear field (:mod:`verify.flow.continuation`), checking
        the leader map up to the horizon and falling back to integration if a margin closes.
        ``Trajectory.continuation`` records where it was used. Tokens on the sphere with
        ``V = cI`` (``c ≥ 0``): once they fit in a cap of chord ``≤ 100·atol`` the state is kept
        from there on (certified consensus, :mod:`verify.flow.consensus_cap`).
    progress : callable or True, optional
        Called with a line (``t`` reached, share of ``T``, steps, elapsed time, ETA) at most
        every 10 s of a long run; ``True`` writes the lines to standard error.
    budget : float, optional
        Wall-clock seconds for the whole call (run and reference); when used up the run stops
        with status ``"budget"`` and the checkpoints reached (an honest partial result).
    resume : Trajectory, optional
        A trajectory this function returned for ``instance`` whose checkpoints are the first of
        ``checkpoints`` (give them as a list): the run is **continued** from its last state
        instead of integrated from 0 — see *Resuming* below.

    Resuming
    --------
    The flow map composes, ``Φ(0, T₂) = Φ(T₁, T₂) ∘ Φ(0, T₁)``, so a run to ``T₂`` is the run to
    ``T₁`` continued from its own state ``y(T₁)``: the integrated time is ``T₂ − T₁``, not
    ``T₂``. The run continues from ``resume``'s state at ``T₁`` (in its own arithmetic), on the
    certified leg it was on if one held to ``T₁`` (hardmax continuation or consensus cap: its
    checks go on from ``T₁``), with its counts (steps, legs, fallbacks); its reference run
    continues likewise from **its own** state at ``T₁``, never from the run's, so the two
    routes stay independent and ``|run − reference|`` at ``t ≤ T₂`` is the same error estimate
    as for a run from 0 (the arithmetic and tolerances are those ``precision`` gives for
    ``T₂``: a float64 run may continue in ``arb``, the bits follow ``T₂``; the states at
    ``T₁`` keep the digits they had). Only the step sequence differs, so a resumed run agrees
    with a run from 0 within their error estimates, not bit for bit. Without a resume point
    (``resume`` failed, or is a view such as :meth:`Trajectory.until`) this is an error; a
    reference that cannot be continued (it failed) is integrated from 0.
    ``Trajectory.stats["resumed_at"]`` lists the times a run was continued from.

    Examples
    --------
    >>> from verify.model import Model, Instance
    >>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, 0], [0, 1], ["1/2", "1/2"]])
    >>> first = simulate(inst, 2, checkpoints=[0, 1, 2])
    >>> longer = simulate(inst, 4, checkpoints=[0, 1, 2, 3, 4], resume=first)
    >>> longer.stats["resumed_at"], [str(t) for t in longer.times]
    ([2.0], ['0', '1', '2', '3', '4'])
    >>> bool(longer.digits.min() > 8)
    True
    """
    times = checkpoint_times(horizon, checkpoints)
    backend = _backend_for(precision, instance, float(times[-1]))
    controller = _controller_for(precision, backend, rtol, atol, max_steps)
    if symmetry not in ("auto", "off"):
        raise InvalidArgument(f"symmetry={symmetry!r} must be 'auto' or 'off'.")
    if resume is not None:
        _check_resumable(resume, instance, times)
        group = resume.resume_point.group
    else:
        group = _symmetry_group(instance) if symmetry == "auto" else None

    if progress is True:
        progress = stderr_progress("verify simulate")
    started = time.monotonic()

    def monitor(label: str, steps: int) -> RunMonitor:
        return RunMonitor(0.0, float(times[-1]), max_steps=steps, window=STALL_WINDOW,
                          progress=progress, budget=budget, label=label, started=started)

    if resume is None:
        traj = _run(instance, times, backend, controller, group, continuation,
                    monitor("run", controller.max_steps))
    else:
        traj = _resumed_run(instance, times, backend, controller, resume, continuation,
                            monitor("run", controller.max_steps))
    if traj.success and error_estimate:
        # the reference run: the same call with a tighter controller and more bits
        ref_backend, ref_rtol = reference_settings(backend, controller.rtol, instance,
                                                   float(times[-1]))
        if group is not None and isinstance(ref_backend, Float64):
            # kept on a symmetry's subspace, float64 integrates by extrapolation, whose floor
            # is above DOP853's: the reference's tolerance (and the floor added for it) is that
            ref_rtol = max(ref_rtol, reachable_rtol(ref_backend))
        ref_controller = controller.tighter(ref_rtol)
        ref_monitor = monitor("reference run", ref_controller.max_steps)
        previous_ref = None if resume is None else resume.reference_run
        if previous_ref is not None and previous_ref.resume_point is not None:
            ref = _resumed_run(instance, times, ref_backend, ref_controller, previous_ref,
                               continuation, ref_monitor)
        else:
            ref = _reference_run(instance, times, traj, ref_backend, ref_controller, group,
                                 continuation, ref_monitor)
        traj.reference = {"backend": ref_backend.name, "bits": ref_backend.bits,
                          "rtol": ref_rtol, "status": ref.status, "stats": ref.stats}
        if ref.success:
            traj.entry_error = entry_differences(traj, ref, ref_backend.bits)
            traj.error = np.max(traj.entry_error, axis=2)
            both_infinite = np.isinf(traj.margins) & np.isinf(ref.margins)  # a lone token
            with np.errstate(invalid="ignore"):
                traj.margin_error = np.where(both_infinite, 0.0,
                                             np.abs(traj.margins - ref.margins))
            traj.score_error = np.abs(traj.scaled_scores - ref.scaled_scores)
            traj.reference_run = ref  # kept in memory (not saved): any quantity's second route
            # after the reference froze at a consensus cap, |run − ref| cannot see the exact
            # motion: the reference's chord and the widening bound it (_cap_bounds' lemma; the
            # run's own freeze needs nothing, the reference moves on or repeats its state)
            frozen = _cap_bounds(ref)
            if np.any(frozen):
                widen = 2 * math.sqrt(traj.d) * np.max(traj.entry_error, axis=(1, 2))
                frozen = np.where(frozen > 0, frozen + widen, 0.0)
                _add_state_error(instance, traj, frozen)
                traj.repeated_error = frozen
                traj.reference["consensus_cap_added"] = float(np.max(frozen))
            if isinstance(ref_backend, Float64) and isinstance(backend, Float64):
                if progress and instance.n ** 2 * instance.d > 10 ** 6:  # seconds in arb
                    progress(f"field round-off: {SPOT_CHECKS} evaluations in arb")
                _add_field_roundoff(instance, traj)  # what a float64 reference cannot see
            else:
                _add_reference_tolerance(instance, traj)
            contradicted = _confirm_continuation(traj)
            if contradicted is not None:
                return _without_continuation(
                    traj, contradicted, lambda: simulate(
                        instance, horizon, checkpoints=checkpoints, precision=precision,
                        rtol=controller.rtol, atol=controller.atol, symmetry=symmetry,
                        max_steps=controller.max_steps,
                        throw=throw, continuation=False, progress=progress,
                        budget=None if budget is None else max(
                            0.0, budget - (time.monotonic() - started))))
        else:
            traj.reference["message"] = ref.message
    if throw and not traj.success:
        raise IntegrationError(traj.message)
    return traj


def seconds_per_unit_time(traj: Trajectory) -> float | None:
    """Wall-clock seconds per unit of ``t`` that the integration of ``traj`` took so far (its
    reference run's not included; ``None`` when it cannot be continued): what continuing it
    in the same arithmetic would cost per unit of time."""
    point = traj.resume_point
    if point is None or not float(point.t) > 0:
        return None
    return point.wall_seconds / float(point.t)


def float64_resolution_ends(traj: Trajectory, instance: Instance) -> float | None:
    r"""The time beyond which float64 will no longer tell the scores of some row apart, read off
    the end of ``traj`` (``None``: no such time shows).

    A row's attention is decided by its scaled score margin ``m̃_i`` (the gap between its two
    largest scaled scores ``S̃ = e^{-L} S``); float64 resolves it while ``m̃_i ≥ n ε |S̃|_max``
    (``ε = 2^{-52}``, ``n`` terms per row). Over the last third of the run (from ``T_a`` to its
    end ``T₁``) each margin that float64 still resolves at ``T₁`` decays at the observed rate
    ``r_i = ln(m̃_i(T_a)/m̃_i(T₁)) / (T₁ − T_a)`` (at most ``2μ`` while the unscaled gap stays
    bounded below, ``μ`` the growth rate of the scores); continued at that rate it reaches the
    resolution at

    .. math:: t^* = T_1 + \min_{i:\ r_i > 0} \frac{1}{r_i}\ln\frac{m̃_i(T_1)}{n\,ε\,|S̃(T_1)|_{\max}}.

    A trend on a window, so it only decides whether a float64 run is worth trying
    (:func:`verify.judge._engine._escalated`), never a verdict. ``None`` for a run that ended on
    a certified leg (it needs no resolution), whose scores do not grow, or that cannot be
    continued.
    """
    point = traj.resume_point
    if point is None or point.leg is not None or not score_growth_rate(instance.model) > 0 \
            or len(traj.times) < 3:
        return None
    t = traj.t
    a = int(np.searchsorted(t, t[-1] - (t[-1] - t[0]) / 3))
    a = min(a, len(t) - 2)
    now, before = traj.margins[-1], traj.margins[a]
    floor = ulps(RESOLUTION_ULPS * instance.n, float(np.max(np.abs(traj.scaled_scores[-1]))))
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.log(before / now) / (t[-1] - t[a])
        left = np.log(now / floor) / rate
    usable = np.isfinite(left) & (now > floor) & (before > 0) & (rate > 0)
    if not np.any(usable):
        return None
    return float(t[-1] + np.min(left[usable]))


def _check_resumable(resume: Trajectory, instance: Instance, times: list[Fraction]) -> None:
    """Raise :class:`InvalidArgument` unless ``resume`` can be continued through ``times``."""
    if resume.resume_point is None:
        raise InvalidArgument("resume: this trajectory cannot be continued (it did not reach "
                              f"its last checkpoint: {resume.status}, or it is a view of a "
                              "longer run); integrate from 0 instead.")
    m = len(resume.times)
    if list(times[:m]) != list(resume.times) or len(times) <= m:
        raise InvalidArgument("resume: the checkpoints must begin with the resumed run's "
                              f"({m} times up to t = {resume.times[-1]}) and go beyond them.")
    if resume.model != instance.model.describe() or resume.state.shape[1:] != \
            (instance.n, instance.d) or not np.allclose(resume.state[0], instance.x0_float(),
                                                        rtol=1e-15, atol=0):
        raise InvalidArgument("resume: the trajectory is a run of another instance.")


# ---------------------------------------------------------------------------------------------
def _reference_run(instance: Instance, times: list[Fraction], traj: Trajectory,
                   backend: Backend, controller: StepController, group, continuation: bool,
                   monitor: RunMonitor) -> Trajectory:
    """The reference run of the error estimate. When the run froze at a certified consensus
    (a cap leg from ``t0``, :mod:`verify.flow.consensus_cap`), the reference *inherits* that
    certificate instead of integrating on: it is integrated to ``t0`` only, and the lemma (any
    cap of angle below ``π/2`` holding every token is invariant) keeps its own state at ``t0``
    within its own cap's chord for all later time, a bound recorded as its cap leg (``"inherited":
    true``) and added to the estimate (the one cap the estimate counts, :func:`_cap_bounds`).
    If the reference's tokens at ``t0`` are in no such cap (it disagrees with the run), it is
    integrated to the horizon after all.

    A float64 reference starts from :func:`float64_twin`'s tokens, a few ulps away from the
    run's, so that it does not share the run's rounding of the initial data."""
    if isinstance(backend, Float64):
        instance = float64_twin(instance)
    legs = (traj.continuation or {}).get("legs") or []
    t0 = Fraction(legs[0]["t0"]) if len(legs) == 1 and legs[0].get("kind") == "cap" else None
    if t0 is None or not continuation or not times[0] < t0 < times[-1]:
        return _run(instance, times, backend, controller, group, continuation, monitor)
    before = [t for t in times if t < t0]
    field, states, status, message, stats, on_leg = _integrate(
        instance, [*before, t0], backend, controller, group, continuation, monitor)
    if status != "success":  # a failed reference says so, as a full one would
        return _finish(instance, times, backend, controller, group, field, states, status,
                       message, stats, on_leg)
    y_t0 = states[-1]
    with backend.working_precision():
        bound = cap_bound(y_t0)
        later = [y_t0.copy() if isinstance(y_t0, np.ndarray) else y_t0.mid()
                 for t in times if t > t0]
    own = (stats.get("continuation") or {}).get("legs") or []
    if not own:  # (a reference that froze on its own before t0 already repeats its state)
        if not math.isfinite(bound):  # no cap holds its tokens: integrate it to the end
            return _run(instance, times, backend, controller, group, continuation, monitor)
        leg = CapLeg(t0, y_t0, bound)
        leg.t_last = times[-1]
        info = dict(stats.get("continuation") or {"fallbacks": []})
        info.update(legs=[{**leg.describe(), "inherited": True}], t_switch=float(t0))
        stats = {**stats, "continuation": info}
    kept = len(before) + (t0 in times)  # t0 itself may be a checkpoint
    return _finish(instance, times, backend, controller, group, field,
                   states[:kept] + later, status, message, stats, {})


TWIN_ULPS = 2  # how far a float64 reference starts from the run, in ulps of each entry


def float64_twin(instance: Instance) -> Instance:
    """The instance a float64 reference run integrates: the run's float64 tokens with every
    nonzero entry moved by :data:`TWIN_ULPS` ulps, up or down by a fixed pseudo-random sign.

    A float64 run starts from the exact tokens rounded to float64 (half an ulp per entry) and
    the flow amplifies that rounding wherever it is unstable (near a saddle it grows like
    ``e^{λt}``). A float64 reference started from the same rounded tokens would carry the same
    amplified error and not see it; started from its twin, it sees a perturbation of the same
    size amplified by the same flow. Exact zeros stay 0 (float64 keeps them, and the invariant
    subspaces they span). Measured by ``benchmarks/error_coverage.py`` ("sphere near a saddle").

    >>> from verify.model import Model, Instance
    >>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [["1/3", 0], [1, "2/3"]])
    >>> twin = float64_twin(inst).x0_float()
    >>> (np.abs(twin - inst.x0_float()) / np.spacing(np.abs(inst.x0_float()))).tolist()
    [[2.0, 0.0], [2.0, 2.0]]
    """
    x = instance.x0_float()
    signs = np.random.default_rng(0).choice([-1.0, 1.0], size=x.shape)
    moved = np.where(x == 0, 0.0, x + signs * TWIN_ULPS * np.spacing(np.abs(x)))
    return Instance(instance.model, moved, name=instance.name)


# ---------------------------------------------------------------------------------------------
def _add_field_roundoff(instance: Instance, traj: Trajectory) -> None:
    """Add to the error estimate of a float64 run checked against a float64 reference what that
    reference cannot see (recorded in ``traj.reference["field_roundoff"]``):

    * the round-off of the field itself, measured in ``arb`` at
      :data:`~verify.flow.roundoff.SPOT_CHECKS` checkpoints of the integrated part (up to the first
      hardmax switch) and accumulated to first order (:mod:`verify.flow.roundoff`), with its
      first-order effect on the scaled scores and margins
      (:func:`~verify.flow.roundoff.score_perturbation`);
    * the round-off of the scaled scores as both runs form them (float64 against ``arb`` at the
      same spot checks; the largest, at every checkpoint);
    * the reference's own error: its tolerance times the size of the state (a distance to a
      float64 reference at ``rtol_ref`` cannot resolve less).

    ``benchmarks/error_coverage.py`` measured the need for the last two (true/estimated error
    up to 13 for the scores, 3.6 for the state, without them)."""
    if instance.model.discrete:
        return
    t = [float(v) for v in traj.t]
    info = traj.continuation or {}
    until = info["legs"][0]["t0"] if info.get("legs") and not info.get("fallbacks") else t[-1]
    inside = [k for k in range(len(t)) if t[k] <= until]
    picks = sorted({inside[int(round(p))] for p in np.linspace(0, len(inside) - 1, SPOT_CHECKS)})
    sample_t, sample_y = [t[k] for k in picks], [traj.state[k] for k in picks]
    if sample_t[-1] < until < t[-1] and info["legs"][0].get("kind") == "cap":
        # a certified consensus repeats its state at t0 = until: sample the field there too
        sample_t.append(until)
        sample_y.append(traj.state[next(k for k in range(len(t)) if t[k] > until)])
    check = spot_check(instance, sample_t, sample_y)
    added = accumulated(check["times"], check["max_abs"], t, until)
    floor = _reference_tolerance(traj)
    scores = _add_state_error(instance, traj, added + floor)
    formed = max(check["score_max_abs"])
    traj.score_error = traj.score_error + formed
    traj.margin_error = traj.margin_error + 2.0 * formed
    traj.reference["field_roundoff"] = {**check, "until": until,
                                        "accumulated": float(added[-1]),
                                        "reference_tolerance_added": float(np.max(floor)),
                                        "score_error_added": float(np.max(scores)) + formed}


def _reference_tolerance(traj: Trajectory) -> np.ndarray:
    """The reference run's own error per checkpoint, ``rtol_ref · max|y|``: a distance to a
    reference held to ``rtol_ref`` cannot resolve less (none at ``t = 0``, the initial data)."""
    return traj.reference["rtol"] * np.max(np.abs(traj.state), axis=(1, 2)) * (traj.t > 0)


def _add_reference_tolerance(instance: Instance, traj: Trajectory) -> None:
    """Add an ``arb`` reference's own error (:func:`_reference_tolerance`) to the estimate of a
    run whose scores stay bounded (the attention reads unit vectors), with its first-order
    effect on the scaled scores and margins (recorded as
    ``traj.reference["reference_tolerance_added"]``), as :func:`_add_field_roundoff` does for a
    float64 reference.

    ``|run − reference|`` misses it where the run's error is not far above it: a quantity the
    exact flow keeps and the run keeps well, such as ``|x_i|²`` on the sphere, whose scores
    ``S̃_ii`` both runs let drift by their tolerance per step. ``benchmarks/error_coverage.py
    --variants consensus --reference arb`` measured true/estimated up to 5.6 on them without it.
    Only where the scores stay bounded: there the state's size is the scores' scale, while
    where they grow the state has entries of very different sizes (rescaled tokens along
    contracting directions of ``V`` grow like ``e^{|λ|t}``) and ``rtol_ref·max|y|`` would swamp
    the scores' estimate (a 20-digit run with ``λ = −2`` to ``T = 15``: margin errors of 5e-13
    against margins of 1e-33 that the reference confirms). Not for discrete layers either:
    their reference repeats the recursion, with no tolerance.
    """
    if not instance.model.bounded_scores or instance.model.discrete:
        return
    floor = _reference_tolerance(traj)
    _add_state_error(instance, traj, floor)
    traj.reference["reference_tolerance_added"] = float(np.max(floor))


def _add_state_error(instance: Instance, traj: Trajectory, added: np.ndarray) -> np.ndarray:
    """Widen the error estimate by ``added[k]`` per entry at checkpoint ``k``: the state errors,
    and through :func:`~verify.flow.roundoff.score_perturbation` the score and margin errors
    (returned: the score part)."""
    t = [float(v) for v in traj.t]
    traj.entry_error = traj.entry_error + added[:, None, None]
    traj.error = np.max(traj.entry_error, axis=2)
    scores = score_perturbation(instance.model, t, traj.state, added)
    traj.score_error = traj.score_error + scores
    traj.margin_error = traj.margin_error + 2.0 * np.max(scores, axis=2)
    return scores


def _cap_bounds(run: Trajectory) -> np.ndarray:
    r"""Per checkpoint, how far the exact tokens may be from a state a consensus leg
    (:mod:`verify.flow.consensus_cap`) repeated: its chord bound ``2ρ`` after its ``t0``, else 0.
    :func:`simulate` adds the **reference run's** (widened, below) to the error estimate, and
    only that one, by this lemma.

    **Lemma (one cap).** Let ``x(t)`` be the exact tokens (on the unit sphere), ``y(t)`` the
    run's and ``r(t)`` the reference's, which froze at ``t_b`` (``r(t) = r(t_b)`` for
    ``t > t_b``) with every ``r̂_i(t_b) = r_i/|r_i|`` within ``ρ`` of a unit ``c``, ``2ρ`` its
    recorded bound; ``e_r = max_i |r_i(t_b) − x_i(t_b)|`` (2-norms throughout). Then for
    ``t > t_b``, whatever the run did (it froze before ``t_b``, at it, after it, or never):

    .. math:: |y_i(t) - x_i(t)| \le |y_i(t) - r_i(t_b)| + 2ρ + 3 e_r .

    *Proof.* ``||r_i| − 1| = ||r_i| − |x_i|| ≤ e_r``, so ``|r_i − r̂_i| ≤ e_r`` and
    ``|x_i(t_b) − c| ≤ e_r + e_r + ρ``: the exact tokens at ``t_b`` lie in the cap of chord
    radius ``ρ + 2e_r`` around ``c``, which is forward invariant
    (:mod:`verify.flow.consensus_cap`; ``ρ + 2e_r < √2``), so ``|x_i(t) − c| ≤ ρ + 2e_r``
    for ``t ≥ t_b``; and ``|r_i(t_b) − c| ≤ ρ + e_r``. Add
    ``|y_i − x_i(t)| ≤ |y_i − r_i(t_b)| + |r_i(t_b) − c| + |c − x_i(t)|``. ∎

    Before ``t_b`` (or with no freeze of the reference) ``|y − x| ≤ |y − r| + e_r`` with ``r``
    integrated: the ordinary estimate, also at checkpoints where the *run* repeats its state
    (the reference moved on, so ``|y(t_a) − r(t)|`` is the error of the repeated state). So
    the run's own cap is not needed; the run's cap gives a second bound,
    ``|y_i(t_a) − x_i(t)| ≤ 2ρ_run + 3 e(t_a)`` for ``t > t_a`` (the same proof with the run's
    error ``e(t_a)`` in place of ``e_r``): either route bounds the error, so adding both
    caps (as before) counted the exact motion after the freeze twice. The reference's route
    is the one that holds wherever the estimate misses motion (also where the reference froze
    and the run did not) and is widened by the smaller error.

    Rigorous: the inequality. An estimate: ``e_r`` is not known (as for every estimate, the
    reference is assumed much closer to ``x`` than the run). Per entry, ``simulate`` adds
    ``2ρ + 2√d·E`` to the estimate ``|y − r|`` (``E`` its largest entry at the checkpoint):
    ``√d·E`` bounds ``|y_i − r_i(t_b)|`` in 2-norm, the other ``√d·E`` stands in for ``3e_r``.
    :data:`Trajectory.repeated_error` is that addition, what the second route of a quantity
    cannot see.

    >>> from types import SimpleNamespace
    >>> run = SimpleNamespace(t=[0, 1, 2, 3], continuation={"legs": [
    ...     {"kind": "cap", "t0": 1.5, "bound": 1e-10}]})
    >>> _cap_bounds(run).tolist()
    [0.0, 0.0, 1e-10, 1e-10]
    """
    out = np.zeros(len(run.t))
    for leg in (run.continuation or {}).get("legs", []):
        if leg.get("kind") == "cap":
            out[[k for k, t in enumerate(run.t) if float(t) > leg["t0"]]] += leg["bound"]
    return out


def _confirm_continuation(traj: Trajectory) -> float | None:
    """Check a posteriori the state error the hardmax certification assumed: at the checkpoints
    up to each switch time, the distance to the reference run must be below it — or, times the
    estimate's safety factor ``κ`` (:data:`~verify.numerics.ESTIMATE_SAFETY`), below the state
    error every check of the leg tolerated
    (:meth:`~verify.flow.continuation.HardmaxLeg.tolerated_error`; the a-priori figure is a
    guess, the checks' room is what the certificate needs). Returns the first switch time
    whose assumption the reference run contradicts, or ``None``."""
    info = traj.continuation
    if not info or not info["legs"]:
        return None
    t = traj.t
    contradicted = None
    for leg in info["legs"]:
        if leg.get("kind") != "hardmax":
            continue
        entry = leg["state_error_assumed"] / math.sqrt(traj.d)
        upto = [k for k in range(len(t)) if t[k] <= leg["t0"]] or [0]
        before = upto[-1]
        after = min(before + 1, len(t) - 1)
        seen = float(np.max(traj.error[[before, after]]))
        leg["state_error_seen"] = seen
        # the leg's checks also hold up to the state error it tolerated (None: not recorded)
        tolerated = (leg.get("state_error_tolerated") or 0.0) / math.sqrt(traj.d)
        leg["state_error_confirmed"] = bool(seen <= entry or ESTIMATE_SAFETY * seen <= tolerated)
        if not leg["state_error_confirmed"]:
            traj.message += (f"; the hardmax switch at t={leg['t0']:.4g} assumed a state "
                             f"error <= {entry:.1e} (its checks tolerate {tolerated:.1e}), the "
                             f"reference run shows {seen:.1e} near it")
            contradicted = leg["t0"] if contradicted is None else min(contradicted, leg["t0"])
    return contradicted


def _without_continuation(traj: Trajectory, t0: float, rerun) -> Trajectory:
    """The answer to a contradicted continuation (its switch at ``t0`` assumed a state error the
    reference run does not confirm, so nothing after it is certified): the run made again
    without the continuation (``rerun()``); if that fails, ``traj`` with its error set to ``inf``
    after ``t0`` (the state, score and margin errors, and the reference run, whose differences
    give every quantity's error, made NaN there), so that no decision rests on it."""
    again = rerun()
    record = {"t_switch": t0, "reason": "the reference run contradicted the state error the "
              "hardmax switch assumed"}
    if again.success and again.error is not None:
        again.stats["continuation_rejected"] = record
        again.message += (f"; re-run without the hardmax continuation: its switch at "
                          f"t={t0:.4g} assumed a state error the reference run contradicted")
        return again
    after = traj.t > t0
    for name in ("entry_error", "error", "score_error", "margin_error"):
        value = getattr(traj, name)
        if value is not None:
            value = value.astype(float)
            value[after] = np.inf
            setattr(traj, name, value)
    ref = traj.reference_run
    for name in ("state", "scaled_scores", "attention", "margins", "x_state", "z_state"):
        value = getattr(ref, name)
        if value is not None:
            value = value.astype(float)
            value[after] = np.nan
            setattr(ref, name, value)
    ref.state_text = None
    traj.resume_point = ref.resume_point = None  # nothing after t0 is certified
    traj.stats["continuation_rejected"] = {**record, "rerun": f"{again.status}: "
                                           f"{again.message}", "error_after_switch": "inf"}
    traj.message += (f"; the error estimate is infinite after t={t0:.4g} (the re-run without "
                     f"the continuation failed: {again.status})")
    return traj


def entry_differences(traj: Trajectory, ref: Trajectory, bits: int) -> np.ndarray:
    """``|traj − ref|`` per checkpoint, token and coordinate, computed at ``bits`` bits when
    either run kept more digits than float64 (so that agreement beyond 16 digits is measured,
    not rounded)."""
    if traj.state_text is None and ref.state_text is None:
        return np.abs(traj.state - ref.state)
    from flint import arb

    backend = Arb(bits=bits)

    def entries(run: Trajectory) -> np.ndarray:
        text = run.state_text if run.state_text is not None else run.state.astype(object)
        return np.vectorize(lambda v: arb(str(v)) if isinstance(v, str) else arb(float(v)),
                            otypes=[object])(text)

    with backend.working_precision():
        return np.vectorize(lambda v: float(abs(v).mid()), otypes=[float])(
            entries(traj) - entries(ref))


def _controller_for(precision, backend: Backend, rtol: float | None, atol: float | None,
                    max_steps: int) -> StepController:
    """The run's :class:`StepController`: the given tolerances, else 1e-10/1e-12 in float64 and
    ``10^-(D+1)`` for ``D`` requested digits (the 20 digits of ``"auto"``), at most the
    backend's digits less 6."""
    if isinstance(backend, Float64):
        default_rtol, default_atol = DEFAULT_FLOAT_RTOL, DEFAULT_FLOAT_ATOL
    else:  # DIGITS requested: the tolerance follows them (else the 20 digits of "auto")
        target = precision if isinstance(precision, int) else DEFAULT_DIGITS
        default_rtol = default_atol = 10.0 ** (-min(target + 1, backend.digits - 6))
    return StepController(default_rtol if rtol is None else rtol,
                          default_atol if atol is None else atol, max_steps)


def _backend_for(precision, instance: Instance, horizon: float) -> Backend:
    if isinstance(precision, Backend):
        return precision
    if precision == "float64":
        return Float64()
    if precision == "auto":
        return Arb(bits=working_bits(instance, horizon))
    if isinstance(precision, int) and not isinstance(precision, bool) and precision >= 16:
        return Arb(bits=working_bits(instance, horizon, digits=precision))  # DIGITS correct
    raise InvalidArgument(
        f"precision={precision!r} must be 'float64', 'auto', a number of digits ≥ 16, or a "
        "backend such as Arb(bits=256)."
    )


_growth_rate = score_growth_rate  # the name verify.run uses to size a re-check's precision


def _symmetry_group(instance: Instance):
    """The exact symmetry group of the instance, or ``None`` when it is trivial or not searched:
    several heads, an MLP (ReLU does not commute with sign changes), a mask, or
    ``d > SYMMETRY_MAX_DIM`` (the search is over the ``d!·2^d`` signed permutations)."""
    model = instance.model
    full_mask = model.full_mask
    if not model.single_head or model.has_mlp or not full_mask \
            or model.d > SYMMETRY_MAX_DIM:
        return None

    group = find_symmetries(model.V, model.B, instance.x0, max_dim=SYMMETRY_MAX_DIM)
    return None if group.is_trivial else group


def _run(instance: Instance, times: list[Fraction], backend: Backend,
         controller: StepController, group, continuation: bool = True,
         monitor: RunMonitor | None = None) -> Trajectory:
    """The one integration entry point, of the run and of its reference run alike."""
    integrated = _integrate(instance, times, backend, controller, group, continuation, monitor)
    return _finish(instance, times, backend, controller, group, *integrated)


def _resume_point(loop: _LegLoop | None, times: list, states: list, status: str,
                  stats: dict) -> _LegLoop | None:
    """The :class:`_LegLoop` a recorded run continues from, or ``None``: a run that failed;
    one whose loop stopped before its last checkpoint is continued only where it repeats the
    loop's last state for good (a reference that inherited the run's consensus cap,
    :func:`_reference_run`: it continues on that cap leg)."""
    if loop is None or status != "success" or len(states) != len(times):
        return None
    if float(loop.t) == float(times[-1]):
        return loop
    legs = (stats.get("continuation") or {}).get("legs") or []
    leg = loop.leg
    if leg is None and legs and legs[-1].get("kind") == "cap" and legs[-1].get("inherited"):
        leg = CapLeg(loop.t, loop.y, legs[-1]["bound"])
        loop.legs = [*loop.legs, leg]
    if not isinstance(leg, CapLeg):
        return None
    leg.t_last = type(loop.t)(times[-1])
    loop.leg, loop.t = leg, leg.t_last
    return loop


def _resumed_run(instance: Instance, times: list[Fraction], backend: Backend,
                 controller: StepController, previous: Trajectory, continuation: bool,
                 monitor: RunMonitor | None) -> Trajectory:
    """``previous`` (a run of ``instance`` recorded at the first of ``times``) continued from
    its :attr:`~Trajectory.resume_point` through the later ``times``: the recorded quantities of
    ``previous`` (its error estimate left out: the caller forms it for the whole run) followed
    by those of the continuation."""
    start = previous.resume_point
    later = [t for t in times if t >= previous.times[-1]]
    integrated = _integrate(instance, later, backend, controller, start.group, continuation,
                            monitor, start)
    part = _finish(instance, later, backend, controller, start.group, *integrated)
    joined = {}
    for name in ("state", "scaled_scores", "log_scale", "attention", "margins", "state_text",
                 "x_state", "z_state"):
        before, after = getattr(previous, name), getattr(part, name)
        if before is not None and after is not None:
            joined[name] = np.concatenate([before, after[1:]])
        elif name == "state_text" and (before is not None or after is not None):
            joined[name] = np.concatenate([_as_text(previous), _as_text(part)[1:]])
        else:
            joined[name] = None
    part.times = [*previous.times, *later[1:]]
    for name, value in joined.items():
        setattr(part, name, value)
    if previous.symmetry is not None and part.symmetry is not None:
        part.symmetry["stayed_on_fixed_subspace"] = bool(
            previous.symmetry["stayed_on_fixed_subspace"]
            and part.symmetry["stayed_on_fixed_subspace"])
    return part


def _as_text(run: Trajectory) -> np.ndarray:
    """Every state entry as a decimal string (a float64 run's ``repr``, exact)."""
    if run.state_text is not None:
        return run.state_text
    return np.vectorize(lambda v: repr(float(v)), otypes=[object])(run.state).astype(str)


def _integrate(instance: Instance, times: list[Fraction], backend: Backend,
               controller: StepController, group, continuation: bool,
               monitor: RunMonitor | None, start: _LegLoop | None = None):
    """``(field, states, status, message, stats, on_leg)``: the states at ``times`` (or the
    first ones, if the run ends early) in the backend's arithmetic; from ``start`` (a
    :class:`_LegLoop` stopped at ``times[0]``) when given, else from the initial tokens."""
    model = instance.model
    field = VectorField(model, instance.n, backend)
    if start is not None:
        continuation = continuation and start.continuation
    with backend.working_precision():
        project = None if group is None else (lambda y: group.project(y, backend))
        certifier = _certifier_for(model, backend, field, controller, continuation, project)
        if project is not None:
            # Integrate the reduced system: every stage reads and returns a point of the fixed
            # subspace. Round-off transverse to it would otherwise grow at the (often huge,
            # ~e^{2μt}) rate of the unstable direction and make the step-size control crawl.
            field = _ReducedField(field, project)
        solver = _solver_for(instance, backend, field, project)
        y0 = backend.from_exact(instance.x0) if start is None else None
        loop = _LegLoop(solver, solver.times(times)[0], y0, continuation, group) \
            if start is None else start.carried_to(solver, backend, solver.times(times)[0])
        states, status, message, stats, on_leg = _solve(
            solver, field, backend, times, y0, controller, certifier, monitor, loop)
    return field, states, status, message, stats, on_leg


def _solver_for(instance: Instance, backend: Backend, field, project) -> Solver:
    """The solver of a run: the discrete layers themselves; DOP853 for float64 (in
    eigen-coordinates where :meth:`EigenRescaledField.applies`); extrapolation otherwise (any
    precision, and float64 runs kept on a symmetry's fixed subspace)."""
    model = instance.model
    if model.discrete:
        return ResidualLayers(project)
    if isinstance(backend, Float64) and project is None:
        eigen = EigenRescaledField(model, instance.n, [(Vt.T, B) for Vt, B in field._heads]) \
            if EigenRescaledField.applies(model) else None
        return DOP853(eigen)
    return Extrapolation(project)


def _certifier_for(model, backend: Backend, field: VectorField, controller: StepController,
                   continuation: bool, project) -> Certifier | None:
    """The certifier of a run (:mod:`verify.flow.legs`), or ``None``: the hardmax continuation
    (:mod:`verify.flow.continuation`) where the model allows it, else certified consensus on the
    sphere (:mod:`verify.flow.consensus_cap`); none for a run kept on a symmetry's fixed
    subspace (and none applies to discrete layers)."""
    if not continuation or project is not None:
        return None
    if continuation_unavailable(model) is None:
        kind = HardmaxCertifier if isinstance(backend, Float64) else ArbHardmaxCertifier
        return kind(field, controller.rtol, controller.atol)
    if cap_unavailable(model) is None:
        return CapCertifier(controller.atol)
    return None


class _LegLoop:
    """The state of :func:`_solve` between two calls: where a run stopped (``t``, ``y``: its last
    checkpoint and state, in the solver's time type and the backend's arithmetic), the leg it was
    on at the end (``leg``: one that held to ``t``, followed on first by the next call), where
    the solver restarts if that leg's check fails, and the counts of the whole run so far (the
    solver's ``totals``, ``steps_done``, the certifier's tests, the ``legs`` and ``fallbacks``).
    ``Trajectory.resume_point`` holds it; ``simulate(..., resume=trajectory)`` continues it."""

    def __init__(self, solver: Solver, t, y, continuation: bool, group) -> None:
        self.solver_name, self.totals = solver.name, solver.totals()
        self.t, self.y, self.leg = t, y, None
        self.t_start, self.y_start, self.no_switch_before, self.steps_done = t, y, None, 0
        self.legs, self.fallbacks, self.checks = [], [], 0
        self.continuation, self.group, self.resumed_at = continuation, group, []
        self.wall_seconds = 0.0  # spent in _solve so far (what a continuation's cost scales)

    def carried_to(self, solver: Solver, backend: Backend, t) -> _LegLoop:
        """A copy to continue with ``solver`` in ``backend``: the state converted when the
        arithmetic changes (float64 → arb: exactly; the leg then dropped, the new run's own
        certifier decides again), the solver's counts restarted when the solver changes; ``t``
        is the stop time in the new solver's time type."""
        loop = _LegLoop.__new__(_LegLoop)
        loop.__dict__.update(self.__dict__, legs=list(self.legs), fallbacks=list(self.fallbacks),
                             resumed_at=[*self.resumed_at, float(self.t)])
        if self.leg is not None:  # followed on by the new run only: this one stays as it was
            loop.leg = copy.copy(self.leg)
            loop.legs = [loop.leg if leg is self.leg else leg for leg in self.legs]
        arb = isinstance(backend, Arb)
        if arb != (not isinstance(self.y, np.ndarray)):
            with backend.working_precision():
                y = backend.from_float(self.y) if arb else Arb(bits=64).to_float(self.y)
            loop.y, loop.y_start, loop.t, loop.t_start = y, y, t, t
            loop.leg, loop.no_switch_before = None, None
        if solver.name != self.solver_name:
            loop.solver_name, loop.totals = solver.name, solver.totals()
        else:
            loop.totals = {k: dict(v) if isinstance(v, dict) else v for k, v in self.totals.items()}
        return loop


def _solve(solver: Solver, field, backend: Backend, times: list[Fraction], y0,
           controller: StepController, certifier: Certifier | None,
           monitor: RunMonitor | None, loop: _LegLoop | None = None):
    """The one leg loop: ``solver`` integrates until ``certifier`` returns a leg, the leg is
    followed (:func:`~verify.flow.legs.follow_leg`) until a check fails, and the solver takes
    over again from the last time that passed. The run starts from ``y0`` at ``times[0]``, or
    from ``loop`` (stopped at ``times[0]``, the last checkpoint of a resumed run: its leg, if it
    held to there, is followed on first); the loop is left where the run stopped. Returns
    ``(states, status, message, stats, on_leg)``, ``on_leg[k]`` the
    :class:`~verify.flow.legs.ScoredLeg` that gave checkpoint ``k``."""
    began = time.monotonic()
    ts = solver.times(times)
    if loop is None:
        loop = _LegLoop(solver, ts[0], y0, certifier is not None, None)
    states, on_leg = [loop.y], {}
    if certifier is not None:
        certifier.checks = loop.checks
    leg, status, message = loop.leg, "success", "reached the horizon"
    while True:
        if leg is None:
            segment = solver.segment(field, backend, times, len(states), loop.t_start,
                                     loop.y_start, controller, certifier=certifier,
                                     no_switch_before=loop.no_switch_before, monitor=monitor,
                                     steps_done=loop.steps_done)
            states.extend(segment.states)
            solver.add(loop.totals, segment.stats)
            loop.steps_done += segment.steps
            status, message, leg = segment.status, segment.message, segment.leg
            if leg is None:
                break
            loop.legs.append(leg)
        _, failed_at, nonfinite_at = follow_leg(leg, ts, states, finite=solver.finite,
                                                on_leg=on_leg)
        status, message = "success", "reached the horizon"
        if nonfinite_at is not None:
            status = "nonfinite"
            message = f"non-finite state at t={nonfinite_at:.6g} (closed form)."
            break
        if failed_at is None:
            break
        # a check failed: integrate again from the last time that passed
        loop.fallbacks.append({"at": float(failed_at), "restart": float(leg.t_last)})
        loop.t_start, loop.y_start, loop.no_switch_before = leg.t_last, leg.state(leg.t_last), \
            failed_at
        leg = None
    if status == "success" and len(states) == len(ts):
        loop.t, loop.y, loop.leg = ts[-1], states[-1], leg
        if leg is None:  # the solver restarts from the last checkpoint
            loop.t_start, loop.y_start = ts[-1], states[-1]
    stats = solver.summary(loop.totals)
    if certifier is not None:
        loop.checks = certifier.checks
        info = {"certification_tests": certifier.checks} \
            if solver.reports_certification_tests else {}
        stats["continuation"] = {**info, "legs": [leg.describe() for leg in loop.legs],
                                 "fallbacks": list(loop.fallbacks),
                                 "t_switch": loop.legs[0].describe()["t0"] if loop.legs
                                 else None}
    if loop.resumed_at:
        stats["resumed_at"] = list(loop.resumed_at)
    loop.wall_seconds += time.monotonic() - began
    stats[_LOOP] = loop if status == "success" else None
    return states, status, message, stats, on_leg


def _finish(instance: Instance, times: list[Fraction], backend: Backend,
            controller: StepController, group, field, states, status: str, message: str,
            stats: dict, on_leg: dict) -> Trajectory:
    """The :class:`Trajectory` of integrated ``states`` (recorded at the first ``times``)."""
    model = instance.model
    stats = dict(stats)
    loop = stats.pop(_LOOP, None)
    with backend.working_precision():
        traj = _record(field, times[:len(states)], states, backend, on_leg)
        traj.resume_point = _resume_point(loop, times, states, status, stats)
    traj.status, traj.message, traj.stats = status, message, stats
    traj.precision = {"backend": backend.name, "bits": backend.bits,
                      "digits": round(backend.digits, 2)}
    traj.tolerances = {"rtol": controller.rtol, "atol": controller.atol}
    traj.model = model.describe()
    if group is not None:
        on = all(group.is_on_fixed_subspace(s, backend) for s in states)
        traj.symmetry = {"group": group.to_dict(), "description": group.describe(),
                         "enforced": True, "stayed_on_fixed_subspace": bool(on)}
    return traj


class _ReducedField:
    """``y ↦ π(f(π(y)))`` with ``π`` the projection onto the fixed subspace of the symmetries:
    the field restricted to the invariant subspace (where it is tangent), exactly."""

    def __init__(self, field: VectorField, project) -> None:
        self.field, self.project = field, project

    def __call__(self, t, state):
        return self.project(self.field(t, self.project(state)))

    def __getattr__(self, name):  # scores, attention, model, mask, ... of the full field
        return getattr(self.field, name)


def _record(field: VectorField, times, states, backend, on_leg=None) -> Trajectory:
    """The recorded quantities at the checkpoints; a checkpoint reached on a hardmax leg
    (``on_leg[k]``) takes its scores, margins and ``x`` from the leg's cancellation-free form."""
    arb = isinstance(backend, Arb)
    on_leg = on_leg or {}
    scaled, logs, attention, margins = [], [], [], []
    for k, (t, y) in enumerate(zip(times, states, strict=True)):
        tb = backend.scalar(t)
        if k in on_leg:
            S, L = on_leg[k].scores(float(t))
            scaled.append(S)
            attention.append(attention_weights(S, L, field.model.attention, field.mask))
            margins.append(on_leg[k].margins(float(t)))
            logs.append(float(L))
            continue
        S, L = field.scores(tb, y)
        A = field.attention(tb, y)
        if arb:
            margins.append(_margins_arb(S, field.mask))
            scaled.append(backend.to_float(S))
            attention.append(backend.to_float(A))
            logs.append(float(L) if isinstance(L, int) else float(L.mid()))
        else:
            margins.append(_margins_float(S, field.mask))
            scaled.append(S)
            attention.append(A)
            logs.append(float(L))
    state = np.array([backend.to_float(y) for y in states])
    traj = Trajectory(
        times=list(times), form=field.model.form, state=state, scaled_scores=np.array(scaled),
        log_scale=np.array(logs), attention=np.array(attention), margins=np.array(margins),
        precision={}, tolerances={}, model={},
        state_text=np.array([backend.to_strings(y) for y in states]) if arb else None)
    _derived_forms(field, traj)
    if on_leg and traj.x_state is not None:
        for k, leg in on_leg.items():
            traj.x_state[k] = leg.x_state(float(times[k]))
    return traj


def _margins_float(S: np.ndarray, mask) -> np.ndarray:
    S = np.where(mask, S, -np.inf) if mask is not None else S
    if S.shape[1] < 2:
        return np.full(S.shape[0], np.inf)
    top2 = -np.sort(-S, axis=1)[:, :2]
    return top2[:, 0] - top2[:, 1]


def _margins_arb(S, mask) -> np.ndarray:
    n = S.nrows()
    out = np.full(n, np.inf)
    for i in range(n):
        row = [S[i, j] for j in range(n) if mask is None or mask[i, j]]
        if len(row) < 2:
            continue
        row.sort(key=lambda v: float(v.mid()), reverse=True)
        out[i] = float((row[0] - row[1]).mid())
    return out


def _derived_forms(field: VectorField, traj: Trajectory) -> None:
    """x from z (rescaled runs) and z from x (single-head runs without extras), in float64."""
    model = field.model
    t = traj.t
    if model.rescaled:
        with np.errstate(over="ignore", invalid="ignore"):
            traj.x_state = np.array([z @ field.exponential.exp_float(tk).T
                                     for tk, z in zip(t, traj.state, strict=True)])
        return
    if not model.single_head or model.normalised or model.has_mlp:
        return
    V = as_float_array(model.V)
    if model.discrete:
        R = np.eye(model.d) + float(model.h) * V
        zs, inv_power, previous = [], np.eye(model.d), Fraction(0)
        for tk, x in zip(traj.times, traj.state, strict=True):
            for _ in range(int((tk - previous) / model.h)):
                inv_power = np.linalg.solve(R, inv_power)
            previous = tk
            zs.append(x @ inv_power.T)
        traj.z_state = np.array(zs)
        return
    exponential = ValueExponential(model.V)
    with np.errstate(over="ignore", invalid="ignore"):
        traj.z_state = np.array([x @ exponential.exp_float(-tk).T
                                 for tk, x in zip(t, traj.state, strict=True)])
