r"""What a judge receives: one conclusion, one instance, one run, and the shared lookups.

An :class:`Evaluation` holds the request (instance, family, seed, horizon, ...), the trajectory
judged (with its error estimate and its ``reference_run``, the second route for any derived
quantity), the conclusion, a cache shared by the conclusions of one instance at one horizon,
and — for the predictions — the whole run and a cache shared by every horizon judged on it (the
horizon ``T`` and the re-check ``3T/2``: a prediction is computed once per run). It gives
the judges the three things they share:

* :func:`quantity_error` — the error of a quantity computed on the run: its distance to the
  same quantity on the reference run, plus the rounding of the stored values;
* :meth:`Evaluation.value` — a conclusion key's value, from a formula of the initial data or
  from a registered prediction (``{ predict = "name" }``, :mod:`verify.predict`: computed once
  per run, at its first certified time), with its error and basis;
* :meth:`Evaluation.certificate` — the certificate of the end state, when there is one
  (:func:`verify.analysis.end_certificates.certify_end`): the only ground on which a statement about
  ``t → ∞`` may be *violated*.

Examples
--------
>>> [round(float(e), 12) for e in quantity_error(np.array([1.0, 2.0]), np.array([1.0, 2.5]))]
[0.0, 0.5]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from verify.analysis.end_certificates import certify_end
from verify.analysis.evidence import Basis
from verify.errors import InvalidArgument
from verify.numerics import STORED_ULPS, ulps
from verify.predict._expressions import default_variable, evaluate, initial_namespace
from verify.vocabulary.conclusions import PREDICTIONS, ConclusionSpec, is_prediction

__all__ = ["Evaluation", "Value", "quantity_error", "_functional", "projected_tokens"]


def quantity_error(value: np.ndarray, reference: np.ndarray | None) -> np.ndarray:
    """The error estimate of a quantity computed on a trajectory: ``|q(run) − q(reference)|``
    plus 4 ulp of ``|q|`` for the rounding of the stored values; ``inf`` without a reference."""
    value = np.asarray(value, dtype=float)
    if reference is None:
        return np.full(value.shape, np.inf)
    return np.abs(value - np.asarray(reference, dtype=float)) \
        + ulps(STORED_ULPS, np.abs(value))


@dataclass(frozen=True)
class Value:
    """A conclusion key's value: a float array, its error (max-norm, same unit), the basis that
    error rests on (*exact* for a formula of the exact initial data, whose rounding the judges
    add; a prediction from the run says *estimate*) and, for a prediction, its evidence (what it
    was computed from)."""

    array: np.ndarray
    error: float = 0.0
    evidence: dict = field(default_factory=dict)
    source: str = "formula"
    basis: Basis = Basis.EXACT


@dataclass
class Evaluation:
    """What a judge receives for one instance (see the module docstring).

    Attributes
    ----------
    request : verify.claim.CheckRequest
    trajectory : verify.flow.trajectory.Trajectory
        A successful run with an error estimate and its ``reference_run``.
    spec : ConclusionSpec
    cache : dict
        Shared between the conclusions of one instance at one horizon.
    shared : dict, optional
        Shared by every horizon judged on the same run (predictions); default ``cache``.
    run : Trajectory, optional
        The whole run ``trajectory`` is a part of (the horizon ``T`` of a run to ``3T/2``);
        default ``trajectory``.
    """

    request: object
    trajectory: object
    spec: ConclusionSpec
    cache: dict = field(default_factory=dict)
    shared: dict | None = None
    run: object = None

    @property
    def predictions(self) -> dict:
        """The cache of the predictions: one per run."""
        return self.cache if self.shared is None else self.shared

    @property
    def whole_run(self):
        """The whole run (predictions are read on it, at its first certified time)."""
        return self.trajectory if self.run is None else self.run

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
        """The value of the key ``key``: a prediction (computed once per run, shared by the
        horizon and its re-check) or a formula of the initial data (exact inputs rounded once:
        error 0 here, the rounding is in the judges' error terms)."""
        given = self.parameters[key]
        if is_prediction(given):
            name = given["predict"]
            cache_key = ("prediction", name, repr(self.parameters.get("functional")),
                         repr(self.parameters.get("variable")))
            if cache_key not in self.predictions:
                self.predictions[cache_key] = PREDICTIONS[name].function(self)
            return self.predictions[cache_key]
        return Value(evaluate(given, initial_namespace(self.instance)))

    def certificate(self):
        """The end state's certificate (``None`` when there is none) and the reason, computed
        once per run (:func:`verify.analysis.end_certificates.certify_end`)."""
        if "certificate" not in self.cache:
            self.cache["certificate"] = certify_end(self.instance, self.trajectory)
        return self.cache["certificate"]


def _functional(ev) -> Value | None:
    if "functional" not in ev.parameters:
        return None
    W = ev.value("functional")
    rows = np.atleast_2d(W.array)
    if rows.ndim != 2 or rows.shape[1] != ev.instance.d or not np.all(np.isfinite(rows)):
        raise InvalidArgument(f"functional: gives shape {W.array.shape}; it must be a finite "
                              f"k×{ev.instance.d} matrix.")
    return Value(rows, W.error, W.evidence, W.source, W.basis)


def projected_tokens(ev, tokens: np.ndarray) -> np.ndarray:
    """``W z_i`` for every token (rows of ``tokens``, any leading shape) with the conclusion's
    functional ``W``, or the tokens themselves."""
    W = _functional(ev)
    return tokens if W is None else tokens @ W.array.T
