r"""Named quantities of a run (``diameter``, ``energy``,
``attention-gap``, ...) and formulas of the state, per checkpoint, with their error estimate:
what ``monotone``, ``inequality``, ``rate``, ``events`` and ``tends`` read.
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Real

import numpy as np

from verify.analysis.graph import undecided_nodes
from verify.analysis.leader_map import hardmax_at
from verify.errors import InvalidArgument
from verify.exact.plain import fail, suggest
from verify.flow.trajectory import token_array
from verify.numerics import DIFFERENCE_ULPS, STORED_ULPS, ulps
from verify.predict._evaluation import quantity_error
from verify.predict._expressions import (
    check_expression,
    default_variable,
    diameter,
    evaluate,
    initial_namespace,
    state_namespace,
)

__all__ = ["LOG_QUANTITIES", "ATTENTION_QUANTITIES", "NAMED_QUANTITIES", "quantity_series",
           "quantity_or_reason", "check_quantity", "check_window", "check_tail",
           "quantity_columns", "scalar_quantity", "checkpoint_window"]




# --------------------------------------------------------------------------- quantities
def _hull_volume(p: np.ndarray) -> float:
    if p.shape[1] == 1:
        return float(np.max(p) - np.min(p))
    if len(p) <= p.shape[1]:
        return 0.0
    from scipy.spatial import ConvexHull, QhullError

    try:
        return float(ConvexHull(p).volume)
    except QhullError:  # a flat hull: volume 0
        return 0.0


def _attention_gap(P: np.ndarray) -> float:
    rows = np.sort(P, axis=1)[:, :-1]  # every entry but the largest of each row
    return float(np.max(np.sum(rows, axis=1))) if rows.size else 0.0


def _pairwise(p: np.ndarray) -> np.ndarray:
    i, j = np.triu_indices(len(p), 1)
    return np.linalg.norm(p[i] - p[j], axis=1)


def _per_checkpoint(function, attention: bool = False):
    """A named quantity of one checkpoint's tokens (or attention) as a series function."""
    def series(trajectory, instance, variable, shared):
        data = trajectory.attention if attention else trajectory.tokens(variable)
        return np.array([function(np.asarray(a, dtype=float)) for a in data])
    return series


def _consecutive_gaps(trajectory, instance, variable, shared):
    order = np.argsort(np.asarray(instance.x0_float())[:, 0], kind="stable")
    Z = np.asarray(trajectory.tokens(variable), dtype=float)[:, order, 0]
    return np.diff(Z, axis=1)


def _decided_targets(trajectory, instance, shared) -> dict:
    """Row -> certified hardmax target at the last checkpoint of the run (computed on the run
    and kept in ``shared``, so that its reference run uses the same rows)."""
    if "targets" not in shared:
        last = len(trajectory.times) - 1
        G = hardmax_at(trajectory, last, instance.model.mask_for(instance.n))
        rows = [i for i in range(instance.n) if i not in undecided_nodes(G)]
        if not rows or instance.n < 2:
            raise InvalidArgument("no row's hardmax target is certified at the last checkpoint.")
        shared["targets"] = {i: int(np.argmax(trajectory.scaled_scores[last, i])) for i in rows}
    return shared["targets"]


def _decided_attention_gap(trajectory, instance, variable, shared):
    rows = sorted(_decided_targets(trajectory, instance, shared))
    return np.array([_attention_gap(np.asarray(P, dtype=float)[rows])
                     for P in trajectory.attention])


def _log_boolean_gap(trajectory, instance, variable, shared):
    r""":math:`\max_i \log(1 - P_{i\ell(i)})` over the rows decided at the last checkpoint
    (:math:`\ell(i)` their certified target), from the scaled scores, so that it keeps its
    accuracy when :math:`1 - P` underflows: with :math:`a_j = e^{L}(\tilde S_{ij} -
    \tilde S_{i\ell})`, :math:`\log(1 - P_{i\ell}) = \mathrm{LSE}_{j \ne \ell} a_j -
    \mathrm{LSE}_j a_j`."""
    targets = _decided_targets(trajectory, instance, shared)
    out = np.empty(len(trajectory.times))
    for k in range(len(trajectory.times)):
        worst = -np.inf
        for i, ell in targets.items():
            a = math.exp(float(trajectory.log_scale[k])) * (
                trajectory.scaled_scores[k, i] - trajectory.scaled_scores[k, i, ell])
            others = np.delete(a, ell)
            top, top_o = float(np.max(a)), float(np.max(others))
            value = top_o + math.log(float(np.sum(np.exp(others - top_o)))) \
                - top - math.log(float(np.sum(np.exp(a - top))))
            worst = max(worst, min(value, -np.finfo(float).tiny))
        out[k] = worst
    return out


