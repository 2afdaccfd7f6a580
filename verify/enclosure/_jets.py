r"""Taylor jets of matrix-valued functions of time, in ball arithmetic (python-flint ``arb``).

A *jet* is the truncated Taylor expansion :math:`A(s) = \sum_{m \ge 0} A_m s^m` of a matrix
function of one variable, whose coefficients :math:`A_m` (``arb_mat``) are computed **one order
at a time**: a :class:`Node` computes :math:`A_m` from the coefficients of order :math:`\le m`
of its inputs and caches it. This is what the Taylor method of an ODE :math:`\dot x = F(x)`
needs: if the coefficients :math:`X_0, \dots, X_m` of the solution are known, the expression
graph of :math:`F` gives :math:`F(X)_m`, and :math:`X_{m+1} = F(X)_m / (m+1)`
(:func:`taylor_coefficients`).

Every rule is exact in exact arithmetic and evaluated in balls, so each computed coefficient
*contains* the true one for every point of the input balls (inclusion monotonicity). The rules
(all standard, e.g. Griewank–Walther, *Evaluating Derivatives*, §13.2):

* sums and products by constants: coefficient-wise;
* matrix products: :math:`(AB)_m = \sum_{k=0}^m A_k B_{m-k}` (one ``arb_mat`` product per term);
* elementwise :math:`E = \exp(A)`: :math:`E_0 = \exp(A_0)`,
  :math:`E_m = \frac1m \sum_{k=1}^m k\, A_k \circ E_{m-k}`;
* elementwise powers :math:`P = A^\alpha` (:math:`A_0 > 0`): :math:`P_0 = A_0^\alpha`,
  :math:`P_m = \frac{1}{m A_0} \sum_{k=1}^m (\alpha k - (m - k))\, A_k \circ P_{m-k}`;
* row scaling :math:`\operatorname{diag}(v) A` and Hadamard products: Cauchy products entry by
  entry.

**Two arithmetics, one graph.** ``coef(m)`` computes in python-flint ``arb`` (any precision).
``ball(m)`` computes the same coefficient in float64 midpoint–radius balls
(:class:`verify.numerics._midrad.Balls`): each node keeps its coefficients stacked by order,
and the Cauchy sum of an order is one call (:func:`~verify.numerics._midrad.cauchy_product`,
:func:`~verify.numerics._midrad.cauchy_hadamard`; compiled when Numba is installed) instead
of one Python-level ``arb`` operation per entry and term. The order-0 values of ``exp`` and
of powers are taken from Arb and converted outward (libm's are not correctly rounded). Both
routes contain the true coefficients; the float64 balls are wider by float64's rounding
(about :math:`10^{-16}` of the terms' sizes), so a caller uses them only where the balls are
much wider than that (:func:`taylor_coefficients`' ``midrad``); an overflow shows as a
non-finite ball, and the caller falls back to Arb.

Examples
--------
:math:`x' = x` from :math:`x(0) = 1` has the coefficients :math:`1/m!`:

>>> from flint import arb_mat
>>> X = State(arb_mat([[1]]))
>>> [str(c[0, 0]) for c in taylor_coefficients(X, X, 3)]
['1.00000000000000', '1.00000000000000', '0.500000000000000', '[0.166666666666667 +/- 3.71e-16]']
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import arb, fmpq

from verify.numerics._midrad import (
    INDICES,
    Balls,
    cauchy_hadamard,
    cauchy_product,
    new_stack,
    stack_sum,
)

__all__ = ["Node", "State", "Const", "Series", "Add", "Sub", "Scale", "ScalarTimes", "MatMul",
           "Transpose",
           "ElementExp", "ElementPower", "RowScale", "Hadamard", "taylor_coefficients"]


class Node:
    """A matrix-valued jet; ``coef(m)`` is its Taylor coefficient of order ``m``."""

    constant = False

    def __init__(self, rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self._coef: list = []
        self._entries: list = []
        self._stack = None  # the float64 coefficients, stacked by order (new_stack)
        self._known = 0  # how many of them are computed

    def coef(self, m: int):
        """The coefficient of order ``m`` (an ``arb_mat``), computing the missing ones."""
        coefficients = self._coef
        if m < len(coefficients):
            return coefficients[m]
        while len(coefficients) <= m:
            coefficients.append(self._compute(len(coefficients)))
        return coefficients[m]

    def entries(self, m: int) -> list:
        """``coef(m)`` as a flat row-major list of ``arb`` (cached)."""
        while len(self._entries) <= m:
            self._entries.append(self.coef(len(self._entries)).entries())
        return self._entries[m]

    def _compute(self, m: int):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def ball(self, m: int) -> Balls:
        """The coefficient of order ``m`` in float64 balls (module docstring), computing the
        missing ones."""
        stack = self.stack(m)
        return Balls(stack[0, m], stack[1, m])

    def stack(self, m: int) -> np.ndarray:
        """The stack (:func:`~verify.numerics._midrad.new_stack`) of the float64 coefficients,
        computed at least to order ``m``."""
        while self._known <= m:
            self._reserve()
            self._fill(self._known)
            self._known += 1
        return self._stack

    def _reserve(self) -> None:
        """Room in the stack for the next coefficient."""
        m, stack = self._known, self._stack
        if stack is None or m == stack.shape[1]:
            self._stack = new_stack(self.rows, self.cols, max(16, 2 * m))
            if m:
                self._stack[:, :m] = stack[:, :m]

    def _fill(self, m: int) -> None:
        """Compute the coefficient ``m`` into the stack (from :meth:`_ball` unless a subclass
        writes it there directly)."""
        value = self._ball(m)
        self._stack[0, m], self._stack[1, m] = value.mid, value.rad

    def _ball(self, m: int) -> Balls:  # pragma: no cover - every subclass defines one
        raise NotImplementedError

    def _zero_ball(self) -> Balls:
        return Balls.exact(np.zeros((self.rows, self.cols)))

    def _zero(self):
        return self._new([0] * (self.rows * self.cols))

    def _new(self, entries: list):
        """A matrix of this node's shape, of the type (``arb_mat`` or ``acb_mat``) of its first
        input's coefficient 0."""
        return type(self._like())(self.rows, self.cols, entries)

    def _like(self):
        return self.coef(0) if self._coef else next(iter(self._inputs())).coef(0)

    def _inputs(self):
        return [v for v in vars(self).values() if isinstance(v, Node)]


