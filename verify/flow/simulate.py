r"""Simulate an instance: compose the vector field, a backend and an integrator into a
:class:`~verify.flow.trajectory.Trajectory` that carries its own error estimate.

* float64: SciPy's DOP853 (order 8, embedded error control) with dense output at checkpoints;
* arbitrary precision: Gragg–Bulirsch–Stoer extrapolation with exact rational coefficients
  (:class:`verify.numerics.GraggBulirschStoer`) in python-flint ``arb`` at a precision chosen
  from what grows along the run (:func:`verify.flow.precision_policy.working_bits`: ``2 μ T / ln 2``
  extra bits where the scores grow like ``e^{2 μ t}``, constant in ``T`` on the sphere and with
  pre-LN) or given;
* discrete layers: the recursion itself, in the backend's arithmetic.

**Error estimate.** Unless ``error_estimate=False``, the run is repeated at tighter tolerance and
higher precision (:func:`reference_settings`) and every checkpoint records how far the two runs
are apart (``Trajectory.error``) and on how many digits they agree (``Trajectory.digits``).

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

import math
import time
from fractions import Fraction

import numpy as np

from verify.errors import IntegrationError, InvalidArgument
from verify.exact.inputs import as_float_array, to_rational
from verify.exact.symmetry import find_symmetries
from verify.flow.consensus_cap import CapCertifier, CapLeg, cap_bound, cap_unavailable, certify_cap
from verify.flow.continuation import (
    HardmaxCertifier,
    HardmaxLeg,
    certify_arb,
    continuation_unavailable,
)
from verify.flow.exponential import ValueExponential
from verify.flow.fields import EigenRescaledField, VectorField, attention_weights
from verify.flow.precision_policy import (
    DEFAULT_DIGITS,
    choose_bits,
    reference_settings,
    score_growth_rate,
    working_bits,
)
from verify.flow.roundoff import SPOT_CHECKS, accumulated, score_perturbation, spot_check
from verify.flow.trajectory import Trajectory
from verify.model import Instance
from verify.numerics import Arb, Backend, Float64, integrate_extrapolation
from verify.numerics._monitor import RunMonitor, stderr_progress

__all__ = ["simulate", "choose_bits", "reference_settings", "checkpoint_times",
           "scaled_checkpoints"]

DEFAULT_FLOAT_RTOL = 1e-10
DEFAULT_FLOAT_ATOL = 1e-12
SYMMETRY_MAX_DIM = 6  # exact symmetries are searched for d ≤ 6
STALL_WINDOW = 2_000  # DOP853 steps between two checks that the horizon is still reachable


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
             budget: float | None = None) -> Trajectory:
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
    """
    times = checkpoint_times(horizon, checkpoints)
    backend = _backend_for(precision, instance, float(times[-1]))
    if isinstance(backend, Float64):
        rtol = DEFAULT_FLOAT_RTOL if rtol is None else rtol
        atol = DEFAULT_FLOAT_ATOL if atol is None else atol
    else:  # DIGITS requested: the tolerance follows them (else the 20 digits of "auto")
        target = precision if isinstance(precision, int) else DEFAULT_DIGITS
        default = 10.0 ** (-min(target + 1, backend.digits - 6))
        rtol = default if rtol is None else rtol
        atol = default if atol is None else atol
    if symmetry not in ("auto", "off"):
        raise InvalidArgument(f"symmetry={symmetry!r} must be 'auto' or 'off'.")
    group = _symmetry_group(instance) if symmetry == "auto" else None

    if progress is True:
        progress = stderr_progress("verify simulate")
    started = time.monotonic()

    def monitor(label: str, steps: int) -> RunMonitor:
        return RunMonitor(0.0, float(times[-1]), max_steps=steps, window=STALL_WINDOW,
                          progress=progress, budget=budget, label=label, started=started)

    traj = _run(instance, times, backend, rtol, atol, group, max_steps, continuation,
                monitor("run", max_steps))
    if traj.success and error_estimate:
        ref_backend, ref_rtol = reference_settings(backend, rtol, instance, float(times[-1]))
        ref = _reference_run(instance, times, traj, ref_backend, ref_rtol, min(atol, ref_rtol),
                             group, 4 * max_steps, continuation,
                             monitor("reference run", 4 * max_steps))
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
            frozen = _cap_bounds(traj) + _cap_bounds(ref)  # states repeated after consensus
            if np.any(frozen):
                # the exact tokens lie in the computed cap widened by the state error at t0
                # (|run - ref| there, the repeated states), so they may move by that much more
                widen = 2 * math.sqrt(traj.d) * np.max(traj.entry_error, axis=(1, 2))
                frozen = np.where(frozen > 0, frozen + widen, 0.0)
                _add_state_error(instance, traj, frozen)
                traj.repeated_error = frozen
                traj.reference["consensus_cap_added"] = float(np.max(frozen))
            if isinstance(ref_backend, Float64) and isinstance(backend, Float64):
                if progress and instance.n ** 2 * instance.d > 10 ** 6:  # seconds in arb
                    progress(f"field round-off: {SPOT_CHECKS} evaluations in arb")
                _add_field_roundoff(instance, traj)  # what a float64 reference cannot see
            contradicted = _confirm_continuation(traj)
            if contradicted is not None:
                return _without_continuation(
                    traj, contradicted, lambda: simulate(
                        instance, horizon, checkpoints=checkpoints, precision=precision,
                        rtol=rtol, atol=atol, symmetry=symmetry, max_steps=max_steps,
                        throw=throw, continuation=False, progress=progress,
                        budget=None if budget is None else max(
                            0.0, budget - (time.monotonic() - started))))
        else:
            traj.reference["message"] = ref.message
    if throw and not traj.success:
        raise IntegrationError(traj.message)
    return traj


