r"""Certified legs: the protocol between a certifier, the closed form it certifies and the run.

A run of :func:`verify.flow.simulate.simulate` integrates ``ẏ = f(t, y)`` until a *certifier*
proves, at a state ``(t₀, y(t₀))`` it is shown after a step, that from there on the flow is known
without integrating: the attention is a certified 0/1 leader map and the field is linear
(:mod:`verify.flow.continuation`), or every token is in a cap that the dynamics never leaves
(:mod:`verify.flow.consensus_cap`). It then returns a *leg*, and the run follows the leg instead of
the solver, checking it as it goes, until the horizon or until a check fails; from the last time
that passed the solver takes over again. In the style of SciPy's ``OdeSolver``: one abstract base
per role, documented methods, and the consumer (:func:`follow_leg`, the one leg loop) written once
against the base only.

A **leg** starting at ``t₀`` is a map ``t ↦ y(t)`` for ``t ≥ t₀`` with a test ``check(t)`` such
that, while every check up to ``t`` passed, ``state(t)`` is the run's state at ``t`` to within
the error the certificate states (``describe()``): the closed form's own bound, plus the state error
at ``t₀`` that the certificate assumed (checked afterwards against the reference run).

To add a certifier and its leg, implement:

1. a subclass of :class:`Leg`: ``t0``, ``t_last`` (attributes), :meth:`Leg.grid`,
   :meth:`Leg.check`, :meth:`Leg.state`, :meth:`Leg.describe` (with ``"kind"``, ``"t0"``,
   ``"t_end"``); if it gives the scores at its checkpoints in a form better than the recorder
   would compute from ``state(t)`` (cancellation-free), subclass :class:`ScoredLeg` instead;
2. a subclass of :class:`Certifier`: :meth:`Certifier.certify` returns the leg, or ``None``;
   ``every_step`` says whether it is cheap enough to be asked after every accepted step;
3. a line in ``verify.flow.simulate._certifier_for`` saying for which models and backends it
   applies (a ``Model`` question, e.g. :func:`~verify.flow.consensus_cap.cap_unavailable`).

The invariants a leg keeps, which :func:`follow_leg` relies on:

* ``grid(checkpoints)`` lists ``(t, k)`` in increasing ``t``, every ``t > t₀``; every checkpoint
  after ``t₀`` appears once with its index ``k``, extra check times with ``k = None``;
* ``check`` is called at increasing times; ``t_last`` is the last time it passed (``t₀`` before
  any), so ``state(t_last)`` is a certified state to restart the solver from;
* ``state(t)`` is in the run's representation (a float64 ``ndarray``, or an ``arb_mat`` of
  midpoints), like the solver's own states, and costs no integration;
* times are the run's times: ``float`` for DOP853 runs, exact ``Fraction`` for the
  extrapolation integrator.

Examples
--------
A leg that keeps a state fixed (what a certified consensus does), followed over four checkpoints:

>>> import numpy as np
>>> class Fixed(Leg):
...     def __init__(self, t0, y0):
...         self.t0, self.t_last, self.y0 = t0, t0, y0
...     def grid(self, checkpoints):
...         return [(t, k) for k, t in enumerate(checkpoints) if t > self.t0]
...     def check(self, t):
...         self.t_last = t
...         return True
...     def state(self, t):
...         return self.y0.copy()
...     def describe(self):
...         return {"kind": "fixed", "t0": self.t0, "t_end": self.t_last}
>>> states = [np.zeros(2), np.ones(2)]
>>> follow_leg(Fixed(1.0, np.ones(2)), [0.0, 1.0, 2.0, 3.0], states)
(3, None, None)
>>> len(states), Fixed(1.0, np.ones(2)).grid([0.0, 1.0, 2.0])
(4, [(2.0, 2)])
"""

from __future__ import annotations

import abc
from collections.abc import Callable

import numpy as np

__all__ = ["Leg", "ScoredLeg", "Certifier", "follow_leg"]


