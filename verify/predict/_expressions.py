r"""Expressions in conjecture files: small NumPy formulas over the initial data or the state.

A conclusion may name its predicted object by a formula, e.g. the limit of every token
``"where(x0 > 0, max(x0), min(x0))"`` or a monotone quantity ``"max(norm(z))"``.  A formula is
one expression over a fixed vocabulary (:data:`FUNCTIONS` and the names of its context):
numbers, names, ``+ - * / // % ** @``, comparisons, ``and``/``or``/``not``, tuples and lists,
subscripts and slices (``x0[0]``, ``z[:, 1]``) and calls of :data:`FUNCTIONS` with positional
and keyword arguments (``mean(x0, axis=0)``). It is **not** run by Python's ``eval``:
:func:`evaluate` walks the checked syntax tree. Everything else is refused by name when the
file is read — attribute access, dunder names, calls of anything outside :data:`FUNCTIONS`,
lambdas, comprehensions, strings, unknown names — with a message naming the field.

Contexts
--------
``"initial"`` (:func:`initial_namespace`)
    ``x0`` (``n × d``), ``V``, ``Q``, ``K``, ``B = β QᵀK``, ``beta``, ``n``, ``d``, ``I`` (the
    identity of size ``d``), all float64 (exact inputs rounded once), ``phi1``: the dual
    vector :math:`\varphi_1^*` of the leading eigenvalue of ``V`` (computed exactly or certified
    when a formula uses it, :func:`verify.exact.eigenpair`), and ``hull_x0``: the vertices of
    the convex hull of the initial tokens, decided exactly on the rationals ``x0`` enters as
    (:func:`hull`).
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
verify.errors.InvalidArgument: f.toml: conclusion.limit: unknown name 'nrom' in 'nrom(x0)' (a ...
"""

from __future__ import annotations

import ast

import numpy as np

from verify.errors import InvalidArgument
from verify.exact import eigenpair, hull_vertices
from verify.exact.plain import fail, suggest

__all__ = ["FUNCTIONS", "CONTEXT_NAMES", "check_expression", "evaluate", "initial_namespace",
           "state_namespace", "default_variable", "diameter", "norm"]


def norm(a, axis: int = -1):
    """Euclidean norm along ``axis`` (default: the last, so ``norm(z)`` is one norm per token)."""
    return np.linalg.norm(np.asarray(a, dtype=float), axis=axis)


def hull(points) -> np.ndarray:
    """The vertices of ``conv`` of the rows of ``points``, decided exactly
    (:func:`verify.exact.hull_vertices`: a certificate for every point; floats are taken at
    their binary values), as float rows in their order.

    >>> hull([[0, 0], [2, 0], [0, 2], [0.5, 0.5]]).tolist()
    [[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]]
    """

    rows = np.asarray(points, dtype=object)
    rows = rows.reshape(len(rows), -1)
    return np.array([[float(v) for v in rows[i]] for i in hull_vertices(rows)])


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
    "hull": hull, "len": len,
    "pi": np.pi, "inf": np.inf,
}
_INITIAL = ("x0", "V", "Q", "K", "B", "beta", "n", "d", "I", "phi1", "hull_x0")
#: Names available in each context (besides :data:`FUNCTIONS`).
CONTEXT_NAMES = {"initial": _INITIAL, "state": _INITIAL + ("t", "z", "x", "P")}


_NODES = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp,
          ast.Compare, ast.BoolOp, ast.Call, ast.keyword, ast.Subscript, ast.Slice,
          ast.Tuple, ast.List, ast.IfExp, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


def _refusal(node: ast.AST, known: set) -> str | None:
    """Why ``node`` is not allowed in a formula (``None`` when it is)."""
    if isinstance(node, ast.Attribute):
        return f"attribute access ('.{node.attr}') is not allowed"
    if isinstance(node, ast.Name):
        if node.id.startswith("__"):
            return f"the dunder name {node.id!r} is not allowed"
        return None if node.id in known else "unknown"
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and (node.func.id not in known
                                                 or node.func.id.startswith("__")):
            return None  # the name itself is reported (unknown, with a suggestion, or dunder)
        if not (isinstance(node.func, ast.Name) and callable(FUNCTIONS.get(node.func.id))):
            allowed = ", ".join(sorted(k for k, v in FUNCTIONS.items() if callable(v)))
            return (f"the call {ast.unparse(node.func)}(...) is not allowed (outside the "
                    f"allowed functions {allowed})")
        if any(k.arg is None or k.arg.startswith("_") for k in node.keywords):
            return "**keyword unpacking and private keywords are not allowed"
        return None
    if isinstance(node, ast.Constant) and (isinstance(node.value, bool | str | bytes)
                                           or node.value is None or node.value is Ellipsis):
        return f"{node.value!r} is not allowed (only numbers)"
    if not isinstance(node, _NODES):
        return f"{type(node).__name__} is not allowed in a formula"
    return None


