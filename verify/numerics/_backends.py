"""Arithmetic backends: float64 (NumPy) and arbitrary precision (python-flint ``arb``).

A backend turns exact rationals into its numbers, holds states (``n×d`` arrays), and measures
errors. A state is a ``numpy.ndarray`` (float64) or a ``flint.arb_mat`` (arbitrary precision);
both support ``y + y``, ``y - y`` and ``c * y`` for a backend scalar ``c``, which is all the
integrators use. The arbitrary-precision backend keeps only ball *midpoints* between steps: the
radii of a non-validated integration carry no meaning (design.md: no validated integrator exists
for this system), and the error estimate comes from re-running at a higher precision.

Examples
--------
>>> from fractions import Fraction
>>> Float64().scalar(Fraction(1, 3))
0.3333333333333333
>>> b = Arb(bits=200)
>>> with b.working_precision():
...     print(b.to_float(b.scalar(Fraction(1, 3)) * b.from_exact([[Fraction(3)]])))
[[1.]]
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from flint import arb, arb_mat, fmpq

from verify.errors import InvalidArgument
from verify.exact.precision import working_precision

__all__ = ["Backend", "Float64", "Arb", "digits_to_bits", "bits_to_digits"]


def digits_to_bits(digits: float) -> int:
    """Bits needed for ``digits`` significant decimal digits."""
    return int(math.ceil(digits * math.log2(10)))


def bits_to_digits(bits: int) -> float:
    return bits * math.log10(2)


class Backend:
    """Interface shared by :class:`Float64` and :class:`Arb`."""

    name: str = "abstract"
    bits: int = 53

    @property
    def digits(self) -> float:
        return bits_to_digits(self.bits)

    @property
    def epsilon(self) -> float:
        """Unit round-off of the backend, ``2^(1-bits)``."""
        return 2.0 ** (1 - self.bits)

    def working_precision(self) -> contextlib.AbstractContextManager:
        """Context in which the backend's arithmetic runs at its precision (restored on exit)."""
        return contextlib.nullcontext()

    def step_precision(self, t_end) -> contextlib.AbstractContextManager:
        """Context (inside :meth:`working_precision`) for one integration step that ends at time
        ``t_end``: the backend's own precision, unless it follows a schedule
        (:class:`Arb`'s ``bits_until``)."""
        return contextlib.nullcontext()

    def step_epsilon(self, t_end) -> float:
        """Unit round-off inside :meth:`step_precision` for a step ending at ``t_end``
        (:attr:`epsilon` unless the precision follows a schedule)."""
        return self.epsilon

    def scalar(self, value: Fraction | int | float | str):  # pragma: no cover - interface
        raise NotImplementedError

    def substep_times(self, t: Fraction, h: Fraction, count: int) -> list:
        """``scalar(t + m·h)`` for ``m = 1, …, count``: the exact times of a step's substeps.

        >>> Float64().substep_times(Fraction(1), Fraction(1, 4), 2)
        [1.25, 1.5]
        """
        return [self.scalar(t + m * h) for m in range(1, count + 1)]

    def from_exact(self, array) -> object:  # pragma: no cover - interface
        raise NotImplementedError

    def to_float(self, state) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def to_strings(self, state) -> list[list[str]]:
        """Every entry as a decimal string carrying the backend's digits."""
        raise NotImplementedError  # pragma: no cover - interface

    def error_norm(self, error, y0, y1, atol: float, rtol: float) -> float:
        r"""RMS of ``error / (atol + rtol·max(|y0|, |y1|))`` as a float.

        The step is accepted when this is at most 1 (the same convention as SciPy and diffrax).
        """
        e, a, b = (np.abs(self.to_float(s)) for s in (error, y0, y1))
        ratio = e / (atol + rtol * np.maximum(a, b))
        top = float(np.max(ratio)) if ratio.size else 0.0
        if top == 0.0 or not np.isfinite(top):
            return top
        return top * float(np.sqrt(np.mean((ratio / top) ** 2)))  # no overflow when squaring


class Float64(Backend):
    """IEEE double precision on NumPy arrays (53 bits, about 15.95 digits)."""

    name = "float64"
    bits = 53

    def scalar(self, value):
        return float(Fraction(value)) if isinstance(value, str) else float(value)

    def from_exact(self, array) -> np.ndarray:
        return np.vectorize(float, otypes=[float])(np.asarray(array, dtype=object))

    def to_float(self, state) -> np.ndarray:
        return np.asarray(state, dtype=float)

    def to_strings(self, state) -> list[list[str]]:
        return [[repr(float(v)) for v in row] for row in np.asarray(state)]

    def __repr__(self) -> str:
        return "Float64()"