# ---------------------------------------------------------------------------------------------
def _reference_run(instance: Instance, times: list[Fraction], traj: Trajectory,
                   backend: Backend, rtol: float, atol: float, group, max_steps: int,
                   continuation: bool, monitor: RunMonitor) -> Trajectory:
    """The reference run of the error estimate. When the run froze at a certified consensus
    (a cap leg from ``t0``, :mod:`verify.flow.consensus_cap`), the reference *inherits* that
    certificate instead of integrating on: it is integrated to ``t0`` only, and the lemma (any
    cap of angle below ``π/2`` holding every token is invariant) keeps its own state at ``t0``
    within its own cap's chord for all later time, a bound recorded as its cap leg (``"inherited":
    true``) and added to the estimate like the run's. If the reference's tokens at ``t0`` are in
    no such cap (it disagrees with the run), it is integrated to the horizon after all."""
    legs = (traj.continuation or {}).get("legs") or []
    t0 = Fraction(legs[0]["t0"]) if len(legs) == 1 and legs[0].get("kind") == "cap" else None
    if t0 is None or not continuation or not times[0] < t0 < times[-1]:
        return _run(instance, times, backend, rtol, atol, group, max_steps, continuation,
                    monitor)
    before = [t for t in times if t < t0]
    field, states, status, message, stats, on_leg = _integrate(
        instance, [*before, t0], backend, rtol, atol, group, max_steps, continuation, monitor)
    if status != "success":  # a failed reference says so, as a full one would
        return _finish(instance, times, backend, rtol, atol, group, field, states, status,
                       message, stats, on_leg)
    y_t0 = states[-1]
    with backend.working_precision():
        bound = cap_bound(y_t0)
        later = [y_t0.copy() if isinstance(y_t0, np.ndarray) else y_t0.mid()
                 for t in times if t > t0]
    own = (stats.get("continuation") or {}).get("legs") or []
    if not own:  # (a reference that froze on its own before t0 already repeats its state)
        if not math.isfinite(bound):  # no cap holds its tokens: integrate it to the end
            return _run(instance, times, backend, rtol, atol, group, max_steps, continuation,
                        monitor)
        leg = CapLeg(t0, y_t0, bound)
        leg.t_last = times[-1]
        info = dict(stats.get("continuation") or {"fallbacks": []})
        info.update(legs=[{**leg.describe(), "inherited": True}], t_switch=float(t0))
        stats = {**stats, "continuation": info}
    kept = len(before) + (t0 in times)  # t0 itself may be a checkpoint
    return _finish(instance, times, backend, rtol, atol, group, field, states[:kept] + later,
                   status, message, stats, {})


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
    check = spot_check(instance, [t[k] for k in picks], [traj.state[k] for k in picks])
    added = accumulated(check["times"], check["max_abs"], t, until)
    # the reference's own integration error (none at t = 0, the rounded initial data)
    floor = traj.reference["rtol"] * np.max(np.abs(traj.state), axis=(1, 2)) * (traj.t > 0)
    scores = _add_state_error(instance, traj, added + floor)
    formed = max(check["score_max_abs"])
    traj.score_error = traj.score_error + formed
    traj.margin_error = traj.margin_error + 2.0 * formed
    traj.reference["field_roundoff"] = {**check, "until": until,
                                        "accumulated": float(added[-1]),
                                        "reference_tolerance_added": float(np.max(floor)),
                                        "score_error_added": float(np.max(scores)) + formed}


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
    """Per checkpoint, how far the exact tokens may be from a state a consensus leg
    (:mod:`verify.flow.consensus_cap`) repeated: its chord bound after its ``t0``, else 0."""
    out = np.zeros(len(run.t))
    for leg in (run.continuation or {}).get("legs", []):
        if leg.get("kind") == "cap":
            out[[k for k, t in enumerate(run.t) if float(t) > leg["t0"]]] += leg["bound"]
    return out