class State(Node):
    """The unknown: coefficient 0 is given, the others are appended by
    :func:`taylor_coefficients` (or by hand with :meth:`append`)."""

    def __init__(self, value) -> None:
        super().__init__(value.nrows(), value.ncols())
        self._coef.append(value)

    def append(self, value) -> None:
        self._coef.append(value)

    def append_ball(self, value: Balls) -> None:
        self._reserve()
        self._stack[0, self._known], self._stack[1, self._known] = value.mid, value.rad
        self._known += 1

    def _compute(self, m: int):
        raise IndexError(f"coefficient {m} of the state is not known yet.")

    def _ball(self, m: int) -> Balls:
        if m == 0:
            return Balls.from_arb_mat(self._coef[0])
        raise IndexError(f"coefficient {m} of the state is not known yet.")


class Const(Node):
    """A constant matrix (all coefficients of order ≥ 1 vanish)."""

    constant = True

    def __init__(self, value) -> None:
        super().__init__(value.nrows(), value.ncols())
        self._coef.append(value)

    def _compute(self, m: int):
        return self._zero()

    def _ball(self, m: int) -> Balls:
        return Balls.from_arb_mat(self._coef[0]) if m == 0 else self._zero_ball()


class Add(Node):
    def __init__(self, a: Node, b: Node) -> None:
        super().__init__(a.rows, a.cols)
        self.a, self.b = a, b

    def _compute(self, m: int):
        return self.a.coef(m) + self.b.coef(m)

    def _fill(self, m: int) -> None:
        stack_sum(self.a.stack(m), self.b.stack(m), m, 1.0, self._stack, m)