class Arb(Backend):
    """python-flint ``arb`` balls at ``bits`` bits of working precision (midpoints kept).

    Parameters
    ----------
    bits : int, optional
        Working precision in bits. Give either ``bits`` or ``digits``.
    digits : float, optional
        Working precision in decimal digits.
    bits_until : callable ``t -> int``, optional
        A precision that grows with time: the bits an integration step ending at time ``t``
        needs (at most ``bits``, which is then the precision at the horizon and everywhere
        outside the steps: starting values, checkpoints, certificates). The integrator runs each
        step inside :meth:`step_precision`. Where what decides a run's digits grows along it
        (the scores ``e^{2 μ t}``, :mod:`verify.flow.precision_policy`), the early steps need
        fewer bits than the last.

    Examples
    --------
    >>> from flint import ctx
    >>> b = Arb(bits=200, bits_until=lambda t: 100 + int(t))
    >>> with b.working_precision(), b.step_precision(30):
    ...     ctx.prec
    130
    >>> with b.working_precision(), b.step_precision(500):   # never above bits
    ...     ctx.prec
    200
    """

    name = "arb"

    def __init__(self, bits: int | None = None, *, digits: float | None = None,
                 bits_until: Callable[[float], int] | None = None) -> None:
        if (bits is None) == (digits is None):
            raise InvalidArgument("Give exactly one of bits=... or digits=... for Arb().")
        if digits is not None:
            bits = digits_to_bits(digits)
        if not isinstance(bits, int) or bits < 53:
            raise InvalidArgument(f"Arb(bits={bits!r}) needs an integer bits >= 53.")
        self.bits = bits
        self.bits_until = bits_until

    def working_precision(self) -> contextlib.AbstractContextManager:
        return working_precision(self.bits)

    def step_precision(self, t_end) -> contextlib.AbstractContextManager:
        if self.bits_until is None:
            return contextlib.nullcontext()
        return working_precision(self._step_bits(t_end))

    def step_epsilon(self, t_end) -> float:
        return self.epsilon if self.bits_until is None else 2.0 ** (1 - self._step_bits(t_end))

    def _step_bits(self, t_end) -> int:
        return max(53, min(self.bits, int(self.bits_until(float(t_end)))))

    def scalar(self, value):
        if isinstance(value, float):
            return arb(value)
        q = value if type(value) is Fraction else Fraction(value)
        return arb(fmpq(q.numerator, q.denominator))

    def substep_times(self, t: Fraction, h: Fraction, count: int) -> list:
        """The same balls as :meth:`Backend.substep_times`, from FLINT's exact rationals (no
        Python ``Fraction`` arithmetic per substep)."""
        start, step = fmpq(t.numerator, t.denominator), fmpq(h.numerator, h.denominator)
        return [arb(start + m * step) for m in range(1, count + 1)]

    def from_exact(self, array):
        array = np.asarray(array, dtype=object)
        if array.ndim == 1:
            array = array[:, None]
        rows, cols = array.shape
        return arb_mat(rows, cols, [self.scalar(v) for v in array.flat])

    def from_float(self, array: np.ndarray):
        array = np.atleast_2d(np.asarray(array, dtype=float))
        rows, cols = array.shape
        return arb_mat(rows, cols, [arb(float(v)) for v in array.flat])

    def midpoint(self, state):
        """The state with every radius set to zero."""
        return state.mid()

    def to_float(self, state) -> np.ndarray:
        """The midpoints as float64 (``float`` of a ball is its midpoint, rounded to nearest)."""
        rows, cols = state.nrows(), state.ncols()
        return np.fromiter(map(float, state.entries()), dtype=float,
                           count=rows * cols).reshape(rows, cols)

    def to_strings(self, state) -> list[list[str]]:
        digits = int(self.digits) + 2
        cols = state.ncols()
        flat = [v.mid().str(digits, radius=False) for v in state.entries()]
        return [flat[i:i + cols] for i in range(0, len(flat), cols)]

    def __repr__(self) -> str:
        return f"Arb(bits={self.bits})"