def _coordinates(trajectory, instance, variable, shared):
    tokens = np.asarray(trajectory.tokens(variable), dtype=float)
    return tokens.reshape(len(tokens), -1)


#: Quantities that are the logarithm of what they measure (rate fits take them as such).
LOG_QUANTITIES = ("log-boolean-gap",)


#: Named quantities of the attention matrix only (no rounding from the tokens' size).
ATTENTION_QUANTITIES = ("attention-gap", "decided-attention-gap", "log-boolean-gap")


#: Named quantities: ``name -> series(trajectory, instance, variable, shared)`` (``m`` numbers,
#: or an ``m × c`` array for a vector quantity; ``shared`` carries what the run decided to its
#: reference run, e.g. which rows are certified).
NAMED_QUANTITIES = {
    "diameter": _per_checkpoint(diameter),
    "spread": _per_checkpoint(lambda p: float(np.max(np.linalg.norm(p - p.mean(axis=0),
                                                                    axis=1)))),
    "max-norm": _per_checkpoint(lambda p: float(np.max(np.linalg.norm(p, axis=1)))),
    "hull-volume": _per_checkpoint(_hull_volume),
    "attention-gap": _per_checkpoint(_attention_gap, attention=True),
    "decided-attention-gap": _decided_attention_gap,
    "pairwise-distances": _per_checkpoint(_pairwise),
    "consecutive-gaps": _consecutive_gaps,
    "coordinates": _coordinates,
    "log-boolean-gap": _log_boolean_gap,
}


def _series(instance, trajectory, quantity: str, variable: str,
            shared: dict | None = None) -> np.ndarray:
    if quantity in NAMED_QUANTITIES:
        return np.asarray(NAMED_QUANTITIES[quantity](trajectory, instance, variable,
                                                     {} if shared is None else shared),
                          dtype=float)
    base = initial_namespace(instance)
    out = []
    for k in range(len(trajectory.times)):
        value = evaluate(quantity, state_namespace(instance, trajectory, k, base))
        if value.size != 1:
            raise InvalidArgument(f"quantity {quantity!r} has shape {value.shape} at t = "
                                  f"{float(trajectory.times[k]):.6g}; it must be one number "
                                  "(e.g. wrap it in max(...) or norm(...)).")
        out.append(float(value.reshape(())))
    return np.array(out)


