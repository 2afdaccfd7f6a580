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
           "TWIN_GROWTH_LIMIT", "score_growth_rate", "rescaled_growth_rate", "score_scale",
           "choose_bits", "working_bits", "bits_schedule", "reference_settings",
           "float64_reference_suffices"]

DEFAULT_DIGITS = 20
GUARD_BITS = 32  # round-off of the integrator itself (GBS: lebesgue(30) ≈ 2^22), with a margin
ARB_REFERENCE_LIMIT = 20_000  # n·n·d above which a float64 run is checked in float64 only
REFERENCE_EXTRA_BITS = 16  # an arb reference has at least this many bits more than its run
#: the largest tolerance of the arb reference of a float64 run. Its extrapolation steps were
#: fooled by a sharp switch of the attention (a leader change within ~1e-4 of time: a step ending
#: inside it was accepted at row k - 1 on one tableau estimate of 0.59 tolerances, local error
#: 1e11 tolerances), and the reference was then as wrong as the run: error_coverage.py --set
#: growth #48 missed the true score error 10.9x. Mended in the step acceptance (row k - 2 within
#: the tolerance too; numerics/_extrapolation.py, tests/test_roundoff.py), not by the tolerance:
#: 1e-16 was measured (worst true/estimate 1.30 -> 1.01 on the paper draws, +10 % reference
#: evaluations; 10.9 -> 1.02 on the longest, +23 %), but the failure only moved (#48's reference
#: then 2e-7 off, #36's 2e-5 at both) and codimension random-3d#0 (nu*T = 27) went holds ->
#: inconclusive (its estimate 153 -> 9e21).
ARB_REFERENCE_RTOL = 1e-15
TWIN_GROWTH_LIMIT = 3.0  # ν·T up to which a rescaled float64 run gets the float64 reference


def score_growth_rate(model: Model) -> float:
    """``μ ≥ 0`` such that the scores grow at most like ``e^{2 μ t}``.

    ``max(0, max Re λ(V))`` over the heads when the attention reads the tokens themselves (forms
    ``z``, ``x`` and ``discrete`` without normalisation); ``0`` when it reads unit vectors
    (``normalisation="sphere"`` or ``"pre-ln"``), whatever ``V``.
    """
    if model.bounded_scores:
        return 0.0
    return max(0.0, *(float(np.max(real)) for real in _eigenvalues_real_parts(model)))


def _eigenvalues_real_parts(model: Model) -> list[np.ndarray]:
    """``Re λ(V_h)`` for each head ``h`` (float64 eigenvalues: the growth rates only size the
    precision and pick the reference's route)."""
    return [np.linalg.eigvals(as_float_array(h.V)).real for h in model.heads]


