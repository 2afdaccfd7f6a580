r"""What the conclusion judges share: the keys every conclusion
about the tokens has, the tokens a conclusion reads (projected by its functional), the
requirement of a reference run.  No judge imports another judge; they import this.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from verify.analysis.observed_limits import fit_exponential_convergence
from verify.errors import InvalidArgument
from verify.exact.plain import fail
from verify.flow.trajectory import token_array
from verify.judge._decision import inconclusive
from verify.judge._verdicts import InstanceResult
from verify.predict._evaluation import _functional, projected_tokens, quantity_error
from verify.predict._expressions import check_expression, evaluate, initial_namespace
from verify.vocabulary.conclusions import check_prediction, is_prediction

__all__ = ["COMMON_KEYS", "token_fits", "formula_or_prediction", "validate_common"]


def _indices(ev, key: str) -> list[int]:
    """Token indices (1-based in the file, as in the paper) from a list, a formula or a
    prediction, as 0-based."""
    n = ev.instance.n
    given = ev.parameters[key]
    if isinstance(given, list):
        values = np.array(given, dtype=float)
    else:
        values = ev.value(key).array.ravel() if isinstance(given, dict) else \
            evaluate(given, initial_namespace(ev.instance)).ravel()
    if not np.all((values == np.round(values)) & (values >= 1) & (values <= n)):
        raise InvalidArgument(f"{key}: gives {values.tolist()}; it must give token indices "
                              f"1..{n}.")
    return sorted({int(v) - 1 for v in values})


COMMON_KEYS = {
    "variable": "'z' (rescaled tokens), 'x' (tokens) or 'direction' (x/|x|); default: the "
                "variable the run integrates",
    "tail_fraction": "fraction of the checkpoints (the last ones) the trend rests on "
                     "(default 1/2)",
    "functional": "formula or prediction of a k×d matrix W: the conclusion is about W z_i "
                  "instead of z_i (default: the identity)"}


# --------------------------------------------------------------------------- inputs
def _tail(ev) -> float:
    return float(ev.parameters.get("tail_fraction", Fraction(1, 2)))


def _no_reference(ev) -> InstanceResult | None:
    ref = ev.trajectory.reference_run
    if ref is None or ref.state.shape != ev.trajectory.state.shape:
        return inconclusive(ev.request, "the run has no reference run with the same "
                            "checkpoints, so no quantity has an error estimate.")
    return None


def _functional_error(ev, tokens: np.ndarray) -> float:
    """The error of ``W z`` from the error of ``W`` (max-norm): ``|ΔW|·|z|_1``."""
    W = _functional(ev)
    if W is None or not W.error:
        return 0.0
    return W.error * float(np.max(np.sum(np.abs(tokens), axis=-1)))


def _tokens(ev) -> tuple[np.ndarray, np.ndarray]:
    """The (projected) tokens ``(m, n, k)`` on the run and on its reference run."""
    variable = ev.variable()
    run = token_array(ev.trajectory, variable)
    ref = token_array(ev.trajectory.reference_run, variable)
    return projected_tokens(ev, run), projected_tokens(ev, ref)


def token_fits(ev) -> list:
    """The limit fit of every (projected) token (:func:`~verify.analysis.observed_limits.
    fit_exponential_convergence`, error ``max_c |z_ic − z_ic^{ref}|``), cached."""

    key = ("token_fits", ev.variable(), _tail(ev), repr(ev.parameters.get("functional")))
    if key not in ev.cache:
        Z, R = _tokens(ev)
        with np.errstate(invalid="ignore"):
            err = np.max(quantity_error(Z, R), axis=2)
        err = np.where(np.isfinite(err), err, np.inf)
        ev.cache[key] = [fit_exponential_convergence(ev.trajectory.t, Z[:, i], err[:, i],
                                                     tail=_tail(ev)) for i in range(Z.shape[1])]
    return ev.cache[key]


# --------------------------------------------------------------------------- validation
def _number(value) -> bool:
    return isinstance(value, (int, float, Fraction)) and not isinstance(value, bool)


def formula_or_prediction(p: dict, key: str, gives: tuple, source: str, where: str,
                          context: str = "initial") -> None:
    """Validate a key that takes a formula of the initial data or ``{ predict = ... }``."""
    if key not in p:
        return
    if is_prediction(p[key]):
        check_prediction(p[key], gives, source, f"{where}.{key}")
    else:
        check_expression(p[key], context, source, f"{where}.{key}")


def validate_common(p: dict, source: str, where: str, formulas: dict | None = None) -> None:
    """``variable``, ``tail_fraction``, ``functional`` and the keys in ``formulas`` (key ->
    the prediction kinds it accepts)."""
    if "variable" in p and p["variable"] not in ("z", "x", "direction"):
        fail(source, f"{where}.variable", f"{p['variable']!r} must be 'z' (rescaled tokens), "
             "'x' (tokens) or 'direction' (x/|x|).")
    if "tail_fraction" in p and not (_number(p["tail_fraction"]) and
                                     0 < p["tail_fraction"] <= 1):
        fail(source, f"{where}.tail_fraction", f"{p['tail_fraction']!r} must be a number in "
             "(0, 1], e.g. tail_fraction = 0.5.")
    formula_or_prediction(p, "functional", ("rows",), source, where)
    for key, gives in (formulas or {}).items():
        formula_or_prediction(p, key, gives, source, where)