def _confirm_continuation(traj: Trajectory) -> float | None:
    """Check a posteriori the state error the hardmax certification assumed: at the checkpoints
    up to each switch time, the distance to the reference run must be below it. Returns the
    first switch time whose assumption the reference run contradicts, or ``None``."""
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
        leg["state_error_confirmed"] = bool(seen <= entry)
        if not leg["state_error_confirmed"]:
            traj.message += (f"; the hardmax switch at t={leg['t0']:.4g} assumed a state "
                             f"error <= {entry:.1e}, the reference run shows {seen:.1e} near it")
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


def _run(instance: Instance, times: list[Fraction], backend: Backend, rtol: float, atol: float,
         group, max_steps: int, continuation: bool = True,
         monitor: RunMonitor | None = None) -> Trajectory:
    integrated = _integrate(instance, times, backend, rtol, atol, group, max_steps,
                            continuation, monitor)
    return _finish(instance, times, backend, rtol, atol, group, *integrated)


def _integrate(instance: Instance, times: list[Fraction], backend: Backend, rtol: float,
               atol: float, group, max_steps: int, continuation: bool,
               monitor: RunMonitor | None):
    """``(field, states, status, message, stats, on_leg)``: the states at ``times`` (or the
    first ones, if the run ends early) in the backend's arithmetic."""
    model = instance.model
    on_leg: dict = {}
    field = VectorField(model, instance.n, backend)
    with backend.working_precision():
        y0 = backend.from_exact(instance.x0)
        project = None if group is None else (lambda y: group.project(y, backend))
        if project is not None:
            # Integrate the reduced system: every stage reads and returns a point of the fixed
            # subspace. Round-off transverse to it would otherwise grow at the (often huge,
            # ~e^{2μt}) rate of the unstable direction and make the step-size control crawl.
            field = _ReducedField(field, project)
        if model.discrete:
            states, status, message, stats = _run_discrete(field, times, y0, backend, project)
        elif isinstance(backend, Float64) and project is None:
            certifier = None
            if continuation and continuation_unavailable(model) is None:
                certifier = HardmaxCertifier(field, rtol, atol)
            elif continuation and cap_unavailable(model) is None:
                certifier = CapCertifier(atol)
            eigen = EigenRescaledField(model, instance.n, [(Vt.T, B) for Vt, B in field._heads]) \
                if EigenRescaledField.applies(model) else None
            states, status, message, stats, on_leg = _run_dop853(
                field if eigen is None else eigen, times, y0, rtol, atol, max_steps, certifier,
                eigen, monitor)
        else:
            certify, each_step = None, False
            if continuation and project is None and isinstance(backend, Arb):
                if continuation_unavailable(model) is None:
                    def certify(t, y):
                        return certify_arb(field, t, y, rtol, atol)
                elif cap_unavailable(model) is None:
                    def certify(t, y):
                        return certify_cap(t, y, atol)
                    each_step = True
            states, status, message, stats = _run_extrapolation(
                field, times, y0, backend, rtol, atol, max_steps, project, monitor, certify,
                each_step)
    return field, states, status, message, stats, on_leg


