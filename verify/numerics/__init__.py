"""Numerics: arithmetic backends, integrators with error control, precision choice.

* :class:`Float64` and :class:`Arb` — the two arithmetic backends behind one interface;
* :func:`integrate_extrapolation` with :class:`GraggBulirschStoer` — adaptive extrapolation with
  exact rational coefficients, in any precision (SciPy's DOP853 is the float64 fast path, used
  by :func:`verify.flow.simulate.simulate`);
* :func:`fit_line`, :func:`fit_power_law`, :func:`fit_doubly_exponential` — weighted line fits
  with error bars (used by :mod:`verify.analysis.observed_limits`);
* :func:`ulps` and the named counts (:data:`STORED_ULPS`, ...) — the rounding allowances of
  float64 numbers, each defined once (:mod:`verify.numerics._rounding`).
"""

from verify.numerics._backends import Arb, Backend, Float64, bits_to_digits, digits_to_bits
from verify.numerics._coverage import ESTIMATE_SAFETY, KINKED_FIELD_COVERAGE, estimate_bound
from verify.numerics._extrapolation import (
    GraggBulirschStoer,
    IntegrationResult,
    integrate_extrapolation,
    reachable_rtol,
)
from verify.numerics._fits import LineFit, fit_doubly_exponential, fit_line, fit_power_law
from verify.numerics._rounding import (
    CONVERSION_ULPS,
    DIFFERENCE_ULPS,
    EPS,
    HULL_ULPS,
    NORMALISED_ULPS,
    RESOLUTION_ULPS,
    STORED_ULPS,
    SUM_ULPS,
    SVD_ULPS,
    ulps,
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
    "reachable_rtol",
    "LineFit",
    "fit_line",
    "fit_power_law",
    "fit_doubly_exponential",
    "ESTIMATE_SAFETY",
    "KINKED_FIELD_COVERAGE",
    "estimate_bound",
    "EPS",
    "ulps",
    "CONVERSION_ULPS",
    "STORED_ULPS",
    "DIFFERENCE_ULPS",
    "NORMALISED_ULPS",
    "HULL_ULPS",
    "SVD_ULPS",
    "SUM_ULPS",
    "RESOLUTION_ULPS",
]