def quantity_series(evaluation, quantity: str, variable: str | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    r"""A quantity at every checkpoint and its error estimate by the second route.

    The quantity :math:`q` is evaluated at every checkpoint of ``evaluation.trajectory`` and of
    its ``reference_run`` (same checkpoints); the error is
    :math:`|q(\text{run}) - q(\text{reference})| + 4\,\mathrm{ulp}`
    (:func:`~verify.conclusions._base.quantity_error`).

    Parameters
    ----------
    evaluation : Evaluation
    quantity : str
        A name in :data:`NAMED_QUANTITIES` or a scalar ``"state"`` formula.
    variable : {"z", "x"}, optional
        The tokens the named quantities use (default ``"z"`` when the run has it, else ``"x"``).

    Returns
    -------
    values, errors : ndarray, shape (m,) or (m, c)
        ``errors`` is ``inf`` everywhere when the run has no reference run.

    Raises
    ------
    InvalidArgument
        A formula that fails or is not a scalar, a missing ``variable``, or a reference run
        with other checkpoints.
    """
    traj = evaluation.trajectory
    variable = variable or default_variable(traj)
    key = ("quantity", quantity, variable)
    if key in evaluation.cache:
        return evaluation.cache[key]
    instance = evaluation.request.instance
    shared: dict = {}
    values = _series(instance, traj, quantity, variable, shared)
    ref = traj.reference_run
    if ref is not None and [Fraction(t) for t in ref.times] != [Fraction(t) for t in traj.times]:
        raise InvalidArgument("the reference run has other checkpoints than the run; the error "
                              "of a quantity needs both at the same times.")
    errors = quantity_error(values, None if ref is None else _series(instance, ref, quantity,
                                                                        variable, shared))
    for name in _token_names(quantity, variable):  # cancellation in differences of tokens
        errors = errors + _token_rounding(traj, name).reshape((-1,) + (1,) * (errors.ndim - 1))
    if traj.repeated_error is not None:  # a repeated state: both routes repeat it
        moved = _repeated_change(quantity, traj.repeated_error)
        errors = errors + moved.reshape((-1,) + (1,) * (errors.ndim - 1))
    evaluation.cache[key] = (values, errors)
    return values, errors


#: A named quantity's Lipschitz constant in the tokens: how much it changes when every token
#: moves by at most ``δ`` (Euclidean); every coordinate then moves by at most ``δ`` too.
_LIPSCHITZ = {"diameter": 2, "spread": 2, "max-norm": 1, "pairwise-distances": 2,
              "consecutive-gaps": 2, "coordinates": 1}


def _repeated_change(quantity: str, repeated_error: np.ndarray) -> np.ndarray:
    """Per checkpoint, how much ``quantity`` may differ from its value on a repeated state whose
    tokens are each within ``repeated_error`` (Euclidean) of the exact ones (0 where nothing is
    repeated): ``L · repeated_error`` for a named quantity of Lipschitz constant ``L``, ``inf``
    for any other (a formula, an attention quantity: not resolved on a repeated state)."""
    lipschitz = _LIPSCHITZ.get(quantity, math.inf)
    with np.errstate(invalid="ignore"):  # inf · 0 where nothing is repeated
        return np.where(repeated_error > 0, lipschitz * repeated_error, 0.0)


def _token_names(quantity: str, variable: str) -> list[str]:
    """The tokens a quantity is computed from: the variable of a named token quantity, the
    names ``z``/``x`` a formula uses."""
    if quantity in NAMED_QUANTITIES:
        return [] if quantity in ATTENTION_QUANTITIES else [variable]
    import ast

    names = {node.id for node in ast.walk(ast.parse(quantity.strip(), mode="eval"))
             if isinstance(node, ast.Name)}
    return [v for v in ("z", "x") if v in names]


def _token_rounding(trajectory, variable: str) -> np.ndarray:
    """Per checkpoint, ``8 d ε max_i |token_i|``: the rounding of a quantity formed from
    differences of tokens (a distance of two large tokens loses digits to cancellation, which
    the reference run, rounded the same way, does not see)."""

    tokens = token_array(trajectory, variable)
    with np.errstate(invalid="ignore"):
        scale = np.max(np.abs(tokens), axis=(1, 2))
    return ulps(DIFFERENCE_ULPS * tokens.shape[2], np.where(np.isfinite(scale), scale, np.inf))


def quantity_columns(evaluation, quantity, variable):
    """``(t, values, errors, None)`` with one row per checkpoint and one column per component of
    the quantity, or ``(None, None, None, reason)`` for an inconclusive verdict."""
    values, errors, reason = quantity_or_reason(evaluation, quantity, variable)
    if reason:
        return None, None, None, reason
    t = np.asarray(evaluation.trajectory.t, dtype=float)
    return t, values.reshape(len(t), -1), errors.reshape(len(t), -1), None


def scalar_quantity(evaluation, quantity, variable, conclusion: str):
    """``(t, q, e, None)`` for a quantity that is one number per checkpoint, or
    ``(None, None, None, reason)`` (unresolved, or a vector quantity)."""
    t, values, errors, reason = quantity_columns(evaluation, quantity, variable)
    if reason:
        return None, None, None, reason
    if values.shape[1] != 1:
        return None, None, None, (f"the quantity {quantity!r} is a vector; {conclusion} needs "
                                  "one number per checkpoint (wrap it in max(...)).")
    return t, values[:, 0], errors[:, 0], None


def checkpoint_window(t: np.ndarray, p: dict) -> np.ndarray:
    """The checkpoints with ``from_time ≤ t ≤ until`` (defaults: 0 and the horizon)."""
    until = float(p["until"]) if "until" in p else math.inf
    return (t >= float(p.get("from_time", 0))) & (t <= until)


def quantity_or_reason(evaluation, quantity, variable):
    """``(values, errors, None)`` or ``(None, None, reason)`` for an inconclusive verdict."""
    if evaluation.trajectory.reference_run is None:
        return None, None, ("the run has no reference run, so the quantity has no error "
                            "estimate (simulate with error_estimate=True).")
    try:
        values, errors = quantity_series(evaluation, quantity, variable)
    except InvalidArgument as exc:
        return None, None, f"the quantity {quantity!r} could not be evaluated: {exc}"
    repeated = evaluation.trajectory.repeated_error
    if np.all(np.isfinite(values)) and not np.all(np.isfinite(errors)) and repeated is not None:
        return None, None, (f"the quantity {quantity!r} has no error bound where the run repeats "
                            "its state after certified consensus (a formula or attention "
                            "quantity: no Lipschitz constant in the tokens is known).")
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(errors))):
        return None, None, (f"the quantity {quantity!r} is not finite at some checkpoint "
                            "(overflow of x = e^(tV) z?); use variable 'z' or a shorter horizon.")
    return values, errors, None


