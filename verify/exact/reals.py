r"""Exact real numbers written as expressions: ``"cos(2*pi/5)"``, ``"sqrt(2)/2"``, ``"pi/3"``.

A claim or instance file may write any entry of a token or a matrix as an expression. It is
parsed **without Python's** ``eval``: :func:`parse_real` walks the syntax tree and builds the
SymPy expression node by node from a fixed vocabulary —

* numbers, read exactly (``0.1`` is ``1/10``), and the constants ``pi`` and ``E``;
* ``+ - * /`` and ``**`` with a rational exponent (``2**(1/3)``; at most
  :data:`MAX_EXPONENT` in size);
* calls of the functions :data:`FUNCTIONS` (``sqrt, exp, log, sin, cos, tan, asin, acos,
  atan, abs``), one argument each;

— and refuses everything else by name: attribute access (``x.real``), dunder names, any other
name or call, subscripts, keywords, lambdas, comprehensions, strings.

What the value becomes (:func:`exact_number`):

* a **rational** (SymPy simplifies ``cos(pi/3)`` to ``1/2``, ``sqrt(8)/sqrt(2)`` to ``2``):
  the exact :class:`~fractions.Fraction`, as any other rational input;
* an **irrational**: an :class:`Irrational` — a :class:`~fractions.Fraction` equal to the real
  value **rounded to nearest with** :data:`ROUNDING_BITS` **significant bits** (what the
  dynamics integrate, relative error below ``2^-256``), which keeps the expression
  (:attr:`Irrational.expression`). The rounding is computed from rigorous balls
  (python-flint ``arb``) at increasing precision until both ends of the ball round alike, so it
  is a function of the real value alone: equal values round equally, and ``-x`` rounds to minus
  the rounding of ``x`` (exact sign symmetries of the data survive). Whatever reads the *stated*
  data — the hypotheses of a claim — reads the expression (:func:`symbolic`) and decides on it
  exactly (SymPy) or in balls (:func:`sign`); arithmetic on an :class:`Irrational` gives a
  plain ``Fraction`` (the rounding), so nothing derived pretends to be the stated value.

Examples
--------
>>> exact_number("cos(pi/3)"), exact_number("0.25")
(Fraction(1, 2), Fraction(1, 4))
>>> x = exact_number("sqrt(2)/2")
>>> x, str(x), abs(float(x) - 2 ** -0.5) < 1e-16
(Irrational('sqrt(2)/2'), 'sqrt(2)/2', True)
>>> exact_number("-sqrt(2)/2") == -x
True
>>> sign(symbolic(x) ** 2 - symbolic(Fraction(1, 2))), sign(parse_real("pi") - 3)
(0, 1)
>>> parse_real("x.real")
Traceback (most recent call last):
    ...
ValueError: attribute access ('.real') is not allowed in a number
"""

from __future__ import annotations

import ast
import functools
from fractions import Fraction

from verify.exact.precision import working_precision

__all__ = ["Irrational", "parse_real", "exact_number", "from_sympy", "symbolic", "to_arb",
           "sign", "round_real", "normalise_rows", "FUNCTIONS", "CONSTANTS", "ROUNDING_BITS",
           "MAX_LENGTH", "MAX_EXPONENT"]