def rescaled_growth_rate(model: Model) -> float:
    """``ν ≥ 0`` such that the rescaled tokens ``z = e^{-tV} x`` grow at most like ``e^{ν t}``
    along the contracting directions of ``V``: ``max(0, −min Re λ(V))`` over the heads for the
    rescaled form (``form="z"``), ``0`` for every other form (their state is what the attention
    reads).

    The scores read ``Ẽ(t) z`` and see those directions shrunk by ``e^{tV}``; an error added
    uniformly to every entry of ``z`` (the reference's tolerance ``rtol·max|z|``, the field's
    round-off at the size of ``z``) is read through ``Ẽ(t)`` at the size of its largest
    entries: ``e^{ν T}`` times what the scores can see.

    >>> from verify.model import Model
    >>> rescaled_growth_rate(Model(V=[[1, 0], [0, -2]])), rescaled_growth_rate(Model(V=[[1]]))
    (2.0, 0.0)
    >>> rescaled_growth_rate(Model(V=[[1, 0], [0, -2]], form="x"))
    0.0
    """
    if not model.rescaled:
        return 0.0
    return max(0.0, *(-float(np.min(real)) for real in _eigenvalues_real_parts(model)))


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
    :func:`float64_reference_suffices` (systems too large for ``arb`` to be quick, and one head
    in continuous time without an MLP whose scores stay bounded or whose rescaled tokens grow by
    at most ``e^3``). ``arb`` runs are checked at ``rtol`` to the power 1.25
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
    >>> reference_settings(Float64(), 1e-10, Instance(Model(V=[[-1]]), [[1], [2]]), 10.0)[0].name
    'arb'
    >>> ref, ref_rtol = reference_settings(Arb(bits=working_bits(circle, 10.0)), 1e-21, circle,
    ...                                    10.0)
    >>> working_bits(circle, 10.0), ref.bits, f"{ref_rtol:.2g}"
    (99, 120, '5.6e-27')
    """
    floor = working_bits(instance, horizon)
    if isinstance(backend, Float64):
        if float64_reference_suffices(instance, horizon):
            return Float64(), max(rtol * 1e-3, 3e-14)
        return Arb(bits=floor, bits_until=bits_schedule(instance)), min(rtol * 1e-3,
                                                                         ARB_REFERENCE_RTOL)
    ref_rtol = rtol ** 1.25
    bits = working_bits(instance, horizon, digits=-math.log10(ref_rtol))
    return Arb(bits=max(bits, backend.bits + REFERENCE_EXTRA_BITS)), ref_rtol


def float64_reference_suffices(instance: Instance, horizon: float) -> bool:
    """Is a float64 run up to ``horizon`` checked against a float64 reference (plus the ``arb``
    spot check of the field's round-off, :mod:`verify.flow.roundoff`, and a start a few ulps
    away from the run's, :func:`verify.flow.simulate.float64_twin`) rather than an ``arb`` one?

    * ``n²d`` above :data:`ARB_REFERENCE_LIMIT`: ``arb`` is not quick there;
    * otherwise one head of a continuous-time model without an MLP (not discrete layers: their
      float64 recursion has no tolerance to tighten, so a float64 reference would repeat it; not
      several heads: the spot check's score perturbation reads head 0; not an MLP: its coverage
      is not measured — with ReLU, runs at 32, 48 and 64 digits and float64 at ``1e-13``
      disagree among themselves by ~1e-8 across its kinks, so no truth is known there), and
      either
    * scores that stay bounded (:attr:`~verify.model.Model.bounded_scores`: the attention reads
      unit vectors): the score differences that decide the attention keep their float64 digits
      all along, since ``|S| ≤ β‖QᵀK‖₂`` never grows (what a float64 reference cannot see, the
      round-off of the field at the run's states, is what the spot check measures), or
    * scores that grow, while the rescaled tokens grow by at most ``e^{ν T} ≤ e^3 ≈ 20``
      (``ν`` = :func:`rescaled_growth_rate`, :data:`TWIN_GROWTH_LIMIT` = 3). What both float64
      runs share where the scores grow — the cancellation in score differences formed in
      float64 — is what the spot check measures (those scores against ``arb`` at the run's
      states); what the route cannot do is read an error added uniformly to ``z`` through
      ``Ẽ(t)`` without inflating it by ``e^{ν T}`` (see :func:`rescaled_growth_rate`).

    Measured (``benchmarks/error_coverage.py --reference arb,float64``, session 9), both routes
    against one truth at twice the digits: on 150 float64 draws whose scores grow (``z``,
    ``z long``, ``x``, causal, ``n`` up to 32; ``μT`` up to 12, 35 bits of growth) the float64
    route's worst true/estimate is 1.77 (state) and 1.73 (scores), the ``arb`` route's 1.04 and
    1.30; on 89 longer ones (``--set growth`` without its MLP: ``μT`` up to 24) 2.06 and 1.78,
    the ``arb`` route's 3.66 and 10.9. Its estimate is within 1.4 of the ``arb`` route's wherever
    ``ν T ≤ 3.8``; beyond, the scores' estimate is inflated ×4, ×133, ×981 (``ν T`` = 4.5, 7.9,
    8.6), and in the paper suite the margins' ×6–192 at ``ν T`` = 4.5–7.5, ×10³–10⁴ at 12 and
    10³⁰ at 27 (codimension's random ``V``, where the float64 field keeps no digit). ``ν T ≤ 3``
    keeps the ``arb`` reference there.

    >>> from verify.model import Model, Instance
    >>> grows = Instance(Model(V=[[1, 0], [0, -1]]), [[1, 0], [0, 1]])
    >>> float64_reference_suffices(grows, 3.0), float64_reference_suffices(grows, 4.0)
    (True, False)
    >>> heads = Model(heads=[{"V": [[1]]}, {"V": [[2]]}], form="x")
    >>> float64_reference_suffices(Instance(heads, [[1], [2]]), 1.0)
    False
    """
    model = instance.model
    if instance.n ** 2 * instance.d > ARB_REFERENCE_LIMIT:
        return True
    if not model.single_head or model.discrete or model.has_mlp:
        return False
    return model.bounded_scores or rescaled_growth_rate(model) * horizon <= TWIN_GROWTH_LIMIT
