r"""Hypotheses that read the initial data and the instance: sums, inner products, hulls,
hemispheres, equiangularity, a fixed ``V`` or mask.

Extends the expressions of :mod:`verify.vocabulary.hypothesis_expressions` with

* the **data**, exactly as stated (an irrational entry by its expression,
  :mod:`verify.exact.reals`): ``x0`` (the initial tokens, ``n×d``), ``V``, ``Q``, ``K`` (the
  single head), ``B`` (``β QᵀK``), ``mask`` (``n×n``, 0/1: all ones for full attention, the
  lower triangle for causal);
* **literals**: vectors and matrices ``[[0, -1], [1, 0]]``, the constants ``pi``, ``E`` and the
  functions ``sqrt, exp, log, sin, cos, tan, asin, acos, atan, abs`` of numbers;
* **functions** of the data (:data:`DATA_FUNCTIONS`), e.g. ``sum(x0)`` (the vector
  ``Σ_i x_i``), ``inner(u, v)``, ``norm(v)``, ``row(x0, 1)`` (indices from 1, as in the
  paper), ``gram(x0)``, ``det(M)``; and predicates ``equiangular(x0, rho)``,
  ``unit_rows(x0)``, ``distinct_rows(x0)``, ``convex_position(x0)``, ``in_hull(v, x0)``,
  ``in_open_hemisphere(x0)``, ``in_closed_hemisphere(x0)``;
* ``+ - * / @`` on vectors and matrices (``*`` and ``/`` by a number), and ``==``, ``!=``
  between arrays of one shape or an array and ``0`` (every entry).

Every comparison is **three-valued**: decided exactly in rationals, else by the sign of the
exact difference (:func:`verify.exact.reals.sign`: a ball excluding 0, or SymPy proving it
zero), else *undecided*. Hulls and hemispheres carry a certificate either way
(:mod:`verify.exact.real_geometry`). A hypothesis that reads the data and is undecided puts the
instance out of scope, with the reason (:func:`verify.claim.judge_scope`).

Examples
--------
>>> from verify.vocabulary.hypothesis_expressions import evaluate_hypothesis
>>> from verify.model import Instance, Model
>>> square = Instance(Model(V=[[0, -1], [1, 0]]), [[1, 0], [0, 1], [-1, 0], [0, -1]])
>>> evaluate_hypothesis("sum(x0) != 0", square).holds
False
>>> evaluate_hypothesis("V == [[0, -1], [1, 0]] and convex_position(x0)", square).holds
True
>>> evaluate_hypothesis("in_closed_hemisphere(x0)", square).explanation[:40]
'in_closed_hemisphere(x0) = false (the or'
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from verify.errors import InvalidArgument
from verify.exact import real_geometry
from verify.exact.linalg import exact_det
from verify.exact.reals import FUNCTIONS as NUMBER_FUNCTIONS
from verify.exact.reals import Irrational, sign, symbolic

__all__ = ["DATA_NAMES", "CONSTANTS", "DATA_FUNCTIONS", "data_type", "check_data_node",
           "data_value", "compare", "arithmetic", "reads_data", "NotApplicable"]

#: Names of the data, each a matrix.
DATA_NAMES = ("x0", "V", "Q", "K", "B", "mask")
CONSTANTS = ("pi", "E")
_ARRAYS = ("vector", "matrix")


class NotApplicable(Exception):
    """The hypothesis names something this instance does not have (``V`` of several heads):
    it does not hold, for this reason."""


@dataclass(frozen=True)
class Function:
    """A function of hypotheses: its signatures ``(argument types) -> result type``."""

    signatures: tuple
    doc: str


def _sig(*pairs) -> tuple:
    return tuple(pairs)


#: Functions of the data: name -> signatures and one line of documentation.
DATA_FUNCTIONS = {
    "sum": Function(_sig((("matrix",), "vector"), (("vector",), "number")),
                    "sum(M): the sum of the rows (sum(x0) = Σ_i x_i); sum(v): of the entries"),
    "mean": Function(_sig((("matrix",), "vector"), (("vector",), "number")),
                     "mean(M): the mean row; mean(v): the mean entry"),
    "inner": Function(_sig((("vector", "vector"), "number")), "inner(u, v) = ⟨u, v⟩"),
    "norm": Function(_sig((("vector",), "number")), "norm(v) = |v| (Euclidean)"),
    "row": Function(_sig((("matrix", "number"), "vector")), "row(M, i): row i, from 1"),
    "col": Function(_sig((("matrix", "number"), "vector")), "col(M, j): column j, from 1"),
    "entry": Function(_sig((("matrix", "number", "number"), "number")),
                      "entry(M, i, j), from 1"),
    "transpose": Function(_sig((("matrix",), "matrix")), "transpose(M)"),
    "gram": Function(_sig((("matrix",), "matrix")), "gram(M) = M Mᵀ (⟨x_i, x_j⟩ for x0)"),
    "det": Function(_sig((("matrix",), "number")), "det(M) of a square M"),
    "trace": Function(_sig((("matrix",), "number")), "trace(M)"),
    "identity": Function(_sig((("number",), "matrix")), "identity(k): I_k"),
    "equiangular": Function(_sig((("matrix",), "truth"), (("matrix", "number"), "truth")),
                            "equiangular(M, rho): ⟨x_i, x_j⟩ = rho for all i ≠ j; "
                            "equiangular(M): all equal"),
    "unit_rows": Function(_sig((("matrix",), "truth")), "unit_rows(M): every |x_i| = 1"),
    "distinct_rows": Function(_sig((("matrix",), "truth")), "distinct_rows(M): x_i ≠ x_j"),
    "convex_position": Function(_sig((("matrix",), "truth")),
                                "convex_position(M): every row a vertex of the hull"),
    "in_hull": Function(_sig((("vector", "matrix"), "truth")),
                        "in_hull(v, M): v ∈ conv of the rows of M"),
    "in_open_hemisphere": Function(_sig((("matrix",), "truth")),
                                   "in_open_hemisphere(M): some w has ⟨w, x_i⟩ > 0 for all i"),
    "in_closed_hemisphere": Function(_sig((("matrix",), "truth")),
                                     "in_closed_hemisphere(M): some w ≠ 0 has ⟨w, x_i⟩ ≥ 0"),
}


# --------------------------------------------------------------------------- checking
def check_data_node(node: ast.AST, called: set[int]) -> bool:
    """``True`` when ``node`` belongs to the data language and is allowed; ``False`` when it
    is not a data node (the caller decides); ``ValueError`` naming what is refused."""
    if isinstance(node, ast.Attribute):
        raise ValueError(f"attribute access ('.{node.attr}') is not allowed")
    if isinstance(node, ast.Name):
        if node.id.startswith("__"):
            raise ValueError(f"the dunder name {node.id!r} is not allowed")
        if id(node) in called:
            if node.id not in DATA_FUNCTIONS and node.id not in NUMBER_FUNCTIONS:
                raise ValueError(f"the call {node.id}(...) is not allowed (outside the allowed "
                                 f"functions {', '.join([*NUMBER_FUNCTIONS, *DATA_FUNCTIONS])})")
            return True
        return node.id in DATA_NAMES or node.id in CONSTANTS
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise ValueError(f"the call {ast.unparse(node.func)}(...) is not allowed (outside "
                             "the allowed functions)")
        if node.keywords:
            raise ValueError(f"{node.func.id}(...) takes no keyword arguments")
        return True
    if isinstance(node, ast.List):
        rows = [e for e in node.elts if isinstance(e, ast.List)]
        if rows and (len(rows) != len(node.elts) or len({len(r.elts) for r in rows}) != 1):
            raise ValueError(f"{ast.unparse(node)} is not a matrix (rows of equal length)")
        if not node.elts:
            raise ValueError("[] is empty")
        return True
    return isinstance(node, ast.MatMult | ast.Pow)


def data_type(node: ast.AST, type_of) -> str | None:
    """The type (``number``, ``truth``, ``vector``, ``matrix``) of a data node, or ``None``
    for nodes the plain language types; ``ValueError`` on a type error."""
    if isinstance(node, ast.Name) and node.id in DATA_NAMES:
        return "matrix"
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return "number"
    if isinstance(node, ast.List):
        kinds = {type_of(e) for e in node.elts}
        if kinds == {"number"}:
            return "vector"
        if kinds == {"vector"}:
            return "matrix"
        raise ValueError(f"{ast.unparse(node)} must list numbers (a vector) or rows (a matrix)")
    if isinstance(node, ast.Call):
        name = node.func.id
        args = tuple(type_of(a) for a in node.args)
        if name in NUMBER_FUNCTIONS:
            if args != ("number",):
                raise ValueError(f"{name}(...) takes one number")
            return "number"
        for wanted, result in DATA_FUNCTIONS[name].signatures:
            if args == wanted:
                return result
        raise ValueError(f"{name}({', '.join(args)}) does not fit: "
                         f"{DATA_FUNCTIONS[name].doc}")
    if isinstance(node, ast.BinOp):
        left, right = type_of(node.left), type_of(node.right)
        if "truth" in (left, right):
            raise ValueError(f"arithmetic needs numbers or arrays, not {ast.unparse(node)!r}")
        if isinstance(node.op, ast.MatMult):
            table = {("matrix", "matrix"): "matrix", ("matrix", "vector"): "vector",
                     ("vector", "matrix"): "vector", ("vector", "vector"): "number"}
            if (left, right) not in table:
                raise ValueError(f"@ needs vectors or matrices: {ast.unparse(node)!r}")
            return table[left, right]
        if isinstance(node.op, ast.Pow):
            if (left, right) != ("number", "number"):
                raise ValueError(f"** needs numbers: {ast.unparse(node)!r}")
            return "number"
        if left == right == "number":
            return None
        if isinstance(node.op, ast.Add | ast.Sub) and left == right:
            return left
        if isinstance(node.op, ast.Mult) and "number" in (left, right):
            return right if left == "number" else left
        if isinstance(node.op, ast.Div) and right == "number":
            return left
        raise ValueError(f"{ast.unparse(node)!r}: arrays add to arrays of one shape and scale "
                         "by numbers")
    if isinstance(node, ast.Compare):
        kinds = [type_of(c) for c in (node.left, *node.comparators)]
        if not any(k in _ARRAYS for k in kinds):
            return None
        if "truth" in kinds or len(node.ops) != 1 or not isinstance(node.ops[0],
                                                                    ast.Eq | ast.NotEq):
            raise ValueError(f"{ast.unparse(node)!r}: arrays compare with == or != only (to an "
                             "array of the same shape, or to 0)")
        if "number" in kinds and not any(isinstance(c, ast.Constant) and c.value == 0
                                         for c in (node.left, *node.comparators)):
            raise ValueError(f"{ast.unparse(node)!r}: an array compares to an array or to 0")
        return "truth"
    return None


def reads_data(tree: ast.AST) -> bool:
    """Whether an expression reads the data (its scope is about the initial tokens or the
    weights, not only about ``n``, ``d``, ``beta`` and named predicates)."""
    return any(isinstance(node, ast.Name) and node.id in DATA_NAMES for node in ast.walk(tree))


# --------------------------------------------------------------------------- values
def _exact(value):
    """A number in the form arithmetic needs: a plain Fraction, or a SymPy number."""
    if isinstance(value, Irrational):
        return symbolic(value)
    if isinstance(value, int | Fraction):
        return Fraction(value)
    return value


def _is_array(value) -> bool:
    return isinstance(value, tuple)


def _scalar(op: ast.operator, a, b):
    a, b = _exact(a), _exact(b)
    if isinstance(op, ast.Div) and sign(b) == 0:
        raise InvalidArgument("division by zero")
    if not (isinstance(a, Fraction) and isinstance(b, Fraction)):
        a, b = symbolic(a), symbolic(b)
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult):
        return a * b
    if isinstance(op, ast.Div):
        return a / b
    raise InvalidArgument(f"{type(op).__name__} is not arithmetic on numbers")


def _dot(u, v):
    if len(u) != len(v):
        raise InvalidArgument(f"vectors of lengths {len(u)} and {len(v)} have no inner product")
    total = Fraction(0)
    for a, b in zip(u, v, strict=True):
        total = _scalar(ast.Add(), total, _scalar(ast.Mult(), a, b))
    return total


def _transpose(M) -> tuple:
    return tuple(zip(*M, strict=True))


def arithmetic(op: ast.operator, a, b):
    """``a op b`` for numbers, vectors and matrices (see :func:`data_type`)."""
    if isinstance(op, ast.Pow):
        a, b = symbolic(_exact(a)), symbolic(_exact(b))
        if not (b.is_Rational and abs(b.p) <= 64 and b.q <= 64):
            raise InvalidArgument(f"the exponent {b} must be a rational p/q with |p|, q ≤ 64")
        return a ** b
    if isinstance(op, ast.MatMult):
        if not _is_array(a[0]) and not _is_array(b[0]):
            return _dot(a, b)
        if not _is_array(a[0]):
            return tuple(_dot(a, col) for col in _transpose(b))
        if not _is_array(b[0]):
            return tuple(_dot(row, b) for row in a)
        return tuple(tuple(_dot(row, col) for col in _transpose(b)) for row in a)
    if _is_array(a) and _is_array(b):
        if len(a) != len(b) or (_is_array(a[0]) and len(a[0]) != len(b[0])):
            raise InvalidArgument("arrays of different shapes do not add")
        return tuple(arithmetic(op, x, y) for x, y in zip(a, b, strict=True))
    if _is_array(a):
        return tuple(arithmetic(op, x, b) for x in a)
    if _is_array(b):
        return tuple(arithmetic(op, a, y) for y in b)
    return _scalar(op, a, b)


def _kleene_and(values) -> bool | None:
    values = list(values)
    return False if False in values else None if None in values else True


def compare(op: ast.cmpop, a, b) -> bool | None:
    """``a op b``, three-valued: exact for rationals, else the sign of the exact difference
    (``None`` when undecided). Arrays: ``==``/``!=`` entry by entry (different shapes differ)."""
    if _is_array(a) or _is_array(b):
        if not _is_array(a) or not _is_array(b):
            array, zero = (a, b) if _is_array(a) else (b, a)
            equal = _kleene_and(compare(ast.Eq(), x, zero) for x in _flat(array))
        elif len(a) != len(b) or _is_array(a[0]) != _is_array(b[0]) or (
                _is_array(a[0]) and len(a[0]) != len(b[0])):
            equal = False
        else:
            equal = _kleene_and(compare(ast.Eq(), x, y) for x, y in zip(_flat(a), _flat(b),
                                                                           strict=True))
        return equal if isinstance(op, ast.Eq) else None if equal is None else not equal
    s = sign(_scalar(ast.Sub(), a, b))
    if s is None:
        return None
    return {ast.Eq: s == 0, ast.NotEq: s != 0, ast.Lt: s < 0, ast.LtE: s <= 0, ast.Gt: s > 0,
            ast.GtE: s >= 0}[type(op)]


def _flat(array):
    for item in array:
        if _is_array(item):
            yield from item
        else:
            yield item


def _matrix(array) -> tuple:
    return tuple(tuple(row) for row in array)


def _name(instance, name: str):
    model = instance.model
    if name == "x0":
        return _matrix(instance.x0)
    if name == "mask":
        mask = model.mask_for(instance.n)
        one, zero = Fraction(1), Fraction(0)
        return tuple(tuple(one if mask is None or mask[i, j] else zero
                           for j in range(instance.n)) for i in range(instance.n))
    if not model.single_head:
        raise NotApplicable(f"the model has {len(model.heads)} heads; {name} names a single "
                            "head's matrix")
    head = model.heads[0]
    if name == "B":
        return _matrix(model.beta * head.B)
    return _matrix(getattr(head, name))


def _index(value, size: int, what: str) -> int:
    value = _exact(value)
    if not (isinstance(value, Fraction) and value.denominator == 1 and value >= 1):
        raise InvalidArgument(f"{what} index {value} must be an integer from 1")
    if value > size:  # e.g. row(x0, 3) of two tokens: not an instance the hypothesis is about
        raise NotApplicable(f"{what} {value} does not exist (there are {size})")
    return int(value) - 1


def _det(M) -> object:
    import sympy

    if len(M) != len(M[0]):
        raise InvalidArgument(f"det of a {len(M)}×{len(M[0])} matrix: it must be square")
    if all(isinstance(_exact(v), Fraction) for v in _flat(M)):
        return exact_det(np.array([[Fraction(v) for v in row] for row in M], dtype=object))
    return sympy.Matrix([[symbolic(_exact(v)) for v in row] for row in M]).det()


def _truth_with_reason(name: str, args: list):
    M = args[-1]
    if name == "in_hull":
        return real_geometry.in_hull(args[0], M)
    if name == "convex_position":
        return real_geometry.convex_position(M)
    if name == "in_closed_hemisphere":
        return real_geometry.in_closed_hemisphere(M)
    inside, why = real_geometry.in_hull(tuple(Fraction(0) for _ in M[0]), M)
    if inside is None:
        return None, f"undecided: {why}"
    return (not inside), ("the origin is in the hull: " if inside else
                          "the origin is not in the hull: ") + why


def _equiangular(M, rho) -> bool | None:
    n = len(M)
    if n < 2:
        return True
    target = rho if rho is not None else _dot(M[0], M[1])
    return _kleene_and(compare(ast.Eq(), _dot(M[i], M[j]), target)
                       for i in range(n) for j in range(i + 1, n))


#: The functions whose value is a truth (returned with a reason by :func:`call`).
TRUTH_FUNCTIONS = tuple(name for name, f in DATA_FUNCTIONS.items()
                        if all(result == "truth" for _, result in f.signatures))


def call(name: str, args: list):
    """The value of a function of hypotheses (``name`` in :data:`DATA_FUNCTIONS` or a number
    function); those of :data:`TRUTH_FUNCTIONS` return ``(value, reason)``."""
    import sympy

    if name in NUMBER_FUNCTIONS:
        value = symbolic(_exact(args[0]))
        return getattr(sympy, "Abs" if name == "abs" else name)(value)
    if name in ("sum", "mean"):
        (A,) = args
        total = A[0]
        for item in A[1:]:
            total = arithmetic(ast.Add(), total, item)
        return total if name == "sum" else arithmetic(ast.Div(), total, Fraction(len(A)))
    if name == "inner":
        return _dot(*args)
    if name == "norm":
        return sympy.sqrt(symbolic(_exact(_dot(args[0], args[0]))))
    if name == "row":
        return args[0][_index(args[1], len(args[0]), "row")]
    if name == "col":
        return _transpose(args[0])[_index(args[1], len(args[0][0]), "column")]
    if name == "entry":
        M = args[0]
        return M[_index(args[1], len(M), "row")][_index(args[2], len(M[0]), "column")]
    if name == "transpose":
        return _transpose(args[0])
    if name == "gram":
        return arithmetic(ast.MatMult(), args[0], _transpose(args[0]))
    if name == "det":
        return _det(args[0])
    if name == "trace":
        return call("sum", [tuple(args[0][i][i] for i in range(min(len(args[0]),
                                                                     len(args[0][0]))))])
    if name == "identity":
        k = _index(args[0], 10**4, "size") + 1
        return tuple(tuple(Fraction(int(i == j)) for j in range(k)) for i in range(k))
    if name == "equiangular":
        return _equiangular(args[0], args[1] if len(args) > 1 else None), ""
    if name == "unit_rows":
        return _kleene_and(compare(ast.Eq(), _dot(r, r), Fraction(1)) for r in args[0]), ""
    if name == "distinct_rows":
        M = args[0]
        return _kleene_and(compare(ast.NotEq(), M[i], M[j]) for i in range(len(M))
                           for j in range(i + 1, len(M))), ""
    return _truth_with_reason(name, args)


def data_value(node: ast.AST, value, instance, seen: dict):
    """The value of a data node (``value`` evaluates a child); ``NotImplemented`` for the
    nodes the plain language evaluates."""
    if isinstance(node, ast.Name) and node.id in DATA_NAMES:
        return _name(instance, node.id)
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        import sympy

        return {"pi": sympy.pi, "E": sympy.E}[node.id]
    if isinstance(node, ast.List):
        return tuple(value(e) for e in node.elts)
    if isinstance(node, ast.Call):
        result = call(node.func.id, [value(a) for a in node.args])
        if node.func.id in TRUTH_FUNCTIONS:
            truth, why = result
            shown = "undecided" if truth is None else str(truth).lower()
            seen[ast.unparse(node)] = f"{shown} ({why[:-1]})" if why else shown
            return truth
        if not _is_array(result):
            seen.setdefault(ast.unparse(node), result)
        return result
    return NotImplemented