#: Significant bits of the rational that an irrational entry enters the dynamics as.
ROUNDING_BITS = 256
#: Longest expression accepted (characters).
MAX_LENGTH = 400
#: Largest numerator or denominator of an exponent in ``a ** b``.
MAX_EXPONENT = 64
#: Largest size (bits) of a rational power ``a ** b`` written in an expression.
MAX_BITS = 4096
#: The functions an expression may call (one argument each).
FUNCTIONS = ("sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "abs")
#: The names an expression may use.
CONSTANTS = ("pi", "E")
_PRECISIONS = (320, 640, 1280, 2560, 5120)  # bits of the balls tried, in turn


class Irrational(Fraction):
    """An irrational entry: the rational it enters the dynamics as (its value as a
    :class:`~fractions.Fraction`, the real rounded to :data:`ROUNDING_BITS` bits) and the
    exact ``expression`` it was written as (``str`` gives the expression back, so a file
    written from it reads back the same exact value).

    >>> x = Irrational(Fraction(3, 2), "3/2 + 1e-80")   # any rounding with its expression
    >>> x + 1, type(x + 1).__name__, str(x)
    (Fraction(5, 2), 'Fraction', '3/2 + 1e-80')
    """

    __slots__ = ("expression",)

    def __new__(cls, value: Fraction, expression: str) -> Irrational:
        self = super().__new__(cls, value.numerator, value.denominator)
        self.expression = str(expression)
        return self

    def __reduce__(self):
        return (_restore, (self.numerator, self.denominator, self.expression))

    def __copy__(self) -> Irrational:
        return self

    def __deepcopy__(self, memo) -> Irrational:
        return self

    def __repr__(self) -> str:
        return f"Irrational({self.expression!r})"

    def __str__(self) -> str:
        return self.expression


def _restore(numerator: int, denominator: int, expression: str) -> Irrational:
    return Irrational(Fraction(numerator, denominator), expression)


# --------------------------------------------------------------------------- the parser
def _refuse(node: ast.AST) -> str:
    """Why ``node`` is not allowed (one phrase naming it)."""
    if isinstance(node, ast.Attribute):
        return f"attribute access ('.{node.attr}') is not allowed in a number"
    if isinstance(node, ast.Name):
        if node.id.startswith("__"):
            return f"the dunder name {node.id!r} is not allowed"
        return (f"unknown name {node.id!r}: a number may use the constants "
                f"{', '.join(CONSTANTS)} and the functions {', '.join(FUNCTIONS)}")
    if isinstance(node, ast.Call):
        called = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
        return (f"the call {called}(...) is not allowed (outside the allowed functions "
                f"{', '.join(FUNCTIONS)})")
    if isinstance(node, ast.Constant):
        return f"{node.value!r} is not a number"
    return f"{type(node).__name__} ({ast.unparse(node)!r}) is not allowed in a number"


def _literal(node: ast.Constant, text: str):
    """The exact SymPy number of a literal, read from its source text (``0.1`` is 1/10)."""
    import sympy

    if isinstance(node.value, bool) or not isinstance(node.value, int | float):
        raise ValueError(_refuse(node))
    source = ast.get_source_segment(text, node) or repr(node.value)
    return sympy.Rational(Fraction(source.replace("_", "")))


def _build(node: ast.AST, text: str):
    import sympy

    if isinstance(node, ast.Expression):
        return _build(node.body, text)
    if isinstance(node, ast.Constant):
        return _literal(node, text)
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return {"pi": sympy.pi, "E": sympy.E}[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _build(node.operand, text)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult |
                                                  ast.Div | ast.Pow):
        left, right = _build(node.left, text), _build(node.right, text)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, ast.Div):
            if right == 0:
                raise ValueError("division by zero")
            return left / right
        if not (right.is_Rational and abs(right.p) <= MAX_EXPONENT
                and right.q <= MAX_EXPONENT):
            raise ValueError(f"the exponent {right} must be a rational p/q with |p|, q ≤ "
                             f"{MAX_EXPONENT}")
        if left == 0 and right < 0:
            raise ValueError("division by zero (0 to a negative power)")
        if left.is_Rational and max(int(left.p).bit_length(), int(left.q).bit_length()) \
                * abs(int(right.p)) > MAX_BITS * int(right.q):
            raise ValueError(f"({left})**({right}) has more than {MAX_BITS} bits")
        return left ** right
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in FUNCTIONS:
        if node.keywords or len(node.args) != 1:
            raise ValueError(f"{node.func.id}(...) takes exactly one argument")
        argument = _build(node.args[0], text)
        name = "Abs" if node.func.id == "abs" else node.func.id
        return getattr(sympy, name)(argument)
    raise ValueError(_refuse(node))


