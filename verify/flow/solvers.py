r"""Solvers and the step-size controller of a run, kept apart (in the style of diffrax).

:func:`verify.flow.simulate.simulate` composes four objects: the vector field
(:mod:`verify.flow.fields`), the arithmetic backend (:class:`~verify.numerics.Float64`,
:class:`~verify.numerics.Arb`), a :class:`Solver` and a :class:`StepController`. The controller
holds what the error control is asked for; the solver advances the state with it; the one leg
loop (``verify.flow.simulate._solve``) hands over to a certified :class:`~verify.flow.legs.Leg`
when a :class:`~verify.flow.legs.Certifier` finds one and back to the solver where the leg's
check fails. The reference run of the error estimate is the same call with a tighter controller
(:meth:`StepController.tighter`) and a backend with more bits
(:func:`~verify.flow.precision_policy.reference_settings`).

* :class:`DOP853` — SciPy's DOP853 (order 8, embedded error estimate; stepped by the lean
  :class:`~verify.flow.dop853.DOP853Stepper`), float64, optionally in the eigen-coordinates of
  the rescaled field;
* :class:`Extrapolation` — Gragg–Bulirsch–Stoer extrapolation
  (:func:`~verify.numerics.integrate_extrapolation`) in any backend, exact rational times;
* :class:`ResidualLayers` — the discrete layers ``x[k+1] = x[k] + h f(kh, x[k])`` themselves.

A solver's :meth:`Solver.segment` integrates from ``(t_start, y_start)`` through the remaining
checkpoints and stops at the first state where the certifier returns a leg; its ``stats`` are
summed over segments by :meth:`Solver.add` and reported by :meth:`Solver.summary`.

Examples
--------
>>> StepController(rtol=1e-10, atol=1e-12).tighter(1e-15)
StepController(rtol=1e-15, atol=1e-15, max_steps=800000)
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from verify.errors import InvalidArgument
from verify.flow.dop853 import DOP853Stepper
from verify.flow.legs import Certifier, Leg
from verify.numerics import Arb, Backend, integrate_extrapolation
from verify.numerics._monitor import RunMonitor

__all__ = ["StepController", "Segment", "Solver", "DOP853", "Extrapolation", "ResidualLayers",
           "REFERENCE_STEPS", "dop853_local_error"]

REFERENCE_STEPS = 4  # a reference run may take this many times the run's max_steps


@dataclass(frozen=True)
class StepController:
    r"""What the step-size control of a run is asked for: a step is accepted when

    .. math:: \operatorname{rms}\Big(\frac{e}{\text{atol} + \text{rtol}\,|y|}\Big) \le 1

    (``e`` the solver's error estimate of the step), and the run stops with status
    ``"max_steps"`` after ``max_steps`` attempted steps. The solvers implement the control
    (DOP853's and GBS's own step-size and order rules); this object only carries the settings,
    so that the reference run differs from the run by its controller alone.
    """

    rtol: float
    atol: float
    max_steps: int = 200_000

    def tighter(self, rtol: float) -> StepController:
        """The controller of the reference run: ``rtol``, ``atol`` at most ``rtol``, and
        :data:`REFERENCE_STEPS` times the steps."""
        return StepController(rtol, min(self.atol, rtol), REFERENCE_STEPS * self.max_steps)


@dataclass
class Segment:
    """What one :meth:`Solver.segment` returns.

    Attributes
    ----------
    states : list
        The states at the checkpoints reached (after ``times[index - 1]``), in the field's
        coordinates.
    status, message : str
        ``"success"`` when it reached the horizon or a leg took over, else why it stopped.
    leg : Leg or None
        The certified leg that ended the segment.
    steps : int
        Steps attempted (they count against ``max_steps`` over the whole run).
    stats : dict
        The solver's counts for this segment (:meth:`Solver.add` sums them).
    """

    states: list
    status: str
    message: str
    leg: Leg | None
    steps: int
    stats: dict


class _OffsetMonitor:
    """A :class:`RunMonitor` seen by one segment of a run: its step counts continue the
    earlier segments' (the stall window and the progress lines count the whole run)."""

    def __init__(self, monitor: RunMonitor, offset: int) -> None:
        self.monitor, self.offset = monitor, offset

    def check(self, t, steps):
        return self.monitor.check(t, steps + self.offset)


class Solver(abc.ABC):
    """Advances a run between certified legs.

    Attributes
    ----------
    name : str
        Recorded as ``Trajectory.stats["solver"]``.
    reports_certification_tests : bool
        Whether ``stats["continuation"]`` counts the certifier's tests.
    """

    name: str = "abstract"
    reports_certification_tests: bool = False

    def times(self, times: list[Fraction]) -> list:
        """The checkpoint times in the solver's own type (exact ``Fraction`` by default)."""
        return list(times)

    def finite(self, state: object) -> bool:
        """Is a state a leg gives finite? (Only float64 solvers test it.)"""
        return True

    @abc.abstractmethod
    def segment(self, field, backend: Backend, times: list[Fraction], index: int, t_start,
                y_start, controller: StepController, *, certifier: Certifier | None = None,
                no_switch_before=None, monitor: RunMonitor | None = None,
                steps_done: int = 0) -> Segment:
        """Integrate ``ẏ = field(t, y)`` from ``(t_start, y_start)`` through the checkpoints
        ``times[index:]``; after a step past ``no_switch_before`` (if given) ask ``certifier``
        for a leg and stop with it. ``steps_done`` steps were spent by earlier segments."""

    @abc.abstractmethod
    def totals(self) -> dict:
        """The counts before the first segment."""

    @abc.abstractmethod
    def add(self, totals: dict, stats: dict) -> None:
        """Add a segment's ``stats`` to ``totals``."""

    @abc.abstractmethod
    def summary(self, totals: dict) -> dict:
        """``Trajectory.stats`` (without the continuation record) from ``totals``."""


class DOP853(Solver):
    """DOP853 with dense output at the checkpoints (float64): SciPy's method, step-size control
    and interpolant, stepped by :class:`~verify.flow.dop853.DOP853Stepper`.

    Parameters
    ----------
    eigen : EigenRescaledField, optional
        Integrate the rescaled field in its eigen-coordinates ``w`` (the field of the run is
        then this object); states and legs see ``z = eigen.to_z(w)``.
    observer : callable, optional
        Called after every accepted step with ``(t_k, y_k, t_{k+1}, y_{k+1}, f_k, f_{k+1},
        δ_k)`` in the integrated coordinates (``w`` with ``eigen``), ``δ_k`` DOP853's embedded
        error estimate of the step (what its step control reads); e.g.
        :class:`verify.flow.global_error.LinearisedGlobalError`. It changes nothing in the run.
    """

    name = "DOP853"
    reports_certification_tests = True

    def __init__(self, eigen=None, observer=None) -> None:
        self.eigen = eigen
        self.observer = observer

    def times(self, times: list[Fraction]) -> list[float]:
        return [float(t) for t in times]

    def finite(self, state: object) -> bool:
        return bool(np.all(np.isfinite(state)))

    def segment(self, field, backend, times, index, t_start, y_start, controller, *,
                certifier=None, no_switch_before=None, monitor=None, steps_done=0) -> Segment:
        eigen = self.eigen
        t_float = self.times(times)
        after = -math.inf if no_switch_before is None else no_switch_before
        y_w = y_start if eigen is None else eigen.to_w(y_start)
        solver = DOP853Stepper(field if eigen is None else eigen, t_start, y_w, t_float[-1],
                               controller.rtol, controller.atol)
        states, steps, leg = [], steps_done, None
        status, message = "success", "reached the horizon"
        while index < len(t_float):
            if steps >= controller.max_steps:
                status, message = "max_steps", (
                    f"max_steps={controller.max_steps} reached at t={solver.t:.6g}; raise "
                    "max_steps or loosen rtol.")
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
            if self.observer is not None:
                self._observe(solver)
            if t_float[index] <= solver.t:  # dense output costs 3 evaluations: only when needed
                dense = solver.interpolant()
                while index < len(t_float) and t_float[index] <= solver.t:
                    w = dense(t_float[index])
                    states.append(w if eigen is None else eigen.to_z(w))
                    index += 1
            if certifier is not None and index < len(t_float) and solver.t > after:
                leg = certifier.certify(solver.t, solver.y, eigen=eigen)
                if leg is not None:
                    break
        return Segment(states, status, message, leg, steps - steps_done,
                       {"steps": steps - steps_done, "rhs_evals": solver.nfev})

    def _observe(self, solver: DOP853Stepper) -> None:
        """Hand the accepted step to the observer (``K_0``, ``K_12``: the field at both ends)
        with its error estimate (:func:`dop853_local_error`)."""
        K = solver.K
        shape = solver.shape
        self.observer(solver.t_old, solver.y_old, solver.t, solver.y, K[0].reshape(shape),
                      K[-1].reshape(shape),
                      dop853_local_error(solver, solver.t - solver.t_old).reshape(shape))

    def totals(self) -> dict:
        return {"steps": 0, "rhs_evals": 0}

    def add(self, totals: dict, stats: dict) -> None:
        totals["steps"] += stats["steps"]
        totals["rhs_evals"] += stats["rhs_evals"]

    def summary(self, totals: dict) -> dict:
        stats = {"solver": self.name, "steps": totals["steps"], "rhs_evals": totals["rhs_evals"]}
        if self.eigen is not None:
            stats["coordinates"] = "eigen"
        return stats


def dop853_local_error(solver, h: float) -> np.ndarray:
    r"""The error estimate of SciPy's DOP853 for its last step of size ``h`` (Hairer's: with
    ``e₅ = h Σ E5_j K_j`` and ``e₃ = h Σ E3_j K_j`` the differences to the embedded orders 5
    and 3, ``e₅ |e₅| / \sqrt{e₅² + (e₃/10)²}`` per entry): the value of SciPy's private
    ``DOP853._estimate_error`` to a few ulps, with a square root of squares instead of
    ``hypot`` (~⅔ of its CPU on a 128×128 state; entries below ~1e-154, whose squares
    underflow, get the uncorrected ``h e₅``)."""
    K = solver.K
    err5, err3 = solver.E5 @ K, solver.E3 @ K
    denominator = err5 * err5
    denominator += 0.01 * (err3 * err3)
    np.sqrt(denominator, out=denominator)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, h * err5 * (np.abs(err5) / denominator), h * err5)


