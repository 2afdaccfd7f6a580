"""Numerics: arithmetic backends, integrators with error control, precision choice.

* :class:`Float64` and :class:`Arb` — the two arithmetic backends behind one interface;
* :func:`integrate_extrapolation` with :class:`GraggBulirschStoer` — adaptive extrapolation with
  exact rational coefficients, in any precision (SciPy's DOP853 is the float64 fast path, used
  by :func:`verify.simulate.simulate`).
"""

from verify.numerics._backends import Arb, Backend, Float64, bits_to_digits, digits_to_bits
from verify.numerics._extrapolation import (
    GraggBulirschStoer,
    IntegrationResult,
    integrate_extrapolation,
)

__all__ = [
    "Backend",
    "Float64",
    "Arb",
    "digits_to_bits",
    "bits_to_digits",
    "GraggBulirschStoer",
    "IntegrationResult",
    "integrate_extrapolation",
]