class Leg(abc.ABC):
    """The flow from ``(t0, y(t0))`` on, known without integration while :meth:`check` passes.

    Attributes
    ----------
    t0 : time
        Where the leg starts (the state the certifier was shown).
    t_last : time
        The last time :meth:`check` passed (``t0`` before any check).
    """

    t0: object
    t_last: object

    @abc.abstractmethod
    def grid(self, checkpoints: list) -> list[tuple[object, int | None]]:
        """The times after ``t0`` at which the leg is checked, in increasing order: every
        checkpoint after ``t0`` with its index in ``checkpoints``, and any extra check time with
        index ``None``."""

    @abc.abstractmethod
    def check(self, t: object) -> bool:
        """Is the certificate still valid at ``t``? (Called at increasing times; a pass moves
        ``t_last`` to ``t``.)"""

    @abc.abstractmethod
    def state(self, t: object) -> object:
        """The state at ``t`` (``t0 ≤ t ≤ t_last``) in the run's representation."""

    @abc.abstractmethod
    def describe(self) -> dict:
        """A JSON-ready record for ``Trajectory.stats["continuation"]["legs"]``: at least
        ``"kind"``, ``"t0"`` and ``"t_end"`` (floats), and what bounds the leg's error."""


class ScoredLeg(Leg):
    """A leg that also gives, at its checkpoints, the scaled scores ``(S̃, L)``, the score
    margins and the token-form state ``x`` in its own form, which the recorded trajectory takes
    instead of computing them from :meth:`Leg.state` (where they would cancel)."""

    @abc.abstractmethod
    def scores(self, t: float) -> tuple[np.ndarray, float]:
        """``(S̃, L)`` at ``t``, with the scores ``S = e^L S̃``."""

    @abc.abstractmethod
    def margins(self, t: float) -> np.ndarray:
        """Per row, the gap between the largest allowed score and the next one (scaled)."""

    @abc.abstractmethod
    def x_state(self, t: float) -> np.ndarray:
        """The tokens ``x(t)`` of the unscaled form."""


class Certifier(abc.ABC):
    """Decides, at a state of a run, whether a :class:`Leg` can take over from there.

    Attributes
    ----------
    every_step : bool
        ``True``: cheap enough (about one field evaluation) to be asked after every accepted
        step; ``False``: the extrapolation integrator asks only at checkpoints. DOP853 asks after
        every accepted step.
    checks : int
        How many times :meth:`certify` was called (DOP853 runs report it).
    """

    every_step: bool = True
    checks: int = 0

    @abc.abstractmethod
    def certify(self, t: object, y: object, *, eigen: object = None) -> Leg | None:
        """The leg starting at ``(t, y)``, or ``None`` when nothing is certified there.

        ``y`` is the solver's state; with ``eigen`` (an
        :class:`~verify.flow.fields.EigenRescaledField`, float64 runs of the rescaled form) it
        is in that field's eigen-coordinates ``w`` and ``eigen.to_z(y)`` gives the tokens."""


def follow_leg(leg: Leg, times: list, states: list, *,
               finite: Callable[[object], bool] | None = None,
               on_leg: dict | None = None) -> tuple[int | None, object, object]:
    """Follow ``leg`` over the checkpoints ``times``: the one leg loop of every solver.

    The leg's grid (``leg.grid(times)``) after ``leg.t_last`` is walked until a check fails (a
    leg followed again after its run was resumed, :func:`verify.flow.simulate.simulate`, does
    not repeat the checks it passed); at every checkpoint ``k``
    reached, ``leg.state(t)`` is appended to ``states`` (and ``on_leg[k] = leg`` when ``on_leg``
    is given and the leg is a :class:`ScoredLeg`). ``finite(state)`` (float64 runs) stops the
    walk at a non-finite state.

    Returns ``(last, failed_at, nonfinite_at)``: the last checkpoint index appended (``None``:
    none), the time at which a check failed (``None``: the leg held to its end) and the time of
    a non-finite state (``None``: none).
    """
    scored = on_leg is not None and isinstance(leg, ScoredLeg)
    last = None
    for t, k in leg.grid(times):
        if t <= leg.t_last:
            continue
        if not leg.check(t):
            return last, t, None
        if k is not None:
            state = leg.state(t)
            if finite is not None and not finite(state):
                return last, None, t
            states.append(state)
            if scored:
                on_leg[k] = leg
            last = k
    return last, None, None