# --------------------------------------------------------------------------- validation helpers
def _number(p: dict, key: str, source: str, where: str, positive: bool = False,
            nonnegative: bool = False) -> None:
    value = p.get(key)
    if isinstance(value, str):  # an exact fraction written as a string, "1/100"
        try:
            value = p[key] = Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            pass
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        fail(source, f"{where}.{key}", f"{value!r} ({type(value).__name__}) must be a finite "
             "number, e.g. 1/2 or 0.5.")
    if positive and not value > 0 or nonnegative and not value >= 0:
        fail(source, f"{where}.{key}", f"{value!r} must be {'> 0' if positive else '≥ 0'}.")


def _choice(p: dict, key: str, choices: tuple, source: str, where: str) -> None:
    if key in p and p[key] not in choices:
        fail(source, f"{where}.{key}", f"{p[key]!r} must be one of {', '.join(choices)}.")


def check_quantity(p: dict, source: str, where: str, required: bool = True) -> None:
    if "quantity" not in p and not required:
        return
    q = p.get("quantity")
    if q not in NAMED_QUANTITIES:
        try:
            check_expression(q, "state", source, f"{where}.quantity")
        except InvalidArgument as exc:
            raise InvalidArgument(f"{exc} A quantity is a formula or one of the named "
                                  f"quantities {', '.join(NAMED_QUANTITIES)}."
                                  f"{suggest(str(q), NAMED_QUANTITIES)}") from None
    _choice(p, "variable", ("z", "x"), source, where)


def check_tail(p: dict, source: str, where: str) -> None:
    """``tail``: the fraction of the checkpoints a fit uses, in ``(0, 1]``."""
    if "tail" in p:
        _number(p, "tail", source, where, positive=True)
        if not p["tail"] <= 1:
            fail(source, f"{where}.tail", f"{p['tail']!r} must be a fraction in (0, 1].")


def check_window(p: dict, source: str, where: str) -> None:
    """``from_time`` and ``until``: numbers ≥ 0, in that order."""
    for key in ("from_time", "until"):
        if key in p:
            _number(p, key, source, where, nonnegative=True)
    if "from_time" in p and "until" in p and not p["from_time"] <= p["until"]:
        fail(source, f"{where}.until", f"{p['until']} is before from_time = {p['from_time']}.")


def _bound_series(evaluation, formula: str) -> tuple[np.ndarray, np.ndarray]:
    """A bound formula at every checkpoint (a constant for an initial-data formula) and its
    error (the reference run's difference, for a formula of the state)."""
    traj, instance = evaluation.trajectory, evaluation.instance
    base = initial_namespace(instance)
    try:
        constant = float(evaluate(formula, base).reshape(()))
        return np.full(len(traj.times), constant), np.full(len(traj.times), ulps(
            STORED_ULPS, abs(constant)))
    except InvalidArgument:
        pass
    run = _series(instance, traj, formula, default_variable(traj))
    ref = None if traj.reference_run is None else _series(instance, traj.reference_run,
                                                          formula, default_variable(traj))
    return run, quantity_error(run, ref)
