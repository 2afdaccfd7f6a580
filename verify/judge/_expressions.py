r"""Expressions in conjecture files: small NumPy formulas over the initial data or the state.

A conclusion may name its predicted object by a formula, e.g. the limit of every token
``"where(x0 > 0, max(x0), min(x0))"`` or a monotone quantity ``"max(norm(z))"``.  A formula is
one Python expression over a fixed vocabulary (:data:`FUNCTIONS` and the names of its context);
anything else (attributes starting with ``_``, imports, lambdas, unknown names) is rejected with
a message naming the field.  This is a convenience language for the user's own files, not a
sandbox.

Contexts
--------
``"initial"`` (:func:`initial_namespace`)
    ``x0`` (``n × d``), ``V``, ``Q``, ``K``, ``B = β QᵀK``, ``beta``, ``n``, ``d``, ``I`` (the
    identity of size ``d``), all float64 (exact inputs rounded once), and ``phi1``: the dual
    vector :math:`\varphi_1^*` of the leading eigenvalue of ``V`` (computed exactly or certified
    when a formula uses it, :func:`verify.exact.eigenpair`).
``"state"`` (:func:`state_namespace`)
    the initial names plus ``t``, ``z`` and ``x`` (the tokens at time ``t``, ``n × d``; ``z`` is
    ``x`` for variants without a rescaled form) and ``P`` (the attention matrix, ``n × n``).

Examples
--------
>>> import numpy as np
>>> check_expression("where(x0 > 0, max(x0), min(x0))", "initial", "f.toml", "conclusion.limit")
>>> evaluate("mean(x0, axis=0)", {"x0": np.array([[0.0, 1.0], [2.0, 3.0]])})
array([1., 2.])
>>> check_expression("nrom(x0)", "initial", "f.toml", "conclusion.limit")
Traceback (most recent call last):
    ...
verify.errors.InvalidArgument: f.toml: conclusion.limit: unknown name 'nrom' in 'nrom(x0)'. ...
"""

from __future__ import annotations

import ast

import numpy as np

from verify.claim._plain import fail, suggest
from verify.errors import InvalidArgument

__all__ = ["FUNCTIONS", "CONTEXT_NAMES", "check_expression", "evaluate", "initial_namespace",
           "state_namespace", "default_variable", "diameter", "norm"]


def norm(a, axis: int = -1):
    """Euclidean norm along ``axis`` (default: the last, so ``norm(z)`` is one norm per token)."""
    return np.linalg.norm(np.asarray(a, dtype=float), axis=axis)


def diameter(points) -> float:
    """``max_{i,j} |p_i − p_j|`` over the rows of ``points``."""
    p = np.asarray(points, dtype=float).reshape(len(points), -1)
    return float(np.max(np.linalg.norm(p[:, None, :] - p[None, :, :], axis=-1)))


#: Functions every expression may call.
FUNCTIONS = {
    "abs": np.abs, "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sign": np.sign,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "max": np.max, "min": np.min,
    "maximum": np.maximum, "minimum": np.minimum,
    "sum": np.sum, "mean": np.mean, "where": np.where, "dot": np.dot, "outer": np.outer,
    "ones": np.ones, "zeros": np.zeros, "eye": np.eye, "array": np.asarray, "arange": np.arange,
    "argmax": np.argmax, "argmin": np.argmin, "sort": np.sort, "unique": np.unique,
    "clip": np.clip, "transpose": np.transpose, "norm": norm, "diameter": diameter,
    "pi": np.pi, "inf": np.inf,
}
_INITIAL = ("x0", "V", "Q", "K", "B", "beta", "n", "d", "I", "phi1")
#: Names available in each context (besides :data:`FUNCTIONS`).
CONTEXT_NAMES = {"initial": _INITIAL, "state": _INITIAL + ("t", "z", "x", "P")}