def _finish(instance: Instance, times: list[Fraction], backend: Backend, rtol: float,
            atol: float, group, field, states, status: str, message: str, stats: dict,
            on_leg: dict) -> Trajectory:
    """The :class:`Trajectory` of integrated ``states`` (recorded at the first ``times``)."""
    model = instance.model
    with backend.working_precision():
        traj = _record(field, times[:len(states)], states, backend, on_leg)
    traj.status, traj.message, traj.stats = status, message, stats
    traj.precision = {"backend": backend.name, "bits": backend.bits,
                      "digits": round(backend.digits, 2)}
    traj.tolerances = {"rtol": rtol, "atol": atol}
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


def _run_dop853(field, times, y0, rtol, atol, max_steps, certifier=None, eigen=None,
                monitor=None):
    """DOP853 from ``times[0]`` with dense output at the checkpoints; with a ``certifier``
    (:class:`~verify.flow.continuation.HardmaxCertifier`), every accepted step is tested for a
    certified hardmax and, once certified, the run continues on the closed-form
    :class:`~verify.flow.continuation.HardmaxLeg` (checked on its grid) and falls back to DOP853
    from the last time that passed if a margin closes. With ``eigen`` (then ``field`` itself, an
    :class:`~verify.flow.fields.EigenRescaledField`) the solver state is the eigen-coordinates
    ``w``; checkpoints see ``z = eigen.to_z(w)``."""
    from scipy.integrate import DOP853

    def to_z(w):
        return w if eigen is None else eigen.to_z(w)

    def from_z(z):
        return z if eigen is None else eigen.to_w(z)

    shape = y0.shape
    t_float = [float(t) for t in times]
    states, steps, nfev, index = [y0.copy()], 0, 0, 1
    status, message = "success", "reached the horizon"
    legs, on_leg, fallbacks = [], {}, []
    t_start, y_start, no_switch_before = t_float[0], from_z(y0), -math.inf
    while index < len(t_float):
        solver = DOP853(lambda t, y: field(t, y.reshape(shape)).ravel(), t_start,
                        y_start.ravel(), t_float[-1], rtol=rtol, atol=atol)
        leg = None
        while index < len(t_float):
            if steps >= max_steps:
                status, message = "max_steps", (
                    f"max_steps={max_steps} reached at t={solver.t:.6g}; raise max_steps or "
                    "loosen rtol.")
                break
            stop = None if monitor is None else monitor.check(solver.t, steps)
            if stop is not None:
                status, message = stop
                if status == "stalled":
                    message = (f"float64 {message} Typically float64 no longer resolves the "
                               "score differences that decide the attention (they are "
                               "multiplied by e^(2 mu t)); rerun with precision='auto'.")
                break
            outcome = solver.step()
            steps += 1
            if solver.status == "failed" or not np.all(np.isfinite(solver.y)):
                status = "nonfinite" if not np.all(np.isfinite(solver.y)) else "step_failure"
                message = f"DOP853 failed at t={solver.t:.6g}: {outcome or 'non-finite state'}."
                break
            if t_float[index] <= solver.t:  # dense output costs 3 evaluations: only when needed
                dense = solver.dense_output()
                while index < len(t_float) and t_float[index] <= solver.t:
                    states.append(to_z(dense(t_float[index]).reshape(shape)))
                    index += 1
            if certifier is not None and index < len(t_float) and solver.t > no_switch_before:
                y = solver.y.reshape(shape)
                leg = certifier.certify(solver.t, w=y, eigen=eigen) if eigen is not None \
                    else certifier.certify(solver.t, y)
                if leg is not None:
                    break
        nfev += solver.nfev
        if leg is None:
            break
        legs.append(leg)
        last, failed_at, nonfinite_at = _follow_leg(
            leg, t_float, states, finite=lambda z: bool(np.all(np.isfinite(z))),
            # a hardmax leg's scores come in cancellation-free form: the record reads them
            on_leg=on_leg if isinstance(leg, HardmaxLeg) else None)
        if last is not None:
            index = last + 1
        if nonfinite_at is not None:
            status = "nonfinite"
            message = f"non-finite state at t={nonfinite_at:.6g} (closed form)."
            break
        if failed_at is not None:  # a margin closed: integrate again from the last good time
            fallbacks.append({"at": failed_at, "restart": leg.t_last})
            t_start, y_start = leg.t_last, from_z(leg.state(leg.t_last))
            no_switch_before = failed_at
    stats = {"solver": "DOP853", "steps": steps, "rhs_evals": nfev}
    if eigen is not None:
        stats["coordinates"] = "eigen"
    if certifier is not None:
        stats["continuation"] = {"certification_tests": certifier.checks,
                                 "legs": [leg.describe() for leg in legs],
                                 "fallbacks": fallbacks,
                                 "t_switch": legs[0].t0 if legs else None}
    return states, status, message, stats, on_leg