@functools.lru_cache(maxsize=4096)
def parse_real(text: str):
    """The exact real number ``text`` denotes, as a SymPy expression (module docstring).

    Raises
    ------
    ValueError
        Saying what is not allowed (attribute access, a dunder name, a call outside
        :data:`FUNCTIONS`, any other name or construct), that it does not parse, or that its
        value is not a finite real number.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{text!r} is not an expression")
    if len(text) > MAX_LENGTH:
        raise ValueError(f"the expression has {len(text)} characters; at most {MAX_LENGTH}")
    source = text.strip()
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"it does not parse ({exc.msg})") from None
    for node in ast.walk(tree):  # refuse code before building anything
        if isinstance(node, ast.Attribute | ast.Subscript | ast.Lambda | ast.Starred |
                      ast.ListComp | ast.GeneratorExp | ast.DictComp | ast.SetComp):
            raise ValueError(_refuse(node))
        if isinstance(node, ast.Name) and node.id not in CONSTANTS and not (
                node.id in FUNCTIONS and _is_called(tree, node)):
            raise ValueError(_refuse(node))
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in FUNCTIONS):
            raise ValueError(_refuse(node))
    expr = _build(tree, source)
    ball = to_arb(expr, _PRECISIONS[0])
    if ball is None or not ball.is_finite():
        raise ValueError(f"{source!r} is not a finite real number")
    return expr


def _is_called(tree: ast.AST, name: ast.Name) -> bool:
    return any(isinstance(n, ast.Call) and n.func is name for n in ast.walk(tree))


# --------------------------------------------------------------------------- balls
def to_arb(expr, bits: int):
    """A rigorous ball (python-flint ``arb``, ``bits`` of working precision) containing the
    real value of the SymPy expression ``expr``; ``None`` when ``expr`` uses something the
    balls cannot evaluate, a ``nan`` ball outside a function's domain."""

    with working_precision(bits):
        try:
            return _arb(expr)
        except (TypeError, ValueError, ZeroDivisionError):
            return None


def _arb(expr):
    import flint
    import sympy

    if expr.is_Rational:
        return flint.arb(flint.fmpq(int(expr.p), int(expr.q)))
    if expr is sympy.pi:
        return flint.arb.pi()
    if expr is sympy.E:
        return flint.arb.const_e()
    if expr.is_Add:
        total = flint.arb(0)
        for term in expr.args:
            total += _arb(term)
        return total
    if expr.is_Mul:
        product = flint.arb(1)
        for factor in expr.args:
            product *= _arb(factor)
        return product
    if expr.is_Pow:
        base, exponent = expr.args
        if not exponent.is_Rational:
            return _arb(base) ** _arb(exponent)
        b = _arb(base)
        p, q = int(exponent.p), int(exponent.q)
        if q == 1:
            return b ** p if p >= 0 else 1 / b ** -p
        root = b.sqrt() if q == 2 else b ** flint.arb(flint.fmpq(1, q))
        return root ** p if p >= 0 else 1 / root ** -p
    functions = {sympy.sin: "sin", sympy.cos: "cos", sympy.tan: "tan", sympy.exp: "exp",
                 sympy.log: "log", sympy.asin: "asin", sympy.acos: "acos", sympy.atan: "atan",
                 sympy.Abs: "__abs__"}
    if expr.func in functions and len(expr.args) == 1:
        return getattr(_arb(expr.args[0]), functions[expr.func])()
    raise ValueError(f"{expr} cannot be evaluated in balls")


def _endpoints(ball, bits: int) -> tuple[Fraction, Fraction]:
    """The ends of ``ball`` as exact rationals (taken at ``bits``, the ball's precision: the
    ends are rounded outwards to the working precision)."""

    def exact(x) -> Fraction:
        man, exp = x.man_exp()
        man, exp = int(man), int(exp)
        return Fraction(man * 2 ** exp) if exp >= 0 else Fraction(man, 2 ** -exp)

    with working_precision(bits):
        return exact(ball.lower()), exact(ball.upper())


def _round_bits(q: Fraction, bits: int) -> Fraction:
    """``q`` rounded to nearest with ``bits`` significant bits (ties to even)."""
    if q == 0:
        return q
    magnitude = abs(q)
    e = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** e > magnitude:
        e -= 1
    scale = Fraction(2) ** (bits - 1 - e)
    rounded = round(magnitude * scale) / scale
    return rounded if q > 0 else -rounded


