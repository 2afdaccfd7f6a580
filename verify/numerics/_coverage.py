r"""The safety factor that turns an error *estimate* into the bound a decision may use.

An error estimate (the distance of a run to its reference run at tighter tolerance and higher
precision, ``Trajectory.error`` and every quantity's ``|q(run) − q(reference)|``) is not a bound
until its coverage is measured. ``benchmarks/error_coverage.py`` measures it on 200+ public
instances across the model family, float64 and ``arb``, against an independent route at twice
the digits, and prints the distribution of true error / estimate per variant (the table is in
``benchmarks/README.md``). :data:`ESTIMATE_SAFETY` is the worst ratio observed there times a
margin of 2, rounded up; every decision that rests on an estimate requires
``margin > ESTIMATE_SAFETY · error`` (:func:`verify.claim.judge_instance`), and the certified
hardmax graph certifies a score difference only beyond ``ESTIMATE_SAFETY`` times its estimated
error (:meth:`verify.flow.trajectory.Trajectory.score_radius`). Both go through
:func:`estimate_bound`, the one place the factor is applied.

Examples
--------
>>> estimate_bound(1e-12) == ESTIMATE_SAFETY * 1e-12
True
"""

from __future__ import annotations

__all__ = ["ESTIMATE_SAFETY", "estimate_bound", "KINKED_FIELD_COVERAGE"]

#: κ: worst true/estimated error ratio of ``benchmarks/error_coverage.py`` (1.85, on 207
#: instances: the scaled scores of a post-LN float64 run) × 2, rounded up.
ESTIMATE_SAFETY = 4.0

#: Why no estimate of a run whose field has kinks (:attr:`verify.model.Model.field_has_kinks`,
#: an MLP with ReLU) has a measured coverage — measured in session 9 (``error_coverage.py --set
#: growth``); the judges decide nothing on it and ``verify simulate`` says so.
KINKED_FIELD_COVERAGE = (
    "its arb Gragg–Bulirsch–Stoer reference extrapolates across the kinks, where its error "
    "expansion does not hold (on ReLU draws, runs at 32, 48 and 64 digits and a float64 run at "
    "rtol 1e-13 disagree by 1–3e-8 while the estimates say ~1e-10, ~100× beyond the safety "
    "factor κ = 4; on mlp relu-random-w#1 the estimate is 0.022 against a true error of 6.9e-9)")


def estimate_bound(error):
    """The bound an error estimate stands for: ``ESTIMATE_SAFETY · error`` (any array shape)."""
    return ESTIMATE_SAFETY * error
