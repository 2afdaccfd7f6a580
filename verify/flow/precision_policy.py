r"""Working precision from what actually grows along a run.

The attention ``P_ij = exp(S_ij − max_l S_il) / Σ ...`` is decided by score *differences*. With
scores known to a relative accuracy ``2^{-bits}`` their absolute error is ``2^{-bits}·|S|``, and
``P`` keeps ``digits`` correct digits while

.. math:: \text{bits} \ \ge\ \text{digits}\cdot\log_2 10 + \log_2 \max_{t \le T} |S(t)|
          + \text{guard}.

``max |S(t)|`` is what grows, and it depends on the variant, not on ``T`` alone:

* rescaled (``z``) and unnormalised token (``x``) forms: ``S = <Q e^{tV} z_i, K e^{tV} z_j>``
  grows like ``e^{2 μ t}`` with ``μ`` the largest real part of an eigenvalue of ``V`` (paper spec
  §4): ``2 μ T / ln 2`` extra bits;
* post-LN (tokens on the unit sphere) and pre-LN (attention reads ``x/|x|``): the scores stay
  bounded by ``β ‖QᵀK‖₂`` for all time — the precision is **constant in T**.

In every case the size of the scores at the start, ``β ‖QᵀK‖₂ max_i |x_i(0)|²`` (``β ‖QᵀK‖₂`` when
normalised), adds its ``log₂``.

Examples
--------
>>> from verify.model import Model, Instance
>>> circle = Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere", beta=4)
>>> inst = Instance(circle, [[1, 0], [0, 1]])
>>> score_growth_rate(circle), score_scale(inst)
(0.0, 4.0)
>>> working_bits(inst, 10) == working_bits(inst, 10_000)        # nothing grows on the sphere
True
>>> rescaled = Instance(Model(V=[[1, 0], [0, 1]]), [[1, 0], [0, 1]])
>>> working_bits(rescaled, 100) - working_bits(rescaled, 10)     # 2 μ ΔT / ln 2 with μ = 1
260
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from verify.exact.inputs import as_float_array
from verify.model import Instance, Model
from verify.numerics import Arb, Backend, Float64, digits_to_bits

__all__ = ["DEFAULT_DIGITS", "GUARD_BITS", "REFERENCE_EXTRA_BITS", "ARB_REFERENCE_RTOL",
           "score_growth_rate", "score_scale", "choose_bits", "working_bits", "bits_schedule",
           "reference_settings", "float64_reference_suffices"]

DEFAULT_DIGITS = 20
GUARD_BITS = 32  # round-off of the integrator itself (GBS: lebesgue(30) ≈ 2^22), with a margin
ARB_REFERENCE_LIMIT = 20_000  # n·n·d above which a float64 run is checked in float64 only
REFERENCE_EXTRA_BITS = 16  # an arb reference has at least this many bits more than its run
ARB_REFERENCE_RTOL = 1e-15  # the largest tolerance of the arb reference of a float64 run


def score_growth_rate(model: Model) -> float:
    """``μ ≥ 0`` such that the scores grow at most like ``e^{2 μ t}``.

    ``max(0, max Re λ(V))`` over the heads when the attention reads the tokens themselves (forms
    ``z``, ``x`` and ``discrete`` without normalisation); ``0`` when it reads unit vectors
    (``normalisation="sphere"`` or ``"pre-ln"``), whatever ``V``.
    """
    if model.bounded_scores:
        return 0.0
    return max(0.0, *(float(np.max(np.linalg.eigvals(as_float_array(h.V)).real))
                      for h in model.heads))


def score_scale(instance: Instance) -> float:
    """``β max_h ‖Q_hᵀK_h‖₂ · R²``: the size of the scores at ``t = 0``, with ``R = 1`` for
    normalised tokens and ``R = max_i |x_i(0)|`` otherwise."""
    model = instance.model
    norm = max(float(np.linalg.norm(B, 2)) for _, B in model.float_heads())
    if model.bounded_scores:
        return norm
    return norm * float(np.max(np.sum(instance.x0_float() ** 2, axis=1)))


def choose_bits(mu: float, horizon: float, digits: float = DEFAULT_DIGITS, *,
                scale: float = 1.0) -> int:
    """Bits for ``digits`` correct digits when the scores grow like ``scale · e^{2 μ t}`` up to
    ``horizon``: ``digits·log₂10 + 2 max(μ, 0) T / ln 2 + log₂ max(scale, 1) + GUARD_BITS``.

    >>> choose_bits(1.0, 30.0, digits=20), choose_bits(0.0, 1e6, digits=20)
    (186, 99)
    """
    extra = 2.0 * max(mu, 0.0) * float(horizon) / math.log(2) + math.log2(max(scale, 1.0))
    return int(math.ceil(digits_to_bits(digits) + extra + GUARD_BITS))


def working_bits(instance: Instance, horizon: float, digits: float = DEFAULT_DIGITS) -> int:
    """:func:`choose_bits` for ``instance`` (its :func:`score_growth_rate` and
    :func:`score_scale`) up to ``horizon``."""
    return bits_schedule(instance, digits)(horizon)


def bits_schedule(instance: Instance, digits: float = DEFAULT_DIGITS) -> Callable[[float], int]:
    """:func:`working_bits` as the time goes on: ``t ↦ working_bits(instance, t, digits)``, the
    bits that hold the scores formed up to time ``t`` to ``digits`` digits (they are at most
    ``score_scale · e^{2 μ t}`` there), for an ``Arb(bits_until=...)`` whose early steps need
    fewer bits than its horizon.

    >>> from verify.model import Model, Instance
    >>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [[1, 0], [0, 1]])
    >>> schedule = bits_schedule(inst)
    >>> schedule(0.0), schedule(1.5), schedule(15.0) == working_bits(inst, 15.0)
    (99, 104, True)
    """
    return functools.partial(choose_bits, score_growth_rate(instance.model), digits=digits,
                             scale=score_scale(instance))


def reference_settings(backend: Backend, rtol: float, instance: Instance,
                       horizon: float) -> tuple[Backend, float]:
    """The tighter, higher-precision run used as the error estimate's reference.

    float64 runs are checked against ``arb`` at :func:`working_bits` and ``min(rtol·1e-3,
    ARB_REFERENCE_RTOL)`` (:data:`ARB_REFERENCE_RTOL` = 1e-15), each step of it at the bits
    :func:`bits_schedule` gives for the time the step reaches — the same rule, for the scores
    formed up to then: where they grow like ``e^{2 μ t}``, the steps of a transition early in
    the run need tens of bits fewer than the horizon, and FLINT's arithmetic is about twice as
    cheap at or below 128 bits as above — or against float64 at
    ``max(rtol·1e-3, 3e-14)``, the tightest tolerance DOP853 accepts, where
    :func:`float64_reference_suffices` (systems too large for ``arb`` to be quick, and runs whose
    scores stay bounded). ``arb`` runs are checked at ``rtol`` to the power 1.25
    and the bits :func:`working_bits` gives for that tolerance's digits — the rule that holds the
    run to its digits holds the reference to its tolerance, so its round-off stays below the
    run's by that power (``2^{-120}`` against ``2^{-99}`` for 20 digits on the sphere; twice the
    bits, the rule before, paid ``2^{-198}`` for no better estimate, and about half as much again
    per evaluation beyond 128 bits, where FLINT's mantissas leave the stack) — and at least
    :data:`REFERENCE_EXTRA_BITS` more than the run's (where a tolerance looser than the run's
    digits was asked for): a loss of digits the policy does not foresee costs both runs the same
    bits and still shows in their difference. The bits follow the same rule as the run:
    constant in ``T`` where the scores stay bounded.

    >>> from verify.model import Model, Instance
    >>> circle = Instance(Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere"),
    ...                   [[1, 0], [0, 1]])
    >>> reference_settings(Float64(), 1e-10, circle, 10.0)[0].name
    'float64'
    >>> reference_settings(Float64(), 1e-10, Instance(Model(V=[[1]]), [[1], [2]]), 10.0)[0].name
    'arb'
    >>> ref, ref_rtol = reference_settings(Arb(bits=working_bits(circle, 10.0)), 1e-21, circle,
    ...                                    10.0)
    >>> working_bits(circle, 10.0), ref.bits, f"{ref_rtol:.2g}"
    (99, 120, '5.6e-27')
    """
    floor = working_bits(instance, horizon)
    if isinstance(backend, Float64):
        if float64_reference_suffices(instance):
            return Float64(), max(rtol * 1e-3, 3e-14)
        return Arb(bits=floor, bits_until=bits_schedule(instance)), min(rtol * 1e-3,
                                                                         ARB_REFERENCE_RTOL)
    ref_rtol = rtol ** 1.25
    bits = working_bits(instance, horizon, digits=-math.log10(ref_rtol))
    return Arb(bits=max(bits, backend.bits + REFERENCE_EXTRA_BITS)), ref_rtol


def float64_reference_suffices(instance: Instance) -> bool:
    """Is a float64 run checked against a float64 reference (plus the ``arb`` spot check of the
    field's round-off, :mod:`verify.flow.roundoff`, and a start a few ulps away from the run's,
    :func:`verify.flow.simulate.float64_twin`) rather than an ``arb`` one?

    * ``n²d`` above :data:`ARB_REFERENCE_LIMIT`: ``arb`` is not quick there;
    * scores that stay bounded (:attr:`~verify.model.Model.bounded_scores`: the attention reads
      unit vectors) for one head of a continuous-time model: no cancellation threatens — the
      score differences that decide the attention keep their float64 digits all along, since
      ``|S| ≤ β‖QᵀK‖₂`` never grows (what a float64 reference cannot see, the round-off of the
      field at the run's states, is what the spot check measures). Not discrete layers: their
      float64 recursion has no tolerance to tighten, so a float64 reference would repeat it.

    ``benchmarks/error_coverage.py`` measures the coverage of this route (variants "sphere …",
    "pre-LN …" and "float64 reference").
    """
    model = instance.model
    if instance.n ** 2 * instance.d > ARB_REFERENCE_LIMIT:
        return True
    return model.bounded_scores and model.single_head and not model.discrete