class Sub(Node):
    def __init__(self, a: Node, b: Node) -> None:
        super().__init__(a.rows, a.cols)
        self.a, self.b = a, b

    def _compute(self, m: int):
        return self.a.coef(m) - self.b.coef(m)

    def _fill(self, m: int) -> None:
        stack_sum(self.a.stack(m), self.b.stack(m), m, -1.0, self._stack, m)


class Scale(Node):
    """``c · A`` for a constant scalar ``c`` (an ``arb``)."""

    def __init__(self, a: Node, c) -> None:
        super().__init__(a.rows, a.cols)
        c = Fraction(c) if isinstance(c, (int, Fraction)) else c
        self.a = a
        self.c = arb(fmpq(c.numerator, c.denominator)) if isinstance(c, Fraction) else arb(c)

    def _compute(self, m: int):
        return self.a.coef(m) * self.c

    def _ball(self, m: int) -> Balls:
        return self.a.ball(m) * Balls.from_arb([self.c], ())


class ScalarTimes(Node):
    """``f · A`` for a scalar jet ``f`` (a ``1 × 1`` node): a Cauchy product of scalars and
    matrices."""

    def __init__(self, a: Node, f: Node) -> None:
        super().__init__(a.rows, a.cols)
        self.a, self.f = a, f

    def _compute(self, m: int):
        total = self.a.coef(m) * self.f.coef(0)[0, 0]
        if not self.f.constant:
            for k in range(1, m + 1):
                total += self.a.coef(m - k) * self.f.coef(k)[0, 0]
        return total

    def _fill(self, m: int) -> None:
        lo = m if self.f.constant else 0
        cauchy_hadamard(self.f.stack(m - lo), self.a.stack(m), 0, m - lo, m, self._stack, m)


class MatMul(Node):
    """The matrix product ``A B`` (Cauchy product of the coefficient sequences)."""

    def __init__(self, a: Node, b: Node) -> None:
        super().__init__(a.rows, b.cols)
        self.a, self.b = a, b

    def _compute(self, m: int):
        a, b = self.a, self.b
        if a.constant:
            return a.coef(0) * b.coef(m)
        if b.constant:
            return a.coef(m) * b.coef(0)
        total = a.coef(0) * b.coef(m)
        for k in range(1, m + 1):
            total += a.coef(k) * b.coef(m - k)
        return total

    def _fill(self, m: int) -> None:
        a, b = self.a, self.b
        if a.constant:
            cauchy_product(a.stack(0), b.stack(m), 0, 0, m, self._stack, m)
        elif b.constant:
            cauchy_product(a.stack(m), b.stack(0), m, m, m, self._stack, m)
        else:
            cauchy_product(a.stack(m), b.stack(m), 0, m, m, self._stack, m)