def _follow_leg(leg, times, states: list, *, finite=None, on_leg: dict | None = None):
    """Follow a certified leg (hardmax continuation or consensus cap, float64 or ``arb``) over
    the checkpoints ``times``: the one leg loop of both integrators.

    The leg's own grid (``leg.grid(times)``, the checkpoints it reaches and the times between
    them where it re-checks itself) is walked until a check fails; at every checkpoint ``k``
    reached, the closed-form state is appended to ``states`` (and ``on_leg[k] = leg`` when
    ``on_leg`` is given). ``finite(state)`` (float64 runs) stops the walk at a non-finite state.

    Returns ``(last, failed_at, nonfinite_at)``: the last checkpoint index appended (``None``:
    none), the time at which a check failed (``None``: the leg held to its end) and the time of
    a non-finite state (``None``: none).
    """
    last = None
    for t, k in leg.grid(times):
        if not leg.check(t):
            return last, t, None
        if k is not None:
            state = leg.state(t)
            if finite is not None and not finite(state):
                return last, None, t
            states.append(state)
            if on_leg is not None:
                on_leg[k] = leg
            last = k
    return last, None, None


class _OffsetMonitor:
    """A :class:`RunMonitor` seen by one segment of a run: its step counts continue the
    earlier segments' (the stall window and the progress lines count the whole run)."""

    def __init__(self, monitor: RunMonitor, offset: int) -> None:
        self.monitor, self.offset = monitor, offset

    def check(self, t, steps):
        return self.monitor.check(t, steps + self.offset)