def round_real(expr, bits: int = ROUNDING_BITS) -> Fraction:
    """The real ``expr`` rounded to nearest with ``bits`` significant bits, decided on balls of
    increasing precision until both ends round alike (a function of the value alone).

    >>> round_real(parse_real("sqrt(2)"), 8)
    Fraction(181, 128)

    Raises
    ------
    ValueError
        If no ball up to 5120 bits decides it (the value is 0 without SymPy seeing it, or
        the expression cannot be evaluated in balls).
    """
    for precision in _PRECISIONS:
        ball = to_arb(expr, precision)
        if ball is None or not ball.is_finite():
            break
        low, high = _endpoints(ball, precision)
        if low == high:
            return _round_bits(low, bits)
        if low > 0 or high < 0:
            a, b = _round_bits(low, bits), _round_bits(high, bits)
            if a == b:
                return a
    if sign(expr) == 0:
        return Fraction(0)
    raise ValueError(f"{expr} cannot be rounded: its balls do not decide it")


def sign(expr) -> int | None:
    """The sign of the real ``expr`` (a SymPy expression or a rational): ``-1``, ``0``, ``1``,
    or ``None`` when undecided. Decided exactly for rationals; otherwise by a ball that
    excludes 0 (up to 5120 bits), and ``0`` only when SymPy proves the value zero
    (``equals(0)``, or a minimal polynomial ``x`` for an algebraic number).

    >>> sign(parse_real("cos(2*pi/5)") - (parse_real("sqrt(5)") - 1) / 4)
    0
    """
    import sympy

    if isinstance(expr, Fraction | int):
        return (expr > 0) - (expr < 0)
    if expr.is_Rational:
        return sign(Fraction(int(expr.p), int(expr.q)))
    for precision in _PRECISIONS[:3]:
        ball = to_arb(expr, precision)
        if ball is None or ball.is_nan():
            break
        if ball > 0:
            return 1
        if ball < 0:
            return -1
        if ball.is_exact() and ball == 0:
            return 0
    try:
        if expr.is_zero or sympy.simplify(expr) == 0:
            return 0
        if expr.is_algebraic and sympy.minimal_polynomial(expr, sympy.Symbol("x")) \
                == sympy.Symbol("x"):
            return 0
    except (NotImplementedError, ValueError, TypeError, RecursionError):
        pass
    return None


# --------------------------------------------------------------------------- exact numbers
def symbolic(value):
    """The exact value of an entry as a SymPy expression: the expression of an
    :class:`Irrational`, else the rational itself."""
    import sympy

    if isinstance(value, Irrational):
        return parse_real(value.expression)
    if isinstance(value, Fraction | int):
        value = Fraction(value)
        return sympy.Rational(value.numerator, value.denominator)
    return value


def from_sympy(expr) -> Fraction:
    """The entry of the exact real ``expr``: a ``Fraction`` when rational, else an
    :class:`Irrational` (its rounding, keeping ``str(expr)``)."""
    if expr.is_Rational:
        return Fraction(int(expr.p), int(expr.q))
    return Irrational(round_real(expr), str(expr))


def exact_number(text: str) -> Fraction:
    """The entry written as ``text`` (module docstring); ``ValueError`` says what is wrong."""
    expr = parse_real(text)
    if expr.is_Rational:
        return Fraction(int(expr.p), int(expr.q))
    return Irrational(round_real(expr), text.strip())


def normalise_rows(rows) -> list[list[Fraction]]:
    """Every row divided by its Euclidean norm, exactly: rational when the norm is, else
    :class:`Irrational` entries of the exact quotients.

    >>> normalise_rows([[3, 4], [1, 1]])
    [[Fraction(3, 5), Fraction(4, 5)], [Irrational('sqrt(2)/2'), Irrational('sqrt(2)/2')]]

    Raises
    ------
    ValueError
        For a zero row.
    """
    import sympy

    out = []
    for index, row in enumerate(rows):
        exact = [symbolic(v) for v in row]
        squared = sympy.expand(sum(v * v for v in exact))
        if sign(squared) in (0, None):
            raise ValueError(f"row {index + 1} is 0 (or cannot be told from 0): it has no "
                             "direction to normalise")
        norm = sympy.sqrt(squared)
        out.append([from_sympy(sympy.radsimp(v / norm)) for v in exact])
    return out