class Extrapolation(Solver):
    """Gragg–Bulirsch–Stoer extrapolation (:func:`~verify.numerics.integrate_extrapolation`)
    through exact rational checkpoints, in the backend's arithmetic.

    Parameters
    ----------
    project : callable, optional
        Applied to the initial state and after every accepted step (the projection onto the
        fixed subspace of the instance's exact symmetries).
    """

    name = "GraggBulirschStoer"

    def __init__(self, project=None) -> None:
        self.project = project

    def segment(self, field, backend, times, index, t_start, y_start, controller, *,
                certifier=None, no_switch_before=None, monitor=None, steps_done=0) -> Segment:
        def switch(t, y):
            if no_switch_before is not None and t <= no_switch_before:
                return None
            return certifier.certify(t, y)

        result = integrate_extrapolation(
            field, [t_start, *times[index:]], y_start, backend=backend, rtol=controller.rtol,
            atol=controller.atol, max_steps=max(1, controller.max_steps - steps_done),
            project=self.project,
            monitor=None if monitor is None else _OffsetMonitor(monitor, steps_done),
            switch=None if certifier is None else switch,
            switch_each_step=certifier is not None and certifier.every_step)
        status, message = result.status, result.message
        if status == "stalled":
            message = (f"{message} At {backend.bits} bits the score differences that decide "
                       "the attention (multiplied by e^(2 mu t)) may be below the working "
                       "precision; precision='auto' sizes the bits from that growth.")
        leg = result.switch if status == "switched" else None
        return Segment(result.ys[1:], "success" if leg is not None else status, message, leg,
                       result.stats.get("steps", 0), result.stats)

    def totals(self) -> dict:
        return {"steps": 0, "accepted": 0, "rejected": 0, "rhs_evals": 0, "columns_used": {}}

    def add(self, totals: dict, stats: dict) -> None:
        for key in ("steps", "accepted", "rejected", "rhs_evals"):
            totals[key] += stats.get(key, 0)
        for columns, count in stats.get("columns_used", {}).items():
            totals["columns_used"][columns] = totals["columns_used"].get(columns, 0) + count
        totals.update({key: stats[key] for key in ("rtol", "max_columns", "t_final")
                       if key in stats})

    def summary(self, totals: dict) -> dict:
        return {"solver": self.name, **{key: str(value) if isinstance(value, Fraction) else value
                                        for key, value in totals.items()}}