def _run_extrapolation(field, times, y0, backend, rtol, atol, max_steps, project, monitor,
                       certify=None, each_step: bool = False):
    """The extrapolation integrator (:func:`~verify.numerics.integrate_extrapolation`) through
    ``times``; with ``certify(t, y)`` every checkpoint is tested for a leg that ends the
    integration: a certified hardmax (an ``arb`` run of the rescaled softmax form,
    :func:`~verify.flow.continuation.certify_arb`: the closed form
    :class:`~verify.flow.continuation.ArbHardmaxLeg`, checked on its grid, falling back to
    integration from the last time that passed if a margin closes) or certified consensus on the
    sphere (:func:`~verify.flow.consensus_cap.certify_cap`: the state stays put; cheap enough to
    be tested after every accepted step, ``each_step``)."""

    states, legs, fallbacks = [y0], [], []
    totals = {"steps": 0, "accepted": 0, "rejected": 0, "rhs_evals": 0, "columns_used": {}}
    t_begin, y_begin, index, no_switch_before = times[0], y0, 1, None

    def switch(t, y):
        if no_switch_before is not None and t <= no_switch_before:
            return None
        return certify(t, y)

    while True:
        result = integrate_extrapolation(
            field, [t_begin, *times[index:]], y_begin, backend=backend, rtol=rtol, atol=atol,
            max_steps=max(1, max_steps - totals["steps"]), project=project,
            monitor=None if monitor is None else _OffsetMonitor(monitor, totals["steps"]),
            switch=None if certify is None else switch, switch_each_step=each_step)
        states.extend(result.ys[1:])
        index += len(result.ys) - 1
        for key in ("steps", "accepted", "rejected", "rhs_evals"):
            totals[key] += result.stats.get(key, 0)
        for columns, count in result.stats.get("columns_used", {}).items():
            totals["columns_used"][columns] = totals["columns_used"].get(columns, 0) + count
        totals.update({key: result.stats[key] for key in ("rtol", "max_columns", "t_final")
                       if key in result.stats})
        status, message = result.status, result.message
        if status != "switched":
            break
        leg = result.switch
        legs.append(leg)
        with backend.working_precision():
            last, failed_at, _ = _follow_leg(leg, times, states)
            if last is not None:
                index = last + 1
            status, message = "success", "reached the horizon"
            if failed_at is None:
                break
            fallbacks.append({"at": float(failed_at), "restart": float(leg.t_last)})
            t_begin, y_begin, no_switch_before = leg.t_last, leg.state(leg.t_last), \
                failed_at
    if status == "stalled":
        message = (f"{message} At {backend.bits} bits the score differences that decide "
                   "the attention (multiplied by e^(2 mu t)) may be below the working "
                   "precision; precision='auto' sizes the bits from that growth.")
    stats = {"solver": "GraggBulirschStoer", **{
        key: str(value) if isinstance(value, Fraction) else value
        for key, value in totals.items()}}
    if certify is not None:
        stats["continuation"] = {"legs": [leg.describe() for leg in legs],
                                 "fallbacks": fallbacks,
                                 "t_switch": legs[0].describe()["t0"] if legs else None}
    return states, status, message, stats


def _run_discrete(field, times, y0, backend, project):
    model = field.model
    h = model.h
    layers = [t / h for t in times]
    if any(k.denominator != 1 for k in layers):
        raise InvalidArgument(
            f"form='discrete' with h={h}: every checkpoint time must be a whole number of layers "
            "(a multiple of h); choose horizon and checkpoints accordingly."
        )
    arb = isinstance(backend, Arb)
    h_b = backend.scalar(h)
    states, x, k = [y0], y0, 0
    for target in layers[1:]:
        while k < target:
            x = x + h_b * field(k * h_b, x)  # x[k+1] = x[k] + h Σ_j P_ij[k] V x_j[k] (+ variants)
            if arb:
                x = x.mid()
            if project is not None:
                x = project(x)
            k += 1
            if not arb and not np.all(np.isfinite(x)):
                return states, "nonfinite", f"non-finite tokens at layer {k}.", {"layers": k}
        states.append(x)
    return states, "success", "reached the last layer", {"layers": k}


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
