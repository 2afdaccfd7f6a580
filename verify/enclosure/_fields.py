r"""The model family's vector fields as jet graphs (:mod:`verify.enclosure._jets`), evaluable in
real balls (Taylor coefficients at a point) and in complex balls (a-priori enclosures on a disc
of complex times, :mod:`verify.enclosure._taylor`).

**Rescaled form** (one head, no normalisation): with :math:`E(t) = e^{tV}`, :math:`y_i = E z_i`,

.. math:: \dot z_i = \sum_j A_{ij} V z_j - V z_i, \qquad
          A_{ij} = \frac{\mathbb 1[j \in N(i)]\, e^{D_{ij}}}{\sum_{l \in N(i)} e^{D_{il}}},\quad
          D_{ij} = \langle y_i, B\, E (z_j - z_{r(i)})\rangle = S_{ij} - S_{i r(i)},

for softmax, where :math:`B = \beta Q^\top K`, :math:`N(i)` is the mask's neighbourhood and
:math:`r(i)` any allowed *reference* column of row :math:`i` (the softmax does not depend on it).
Taking :math:`r(i)` the row's current argmax is what makes ball arithmetic work late in a run:
the scores grow like :math:`e^{2\lambda_1 t}`, but the differences :math:`z_j - z_{r(i)}` are
formed **before** they are scaled, the reference entry is exactly :math:`e^0 = 1` (its row of
:math:`z - z_{r(i)}` is an exact zero row) and the row sums are :math:`\ge 1`. The weighted
mean is formed from the reference token too,

.. math:: \sum_j A_{ij} u_j = u_{r(i)} + \sum_j A_{ij}\,(u_j - u_{r(i)}),

an identity since each row of a softmax sums to 1. In balls over a box of states and times the
attention carries a width proportional to the scores' (:math:`e^{2\lambda_1 t}` times the
tokens'); in the plain mean that width multiplies the tokens :math:`u_j`, in the centred one
only the offsets :math:`u_j - u_{r(i)}`, which are small inside a cluster — exactly where the
attention is not saturated. On escape-threshold's adversarial-pull#0 at :math:`t = 4` this
took the order-12 coefficient over a step's box from ~1e18 (at the centre: 4e-7) to below 1,
and the steps to :math:`t = 5` from 1410 to 93. Unnormalised
attention is :math:`A_{ij} = \tfrac1n \mathbb 1[j \in N(i)]\, e^{S_{ij}}`.

**Token form** (autonomous; several heads, masks, post-LN sphere, pre-LN): :math:`u_i = x_i` (or
:math:`x_i/|x_i|` for pre-LN), per head the same attention with
:math:`D_{ij} = \beta\langle u_i, B_h (u_j - u_{r(i)})\rangle`, :math:`m_i = \sum_h V_h
\sum_j A^h_{ij} u_j`, and :math:`F_i = m_i`, or on the sphere
:math:`F_i = m_i - \frac{\langle m_i, x_i\rangle}{|x_i|^2} x_i`. These are the fields of
:class:`verify.flow.fields.VectorField`.

Unsupported (no enclosure): hardmax attention (discontinuous), an MLP, discrete layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from flint import arb, arb_mat, fmpq

from verify.enclosure._jets import (
    Add,
    Const,
    ElementExp,
    ElementPower,
    Hadamard,
    MatMul,
    Node,
    RowScale,
    ScalarTimes,
    Scale,
    Series,
    State,
    Sub,
    Transpose,
    taylor_coefficients,
)
from verify.numerics._midrad import compiled

__all__ = ["unsupported", "FieldSpec", "exact_matrix", "float64_jets", "FLOAT64_MIN_TOL"]

#: The finest step tolerance at which the jets run in float64 balls (:func:`float64_jets`):
#: the proofs' coarse (2^-32) and fine (2^-40) enclosures at 128 bits gave the same steps (±1)
#: and final radii within 5 % in float64 (the centre's jets in arb, :meth:`FieldSpec.jets`) as
#: in arb (on polytope, hyperplanes, order-preserved,
#: escape-threshold, boolean-1d and one-bounded-token instances, session 8); float64's own
#: rounding, ~1e-16 of the terms, is 4 orders of magnitude below 2^-40.
FLOAT64_MIN_TOL = 2.0 ** -40


def float64_jets(bits: int, tol: float) -> bool:
    """Whether an enclosure at ``bits`` with step tolerance ``tol`` computes its jets in float64
    balls (:class:`FieldSpec`'s ``midrad``): at most 128 bits, ``tol >= FLOAT64_MIN_TOL`` and the
    compiled kernels available (Numba; without them the float64 route is slower than arb)."""
    return bits <= 128 and tol >= FLOAT64_MIN_TOL and compiled()


def unsupported(model) -> str | None:
    """Why ``model`` has no enclosure (``None`` when it has one)."""
    if model.discrete:
        return "discrete layers are a map, not a flow (form='discrete')."
    if model.hardmax:
        return "hardmax attention is discontinuous: no Taylor enclosure."
    if not (model.softmax or model.unnormalised_attention):  # a variant added later
        return f"{model.attention} attention has no Taylor enclosure (not implemented)."
    if model.has_mlp:
        return "an MLP after attention is not supported by the enclosures."
    return None


def exact_matrix(matrix) -> arb_mat:
    """An exact rational matrix (object array of Fractions) as balls at the current precision."""
    return arb_mat([[arb(fmpq(Fraction(v).numerator, Fraction(v).denominator)) for v in row]
                    for row in matrix])


class _Converted(Sequence):
    """Float64 balls (:class:`~verify.numerics._midrad.Balls`) read as ``arb_mat``, each
    converted on first use (a step reads only some orders of some jets)."""

    def __init__(self, balls: list) -> None:
        self._balls = balls
        self._done: dict[int, arb_mat] = {}

    def __len__(self) -> int:
        return len(self._balls)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        index = range(len(self))[index]
        if index not in self._done:
            self._done[index] = self._balls[index].to_arb_mat()
        return self._done[index]

    def __add__(self, other: list) -> list:
        return list(self) + list(other)

    def __radd__(self, other: list) -> list:
        return list(other) + list(self)


def type_of(value):
    """``arb_mat`` or ``acb_mat``, as fits a real or complex ball."""
    from flint import acb, acb_mat

    return acb_mat if isinstance(value, acb) else arb_mat


def _selection(rows: list[int], n: int) -> arb_mat:
    return arb_mat([[1 if j == i else 0 for j in range(n)] for i in rows])


def _reference_rows(references: list[int], n: int) -> arb_mat:
    """The ``n × n`` matrix whose row ``i`` is :math:`e_{r(i)}^\\top` (picks ``u_{r(i)}``)."""
    return arb_mat([[1 if j == references[i] else 0 for j in range(n)] for i in range(n)])


class FieldSpec:
    """The constants of ``model``'s field for ``n`` tokens, as balls at the working precision of
    its creation, and the jet graphs of the field (module docstring).

    Parameters
    ----------
    model : Model
    n : int
    midrad : bool
        Whether :meth:`jets` computes in float64 midpoint–radius balls
        (:mod:`verify.numerics._midrad`; the jets' ``ball`` route) and converts the coefficients
        to ``arb``, falling back to ``arb`` when a ball overflows. Either way every coefficient
        contains the true one; the float64 balls are wider by about :math:`10^{-16}` of each
        entry's size.
    """

    def __init__(self, model, n: int, midrad: bool = False) -> None:
        self.model, self.n, d = model, n, model.d
        self.midrad = midrad
        self.rescaled = model.rescaled
        mask = model.mask_for(n)
        self.mask = mask
        self.allowed = None if mask is None else [bool(v) for v in mask.reshape(-1)]
        self.heads = [(exact_matrix(model.beta * head.B), exact_matrix(head.V))
                      for head in model.heads]
        # V = λI in the rescaled form: the scores are e^{2λt} times those of z (no matrices)
        V0 = model.heads[0].V
        lam = V0[0, 0]
        self.scalar = (arb(fmpq(Fraction(lam).numerator, Fraction(lam).denominator))
                       if self.rescaled and all(V0[a, b] == (lam if a == b else 0)
                                                for a in range(d) for b in range(d)) else None)
        self.ones_d = Const(arb_mat(d, 1, [1] * d))
        self.ones_n = Const(arb_mat(n, 1, [1] * n))
        # per reference r: the matrix I - 1 e_rᵀ, whose row r is exactly zero
        # the constant nodes, made once (their coefficients, in arb and in float64, are cached)
        self._constants: dict = {}
        self._centre = [Const(arb_mat([[(1 if j == i else 0) - (1 if j == r else 0)
                                          for j in range(n)] for i in range(n)]))
                        for r in range(n)]

    # ---------------------------------------------------------------------------------- pieces
    def _constant(self, key: tuple, make) -> Const:
        """The constant node ``Const(make())`` for ``key``, made once."""
        node = self._constants.get(key)
        if node is None:
            node = self._constants[key] = Const(make())
        return node

    def _exponential(self, t0, V: arb_mat) -> Series:
        """:math:`E(t_0 + s) = e^{t_0 V} \\sum_m V^m s^m/m!` as a known series (``t0`` a
        rational or a ball: then the series holds for every base time in it)."""
        if isinstance(t0, Fraction):
            t0 = arb(fmpq(t0.numerator, t0.denominator))
        start = (V * t0).exp()
        powers = [start]

        def coefficient(m: int):
            while len(powers) <= m:
                powers.append(powers[-1] * V * (arb(1) / len(powers)))
            return powers[m]

        return Series(V.nrows(), V.ncols(), coefficient)

    def _growth(self, t0) -> Series:
        """:math:`e^{2\\lambda (t_0 + s)}` (``V = λI``) as a ``1 × 1`` series."""
        if isinstance(t0, Fraction):
            t0 = arb(fmpq(t0.numerator, t0.denominator))
        rate = 2 * self.scalar
        start = (rate * t0).exp()
        return Series(1, 1, lambda m: arb_mat([[start * rate ** m / arb.fac_ui(m)]]))

    def _attention(self, U: Node, B: arb_mat, references: list[int],
                   scale: Node | None) -> tuple[Node, Node]:
        """``(A, A U)``: the attention matrix (softmax with reference columns, or
        unnormalised) and its product with ``U`` (computed from the exponentials directly, so
        that the state's jets never need ``A`` itself; for softmax centred on the reference
        tokens, module docstring). For the rescaled form ``scale`` is
        ``Eᵀ`` (rows ``y = z Eᵀ``), or — when ``V = λI`` — the ``1 × 1`` factor
        :math:`e^{2\\lambda t}` of the scores."""
        n = self.n
        factor = scale if self.scalar is not None else None
        if factor is not None:
            scale = None
        Y = U if scale is None else MatMul(U, scale)
        if self.model.unnormalised_attention:
            S = MatMul(MatMul(Y, self._constant(("B", id(B)), lambda: B)), Transpose(Y))
            if factor is not None:
                S = ScalarTimes(S, factor)
            A = Scale(ElementExp(S, self.allowed), Fraction(1, n))
            return A, MatMul(A, U)
        YB = MatMul(Y, self._constant(("B", id(B)), lambda: B))
        D = None
        parts = []  # per reference r: (its rows, the rows u_j - u_r of U)
        for r in sorted(set(references)):
            rows = [i for i in range(n) if references[i] == r]
            offsets = MatMul(self._centre[r], U)  # rows u_j - u_r, row r exactly 0
            W = offsets if scale is None else MatMul(offsets, scale)
            pick = self._constant(("pick", *rows), lambda rows=rows: _selection(rows, n))
            part = MatMul(Transpose(pick), MatMul(MatMul(pick, YB), Transpose(W)))
            D = part if D is None else Add(D, part)
            parts.append((pick, offsets))
        if factor is not None:
            D = ScalarTimes(D, factor)
        E = ElementExp(D, self.allowed, unit=[i * n + references[i] for i in range(n)])
        inverse = ElementPower(MatMul(E, self.ones_n), -1)
        # A U = u_r(i) + A (U - 1 u_r(i)ᵀ) row by row (the rows of A sum to 1): the
        # attention's width is multiplied by the small offsets u_j - u_r, not by u_j
        spread = None
        for pick, offsets in parts:
            term = MatMul(Transpose(pick), MatMul(pick, MatMul(E, offsets)))
            spread = term if spread is None else Add(spread, term)
        leaders = MatMul(self._constant(("leaders", *references),
                                        lambda: _reference_rows(references, n)), U)
        return RowScale(inverse, E), Add(leaders, RowScale(inverse, spread))

    def attention_values(self, times, X, references) -> list[list[list]]:
        """Per head, the attention matrix (lists of balls) at the state ``X`` for every time in
        ``times`` (see :meth:`value`)."""
        state = State(X)
        if self.rescaled:
            B, V = self.heads[0]
            nodes = [self._attention(state, B, references[0], self._time_value(times))[0]]
        else:
            U = self._inputs(state)
            nodes = [self._attention(U, B, refs, None)[0]
                     for (B, V), refs in zip(self.heads, references, strict=True)]
        return [node.coef(0).tolist() for node in nodes]

    def _inputs(self, X: Node) -> Node:
        if not self.model.pre_ln:
            return X
        norms = MatMul(Hadamard(X, X), self.ones_d)
        return RowScale(ElementPower(norms, Fraction(-1, 2)), X)

    def graph(self, X: Node, time: Node | None, references: list[list[int]],
              record: list | None = None) -> Node:
        """The jet graph of the field at the state ``X``; ``time`` is the series (or the value,
        as a constant node) of :math:`E(t)^\\top` — of :math:`e^{2\\lambda t}` when
        ``V = λI`` — for the rescaled form and ``None`` otherwise;
        ``references[h][i]`` is the reference column of row ``i`` of head ``h``; the attention
        node of each head is appended to ``record`` when given."""
        model = self.model
        record = [] if record is None else record
        if self.rescaled:
            B, V = self.heads[0]
            A, AX = self._attention(X, B, references[0], time)
            record.append(A)
            return MatMul(Sub(AX, X), self._constant(("Vt", id(V)), V.transpose))
        U = self._inputs(X)
        total = None
        for (B, V), refs in zip(self.heads, references, strict=True):
            A, AU = self._attention(U, B, refs, None)
            record.append(A)
            term = MatMul(AU, self._constant(("Vt", id(V)), V.transpose))
            total = term if total is None else Add(total, term)
        if not model.on_sphere:
            return total
        radial = MatMul(Hadamard(total, X), self.ones_d)
        squares = MatMul(Hadamard(X, X), self.ones_d)
        return Sub(total, RowScale(Hadamard(radial, ElementPower(squares, -1)), X))

    # ---------------------------------------------------------------------------------- use
    def references(self, t0: Fraction, X) -> list[list[int]]:
        """Per head, each row's argmax column (allowed) at the midpoints of ``X`` at ``t0``."""
        mids = X.mid() if isinstance(X, arb_mat) else arb_mat(
            [[X[i, j].real.mid() for j in range(X.ncols())] for i in range(X.nrows())])
        out = []
        for B, V in self.heads:
            if self.rescaled:
                E = (V * arb(fmpq(t0.numerator, t0.denominator))).exp().mid()
                Y = mids * E.transpose()
            elif self.model.pre_ln:
                Y = arb_mat([[v / sum((u * u for u in row), arb(0)).sqrt() for v in row]
                             for row in mids.tolist()])
            else:
                Y = mids
            S = (Y * B.mid() * Y.transpose()).tolist()
            out.append([max((j for j in range(self.n)
                             if self.allowed is None or self.allowed[i * self.n + j]),
                            key=lambda j, row=S[i]: float(row[j].mid())) for i in range(self.n)])
        return out

    def coefficients(self, t0, X, order: int, references) -> list:
        """Taylor coefficients of orders ``0..order`` of the solution with ``x(t0) = X``, for
        every state in the box ``X`` and every base time in ``t0`` (rational or ball)."""
        return self.jets(t0, X, order, references)["state"]

    def jets(self, t0, X, order: int, references, attention: int = 0) -> dict:
        """:meth:`coefficients` (``"state"``) with the coefficients of orders ``< attention``
        of each head's attention (``"attention"``) and of :math:`E(t_0 + s)` (``"time"``, the
        rescaled form), for :func:`verify.enclosure._jacobian.jacobian_series`; and which
        arithmetic computed them (``"arithmetic"``: ``"float64"`` or ``"arb"``).

        With ``midrad``, the jets over a *set* of states are computed in float64 balls; at a
        point (every radius of ``X`` zero: a step's centre) they stay in Arb, whose balls there
        are ~1e-38 where float64's would be ~1e-16 of the terms: on hyperplanes' paper-2d#0 the
        centre's jets in float64 left the final ball 3.1× wider after 417 steps (1.75e-9 →
        5.45e-9), in Arb 1.03× (1.80e-9)."""
        wide = self.midrad and any(v.rad() != 0 for v in X.entries())
        for midrad in ([True, False] if wide else [False]):
            state = State(X)
            time = exponential = None
            if self.rescaled:
                exponential = self._exponential(t0, self.heads[0][1])
                time = Transpose(exponential) if self.scalar is None else self._growth(t0)
            record: list = []
            field = self.graph(state, time, references, record)
            if midrad:
                with np.errstate(all="ignore"):
                    balls = taylor_coefficients(state, field, order, midrad=True)
                    heads = [[A.ball(m) for m in range(attention)] for A in record]
                if not all(b.finite() for b in balls + [b for h in heads for b in h]):
                    continue  # overflow in float64: the same jets in arb
                coefficients = _Converted(balls)
                attentions = [[b.to_arb_mat() for b in h] for h in heads]
            else:
                coefficients = taylor_coefficients(state, field, order)
                attentions = [[A.coef(m) for m in range(attention)] for A in record]
            return {"state": coefficients, "references": references, "attention": attentions,
                    "time": None if exponential is None else
                    [exponential.coef(m) for m in range(max(order, attention))],
                    "arithmetic": "float64" if midrad else "arb"}
        raise AssertionError("unreachable: the arb route always returns")  # pragma: no cover

    def value(self, times, X, references):
        """The field at the state ``X`` (``arb_mat`` or ``acb_mat``) for every time in the ball
        ``times`` (``arb`` or ``acb``; ignored by the token form)."""
        time = self._time_value(times) if self.rescaled else None
        return self.graph(State(X), time, references).coef(0)

    def _time_value(self, times) -> Const:
        """The time dependence at every time of the ball ``times``: :math:`E(t)^\\top`, or
        :math:`e^{2\\lambda t}` when ``V = λI``."""
        if self.scalar is not None:
            return Const(type_of(times)([[(2 * self.scalar * times).exp()]]))
        return Const((self.heads[0][1] * times).exp().transpose())
