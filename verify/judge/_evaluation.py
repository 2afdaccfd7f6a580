r"""What a judge receives: one conclusion, one instance, one run, and the shared lookups.

An :class:`Evaluation` holds the request (instance, family, seed, horizon, ...), the trajectory
(with its error estimate and its ``reference_run``, the second route for any derived quantity),
the conclusion and a cache shared by the conclusions of one instance at one horizon. It gives
the judges the three things they share:

* :func:`quantity_error` — the error of a quantity computed on the run: its distance to the
  same quantity on the reference run, plus the rounding of the stored values;
* :meth:`Evaluation.value` — a conclusion key's value, from a formula of the initial data or
  from a registered prediction (``{ predict = "name" }``, :mod:`verify.predict`), with its error;
* :meth:`Evaluation.certificate` — the certificate of the end state, when there is one
  (:func:`verify.judge._certificates.certify_end`): the only ground on which a statement about
  ``t → ∞`` may be *violated*.

Examples
--------
>>> [round(float(e), 12) for e in quantity_error(np.array([1.0, 2.0]), np.array([1.0, 2.5]))]
[0.0, 0.5]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from verify.claim._vocabulary import PREDICTIONS, ConclusionSpec, is_prediction
from verify.judge._expressions import default_variable, evaluate, initial_namespace

__all__ = ["Evaluation", "Value", "quantity_error"]


def quantity_error(value: np.ndarray, reference: np.ndarray | None) -> np.ndarray:
    """The error estimate of a quantity computed on a trajectory: ``|q(run) − q(reference)|``
    plus 4 ulp of ``|q|`` for the rounding of the stored values; ``inf`` without a reference."""
    value = np.asarray(value, dtype=float)
    if reference is None:
        return np.full(value.shape, np.inf)
    return np.abs(value - np.asarray(reference, dtype=float)) \
        + 4 * np.finfo(float).eps * np.abs(value)


@dataclass(frozen=True)
class Value:
    """A conclusion key's value: a float array, its error bound (max-norm, same unit) and, for a
    prediction, its evidence (what it was computed from)."""

    array: np.ndarray
    error: float = 0.0
    evidence: dict = field(default_factory=dict)
    source: str = "formula"


@dataclass
class Evaluation:
    """What a judge receives for one instance (see the module docstring).

    Attributes
    ----------
    request : verify.claim.CheckRequest
    trajectory : verify.trajectory.Trajectory
        A successful run with an error estimate and its ``reference_run``.
    spec : ConclusionSpec
    cache : dict
        Shared between the conclusions of one instance at one horizon.
    """

    request: object
    trajectory: object
    spec: ConclusionSpec
    cache: dict = field(default_factory=dict)

    @property
    def parameters(self) -> dict:
        return self.spec.parameters

    @property
    def instance(self):
        return self.request.instance

    def variable(self) -> str:
        """The tokens this conclusion reads: its ``variable`` key, else ``z`` when the run has
        rescaled tokens, else ``x``."""
        return self.parameters.get("variable", default_variable(self.trajectory))

    def value(self, key: str) -> Value:
        """The value of the key ``key``: a prediction (computed once per instance and horizon)
        or a formula of the initial data (exact inputs rounded once: error 0 here, the
        rounding is in the judges' error terms)."""
        given = self.parameters[key]
        if is_prediction(given):
            name = given["predict"]
            cache_key = ("prediction", name)
            if cache_key not in self.cache:
                self.cache[cache_key] = PREDICTIONS[name].function(self)
            return self.cache[cache_key]
        return Value(evaluate(given, initial_namespace(self.instance)))

    def certificate(self):
        """The end state's certificate (``None`` when there is none) and the reason, computed
        once per run (:func:`verify.judge._certificates.certify_end`)."""
        if "certificate" not in self.cache:
            from verify.judge._certificates import certify_end

            self.cache["certificate"] = certify_end(self.instance, self.trajectory)
        return self.cache["certificate"]