class ElementExp(Node):
    """Entrywise ``exp(A)``, with structural zeros where ``allowed`` (a flat list of bools) is
    false and exact ones at the flat indices ``unit``, where ``A`` is identically zero (a
    softmax row's reference column: :math:`e^0 = 1`, its higher coefficients 0) — entries
    that are not computed."""

    def __init__(self, a: Node, allowed: list | None = None, unit: tuple = ()) -> None:
        super().__init__(a.rows, a.cols)
        self.a = a
        self.allowed = allowed
        self.unit = tuple(unit)
        self.active = [k for k in range(a.rows * a.cols)
                       if (allowed is None or allowed[k]) and k not in self.unit]

    def _compute(self, m: int):
        a0 = self.a.entries(0)
        zero = 0 * a0[0]
        out = [zero] * (self.rows * self.cols)
        if m == 0:
            for k in self.active:
                out[k] = a0[k].exp()
            for k in self.unit:
                out[k] = zero + 1
            return self._new(out)
        jA = [self._scaled(j) for j in range(1, m + 1)]  # j · A_j, entries
        E = [self.entries(m - j) for j in range(1, m + 1)]  # E_{m-j}, same order
        inv = arb(1) / m
        for k in self.active:
            total = zero
            for a, e in zip(jA, E, strict=True):
                total += a[k] * e[k]
            out[k] = total * inv
        return self._new(out)

    def _scaled(self, j: int) -> list:
        """The entries of ``j · A_j`` (cached)."""
        cache = self.__dict__.setdefault("_scaled_cache", {})
        if j not in cache:
            cache[j] = (self.a.coef(j) * j).entries()
        return cache[j]

    def _fill(self, m: int) -> None:
        r"""Order 0 from Arb's ``exp`` on the active entries (converted outward), exact ones and
        zeros elsewhere; order ``m``: :math:`\frac1m \sum_j (j A_j) \circ E_{m-j}`, the
        entries that are not active set to their exact 0."""
        shape = (self.rows, self.cols)
        out = self._stack
        if m == 0:
            inactive = np.ones(self.rows * self.cols, dtype=bool)
            inactive[self.active] = False
            self._inactive = inactive.reshape(shape)
            out[:, 0] = 0.0
            a0 = self.a.ball(0)
            if self.active:
                rows, cols = np.divmod(np.array(self.active), self.cols)
                values = Balls(a0.mid[rows, cols], a0.rad[rows, cols]).to_arb_list()
                exps = Balls.from_arb([v.exp() for v in values], (len(values),))
                out[0, 0][rows, cols], out[1, 0][rows, cols] = exps.mid, exps.rad
            for k in self.unit:
                out[0, 0][divmod(k, self.cols)] = 1.0
            return
        # (1/m) sum_j j A_j ∘ E_{m-j}: the weights j and the divisor m are exact floats
        cauchy_hadamard(self.a.stack(m), out, 1, m, m, out, m, INDICES, float(m))
        out[0, m][self._inactive] = 0.0
        out[1, m][self._inactive] = 0.0


class ElementPower(Node):
    """Entrywise ``A^α`` for a rational ``α`` (``A_0 > 0`` entrywise), e.g. ``α = -1/2`` for
    ``1/|x|`` from ``|x|²``."""

    def __init__(self, a: Node, alpha: Fraction) -> None:
        super().__init__(a.rows, a.cols)
        self.a, self.exponent = a, Fraction(alpha)
        self.alpha = arb(self.exponent.numerator) / self.exponent.denominator

    def _compute(self, m: int):
        n, c = self.rows, self.cols
        a0 = self.a.entries(0)
        if m == 0:
            if self.exponent == -1:
                return self._new([1 / v for v in a0])
            if self.exponent == Fraction(-1, 2):
                return self._new([v.rsqrt() for v in a0])
            return self._new([v ** self.alpha for v in a0])
        A = [self.a.entries(j) for j in range(m + 1)]
        P = [self.entries(j) for j in range(m)]
        out = []
        factors = [self.alpha * j - (m - j) for j in range(m + 1)]
        for k in range(n * c):
            total = 0 * a0[k]
            for j in range(1, m + 1):
                total += factors[j] * A[j][k] * P[m - j][k]
            out.append(total / (m * a0[k]))
        return self._new(out)

    def _ball(self, m: int) -> Balls:
        r"""Order 0 (and :math:`1/A_0`) from Arb, converted outward; order ``m``:
        :math:`\frac{1}{m A_0} \sum_j (\alpha j - (m - j))\, A_j \circ P_{m-j}`."""
        shape = (self.rows, self.cols)
        if m == 0:
            a0 = self.a.ball(0).to_arb_list()
            self._inverse = Balls.from_arb([1 / v for v in a0], shape)
            if self.exponent == -1:
                return self._inverse
            if self.exponent == Fraction(-1, 2):
                return Balls.from_arb([v.rsqrt() for v in a0], shape)
            return Balls.from_arb([v ** self.alpha for v in a0], shape)
        # the weights (alpha + 1) j - m are exact floats for a dyadic alpha (-1, -1/2)
        denominator = self.exponent.denominator
        if denominator & (denominator - 1):
            raise NotImplementedError(f"a non-dyadic exponent {self.exponent} in float64")
        weights = (float(self.exponent) + 1) * INDICES[:m + 1] - m
        out = self._stack
        cauchy_hadamard(self.a.stack(m), out, 1, m, m, out, m, weights, float(m))
        return Balls(out[0, m], out[1, m]) * self._inverse