def check_expression(text: object, context: str, source: str, where: str,
                     extra_names: tuple = ()) -> None:
    """Raise :class:`InvalidArgument` (``"<source>: <where>: ..."``) unless ``text`` is one
    expression using only the names of ``context`` (plus ``extra_names``, e.g. the constants
    of an existential conclusion) and :data:`FUNCTIONS` (module docstring)."""
    if not isinstance(text, str) or not text.strip():
        fail(source, where, f"{text!r} must be a formula in a string, e.g. 'mean(x0, axis=0)'.")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        fail(source, where, f"{text!r} is not a valid expression ({exc.msg}).")
    names = (*CONTEXT_NAMES[context], *extra_names)
    known = set(names) | set(FUNCTIONS)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        why = _refusal(node, known)
        if why == "unknown":
            call = " (a call outside the allowed functions)" if id(node) in called else ""
            fail(source, where, f"unknown name {node.id!r} in {text!r}{call}."
                 f"{suggest(node.id, known)} Known names: {', '.join(names)} and the functions "
                 f"{', '.join(sorted(FUNCTIONS))}.")
        if why:
            fail(source, where, f"{text!r}: {why}.")


_BINARY = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
           ast.Div: np.true_divide, ast.FloorDiv: np.floor_divide, ast.Mod: np.mod,
           ast.MatMult: np.matmul}
_COMPARE = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater,
            ast.GtE: np.greater_equal, ast.Eq: np.equal, ast.NotEq: np.not_equal}


def _power(a, b):
    if isinstance(a, int) and isinstance(b, int):  # no huge Python integers: 10**10**10
        return float(a) ** b
    return np.power(np.asarray(a, dtype=float), b)


def _walk(node: ast.AST, names: dict):
    """The value of a checked formula node (see :func:`check_expression`)."""
    def value(child):
        return _walk(child, names)

    if isinstance(node, ast.Expression):
        return value(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in FUNCTIONS and not callable(FUNCTIONS[node.id]):
            return FUNCTIONS[node.id]
        try:
            return names[node.id]
        except KeyError:
            raise InvalidArgument(f"the name {node.id!r} is not available here") from None
    if isinstance(node, ast.BinOp):
        left, right = value(node.left), value(node.right)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        operand = value(node.operand)
        if isinstance(node.op, ast.Not):
            return np.logical_not(operand)
        if isinstance(node.op, ast.Invert):
            return np.invert(operand)
        return np.negative(operand) if isinstance(node.op, ast.USub) else np.positive(operand)
    if isinstance(node, ast.Compare):
        left, result = value(node.left), True
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = value(right_node)
            result = np.logical_and(result, _COMPARE[type(op)](left, right))
            left = right
        return result
    if isinstance(node, ast.BoolOp):
        combine = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
        result = value(node.values[0])
        for child in node.values[1:]:
            result = combine(result, value(child))
        return result
    if isinstance(node, ast.IfExp):
        return np.where(value(node.test), value(node.body), value(node.orelse))
    if isinstance(node, ast.Call):
        return FUNCTIONS[node.func.id](*(value(a) for a in node.args),
                                       **{k.arg: value(k.value) for k in node.keywords})
    if isinstance(node, ast.Subscript):
        return np.asarray(value(node.value))[value(node.slice)]
    if isinstance(node, ast.Slice):
        return slice(*(None if part is None else value(part)
                       for part in (node.lower, node.upper, node.step)))
    if isinstance(node, ast.Tuple):
        return tuple(value(e) for e in node.elts)
    if isinstance(node, ast.List):
        return [value(e) for e in node.elts]
    raise InvalidArgument(f"{type(node).__name__} is not allowed in a formula")


def evaluate(text: str, namespace: dict) -> np.ndarray:
    """The value of the formula ``text`` (checked by :func:`check_expression`) as a float
    array, computed by walking its syntax tree (no ``eval``).

    Raises
    ------
    InvalidArgument
        If it is not allowed (as :func:`check_expression` says), evaluating it fails (shapes,
        a name missing in this context) or gives non-numbers.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise InvalidArgument(f"formula {text!r} is not a valid expression ({exc.msg}).") \
            from None
    known = set(namespace) | set(FUNCTIONS) | {"phi1", "hull_x0"}
    for node in ast.walk(tree):
        why = _refusal(node, known)
        if why:
            raise InvalidArgument(f"formula {text!r}: "
                                  f"{'an unknown name' if why == 'unknown' else why}.")
    try:
        with np.errstate(all="ignore"):
            return np.asarray(_walk(tree, namespace), dtype=float)
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
    return "z" if trajectory.rescaled else "x"


class _Names(dict):
    """A namespace whose costly names (``phi1``) are computed on first use."""

    def __init__(self, values: dict, instance, computed: dict | None = None) -> None:
        super().__init__(values)
        self.instance = instance
        self.computed = getattr(values, "computed", {}) if computed is None else computed

    def __missing__(self, name: str):
        if name not in ("phi1", "hull_x0"):
            raise KeyError(name)
        if name == "hull_x0" and name not in self.computed:
            self.computed[name] = hull(self.instance.x0)
        if name not in self.computed:
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