class ResidualLayers(Solver):
    """The discrete layers ``x[k+1] = x[k] + h f(kh, x[k])`` (``form="discrete"``), in the
    backend's arithmetic (``arb``: midpoints kept); no tolerance, no legs.

    Parameters
    ----------
    project : callable, optional
        Applied after every layer.
    """

    name = "layers"

    def __init__(self, project=None) -> None:
        self.project = project

    def segment(self, field, backend, times, index, t_start, y_start, controller, *,
                certifier=None, no_switch_before=None, monitor=None, steps_done=0) -> Segment:
        h = field.model.h
        layers = [t / h for t in times]
        if any(k.denominator != 1 for k in layers):
            raise InvalidArgument(
                f"form='discrete' with h={h}: every checkpoint time must be a whole number of "
                "layers (a multiple of h); choose horizon and checkpoints accordingly."
            )
        arb = isinstance(backend, Arb)
        h_b = backend.scalar(h)
        states, x, k = [], y_start, int(Fraction(t_start) / h)  # t_start: 0, or a resume's end
        for target in layers[index:]:
            while k < target:
                x = x + h_b * field(k * h_b, x)  # x[k+1] = x[k] + h Σ_j P_ij[k] V x_j[k] (+ …)
                if arb:
                    x = x.mid()
                if self.project is not None:
                    x = self.project(x)
                k += 1
                if not arb and not np.all(np.isfinite(x)):
                    return Segment(states, "nonfinite", f"non-finite tokens at layer {k}.", None,
                                   k, {"layers": k})
            states.append(x)
        return Segment(states, "success", "reached the last layer", None, k, {"layers": k})

    def totals(self) -> dict:
        return {}

    def add(self, totals: dict, stats: dict) -> None:
        totals.update(stats)

    def summary(self, totals: dict) -> dict:
        return dict(totals)