class RowScale(Node):
    """``diag(v) A`` for a column jet ``v`` (``rows × 1``)."""

    def __init__(self, v: Node, a: Node) -> None:
        super().__init__(a.rows, a.cols)
        self.v, self.a = v, a

    def _compute(self, m: int):
        n, c = self.rows, self.cols
        V = [self.v.entries(j) for j in range(m + 1)]
        A = [self.a.entries(j) for j in range(m + 1)]
        out = []
        for i in range(n):
            for col in range(c):
                k = i * c + col
                total = V[0][i] * A[m][k]
                for j in range(1, m + 1):
                    total += V[j][i] * A[m - j][k]
                out.append(total)
        return self._new(out)

    def _fill(self, m: int) -> None:
        cauchy_hadamard(self.v.stack(m), self.a.stack(m), 0, m, m, self._stack, m)


class Hadamard(Node):
    """The entrywise product ``A ∘ B``."""

    def __init__(self, a: Node, b: Node) -> None:
        super().__init__(a.rows, a.cols)
        self.a, self.b = a, b

    def _compute(self, m: int):
        A = [self.a.entries(j) for j in range(m + 1)]
        B = [self.b.entries(j) for j in range(m + 1)]
        out = []
        for k in range(self.rows * self.cols):
            total = A[0][k] * B[m][k]
            for j in range(1, m + 1):
                total += A[j][k] * B[m - j][k]
            out.append(total)
        return self._new(out)

    def _fill(self, m: int) -> None:
        cauchy_hadamard(self.a.stack(m), self.b.stack(m), 0, m, m, self._stack, m)


class Series(Node):
    """A known matrix series: ``coefficient(m)`` gives its coefficient of order ``m`` (e.g.
    :math:`e^{(t_0 + s)V} = e^{t_0 V} \\sum_m V^m s^m / m!`)."""

    constant = False

    def __init__(self, rows: int, cols: int, coefficient) -> None:
        super().__init__(rows, cols)
        self.coefficient = coefficient

    def _compute(self, m: int):
        return self.coefficient(m)

    def _ball(self, m: int) -> Balls:
        return Balls.from_arb_mat(self.coef(m))


class Transpose(Node):
    def __init__(self, a: Node) -> None:
        super().__init__(a.cols, a.rows)
        self.a = a
        self.constant = a.constant  # a product with it is then one product per order

    def _compute(self, m: int):
        return self.a.coef(m).transpose()

    def _ball(self, m: int) -> Balls:
        return self.a.ball(m).transpose()


def taylor_coefficients(state: State, field: Node, order: int, midrad: bool = False) -> list:
    r"""The Taylor coefficients :math:`X_0, \dots, X_{order}` of the solution of
    :math:`\dot X = F(X)`, :math:`X(0) = X_0`, where ``field`` is the graph of :math:`F` built on
    ``state`` (a fresh :class:`State` holding :math:`X_0`): :math:`X_{m+1} = F(X)_m / (m + 1)`;
    in float64 balls (:class:`~verify.numerics._midrad.Balls`) when ``midrad``.
    """
    if midrad:
        for m in range(order):
            state.append_ball(field.ball(m).divide(float(m + 1)))
        return [state.ball(m) for m in range(order + 1)]
    for m in range(order):
        state.append(field.coef(m) * (arb(1) / (m + 1)))
    return [state.coef(m) for m in range(order + 1)]