def check_expression(text: object, context: str, source: str, where: str) -> None:
    """Raise :class:`InvalidArgument` (``"<source>: <where>: ..."``) unless ``text`` is one
    expression using only the names of ``context`` and :data:`FUNCTIONS`."""
    if not isinstance(text, str) or not text.strip():
        fail(source, where, f"{text!r} must be a formula in a string, e.g. 'mean(x0, axis=0)'.")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        fail(source, where, f"{text!r} is not a valid expression ({exc.msg}).")
    known = set(CONTEXT_NAMES[context]) | set(FUNCTIONS)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            fail(source, where, f"{text!r}: {type(node).__name__} is not allowed in a formula.")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            fail(source, where, f"{text!r}: the attribute {node.attr!r} is not allowed.")
        if isinstance(node, ast.Name) and node.id not in known:
            fail(source, where, f"unknown name {node.id!r} in {text!r}.{suggest(node.id, known)}"
                 f" Known names: {', '.join(CONTEXT_NAMES[context])} and the functions "
                 f"{', '.join(sorted(FUNCTIONS))}.")


def evaluate(text: str, namespace: dict) -> np.ndarray:
    """The value of the formula ``text`` (checked by :func:`check_expression`) as a float array.

    Raises
    ------
    InvalidArgument
        If evaluating it fails (shapes, a name missing in this context) or gives non-numbers.
    """
    try:
        value = eval(compile(text.strip(), "<formula>", "eval"),  # noqa: S307 - user's own file
                     {"__builtins__": {}, **FUNCTIONS}, namespace)
        return np.asarray(value, dtype=float)
    except InvalidArgument:
        raise
    except Exception as exc:  # noqa: BLE001 - reported with the formula
        raise InvalidArgument(f"formula {text!r} could not be evaluated: "
                              f"{type(exc).__name__}: {exc}.") from None


def _float(matrix) -> np.ndarray:
    return np.asarray(np.asarray(matrix, dtype=object).astype(float), dtype=float)


def default_variable(trajectory) -> str:
    """The tokens a conclusion reads by default: the variable the run integrates — ``"z"`` in
    the rescaled form, ``"x"`` otherwise."""
    return "z" if trajectory.form == "z" else "x"


class _Names(dict):
    """A namespace whose costly names (``phi1``) are computed on first use."""

    def __init__(self, values: dict, instance, computed: dict | None = None) -> None:
        super().__init__(values)
        self.instance = instance
        self.computed = getattr(values, "computed", {}) if computed is None else computed

    def __missing__(self, name: str):
        if name != "phi1":
            raise KeyError(name)
        if name not in self.computed:
            from verify.exact import eigenpair

            try:
                pair = eigenpair(self.instance.model.heads[0].V)
            except Exception as exc:  # noqa: BLE001 - reported with the formula
                raise InvalidArgument(f"phi1 is not defined for this V: {exc}") from None
            self.computed[name] = pair.left_float
        return self.computed[name]


def initial_namespace(instance) -> dict:
    """The ``"initial"`` names for ``instance`` (first head's ``Q, K, V``), as floats."""
    model = instance.model
    head = model.heads[0]
    x0 = _float(instance.x0)
    return _Names({"x0": x0, "V": _float(head.V), "Q": _float(head.Q), "K": _float(head.K),
                   "B": float(model.beta) * _float(head.B), "beta": float(model.beta),
                   "n": instance.n, "d": instance.d, "I": np.eye(instance.d)}, instance)


def state_namespace(instance, trajectory, k: int, base: dict | None = None) -> dict:
    """The ``"state"`` names at checkpoint ``k`` of ``trajectory`` (``base``: a precomputed
    :func:`initial_namespace`)."""
    names = _Names(base if base is not None else initial_namespace(instance), instance)
    x = trajectory.x[k] if trajectory.x is not None else trajectory.state[k]
    z = trajectory.z[k] if trajectory.z is not None else x
    names.update(t=float(trajectory.times[k]), x=np.asarray(x, dtype=float),
                 z=np.asarray(z, dtype=float), P=np.asarray(trajectory.attention[k], dtype=float))
    return names
