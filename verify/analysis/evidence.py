r"""Small plain evidence: rounded numbers and the report's convergence figure.

Evidence is JSON (no NaN): numbers are rounded to 6 significant digits (:func:`sig6`,
:func:`plain6`) and a figure keeps at most :data:`FIGURE_POINTS` checkpoints
(:func:`figure_convergence`, the ``"convergence"`` entry of ``evidence["figure"]`` read by
:mod:`verify.report`).

Examples
--------
>>> sig6(1 / 3), plain6(float("inf"))
(0.333333, None)
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np

__all__ = ["sig6", "plain6", "FIGURE_POINTS", "figure_convergence", "Basis"]


def sig6(x) -> float:
    """``x`` rounded to 6 significant digits (for evidence)."""
    return float(f"{float(x):.6g}")


FIGURE_POINTS = 50  # at most this many checkpoints in a figure's evidence


def plain6(x) -> float | None:
    """6 significant digits, ``None`` for NaN/inf (the evidence is JSON without NaN)."""
    x = float(x)
    return sig6(x) if np.isfinite(x) else None


def figure_convergence(t, distances, errors, rate: float, tail_start: float,
                       label: str) -> dict:
    r"""The ``"convergence"`` entry of ``evidence["figure"]`` from numbers already computed.

    Keeps at most :data:`FIGURE_POINTS` checkpoints (evenly spaced, both ends kept) with finite
    distance and error, rounded to 6 significant digits. The line is
    :math:`\log d(t) \approx \text{intercept} - \text{rate}\cdot t` with the check's own fitted
    ``rate``; only the intercept is chosen here, by least squares on the resolved points
    (distance above its error) with :math:`t \ge` ``tail_start``. No fit (``None``) when the
    rate is not finite or no tail point is resolved.

    Examples
    --------
    >>> t = np.linspace(0, 4, 9)
    >>> c = figure_convergence(t, np.exp(1 - 2 * t), np.full(9, 1e-12), 2.0, 2.0, "d")
    >>> c["fit"], len(c["times"])
    ([2.0, 1.0], 9)
    """
    t, d, e = (np.asarray(v, dtype=float) for v in (t, distances, errors))
    keep = np.flatnonzero(np.isfinite(t) & np.isfinite(d) & np.isfinite(e))
    if len(keep) > FIGURE_POINTS:
        keep = keep[np.unique(np.round(np.linspace(0, len(keep) - 1, FIGURE_POINTS)).astype(int))]
    fit = None
    tail = (t >= tail_start) & np.isfinite(d) & np.isfinite(e) & (d > e) & (d > 0)
    if np.isfinite(rate) and np.any(tail):
        intercept = float(np.mean(np.log(d[tail]) + rate * t[tail]))
        fit = [plain6(rate), plain6(intercept)]
        fit = fit if None not in fit else None
    return {"times": [plain6(x) for x in t[keep]], "distances": [plain6(x) for x in d[keep]],
            "errors": [plain6(x) for x in e[keep]], "fit": fit, "label": label}


class Basis(StrEnum):
    """What a decision rests on (design.md, "Basis and grades"), strongest first.

    * ``exact``: rational or algebraic arithmetic; the only basis printed as "exact";
    * ``enclosure``: a rigorous ball from interval/arb arithmetic (it contains the truth);
    * ``certificate``: a rigorous criterion from the theory, evaluated in balls;
    * ``estimate``: a run against an independent reference, with the safety factor measured on
      the coverage benchmark;
    * ``fit``: a trend or a regression over checkpoints;
    * ``evidence``: anything else.

    Only ``exact``, ``enclosure`` and ``certificate`` are rigorous: a claim is refuted only by
    violations on one of those.
    """

    EXACT = "exact"
    ENCLOSURE = "enclosure"
    CERTIFICATE = "certificate"
    ESTIMATE = "estimate"
    FIT = "fit"
    EVIDENCE = "evidence"

    @property
    def rigorous(self) -> bool:
        """Whether a decision on this basis is a proof (exact, enclosure or certificate)."""
        return self in (Basis.EXACT, Basis.ENCLOSURE, Basis.CERTIFICATE)

    @property
    def estimated(self) -> bool:
        """Whether the error of a decision on this basis is an estimate, compared only after the
        safety factor κ (:data:`~verify.numerics.ESTIMATE_SAFETY`): estimate and evidence."""
        return self in (Basis.ESTIMATE, Basis.EVIDENCE)

    @staticmethod
    def weakest(*bases: Basis | str | None) -> Basis:
        """The weakest of ``bases`` (a decision is as strong as its weakest input; ``None``
        counts as evidence).

        >>> Basis.weakest("exact", "estimate", Basis.CERTIFICATE).value
        'estimate'
        """
        order = list(Basis)
        return max((Basis(b) if b is not None else Basis.EVIDENCE for b in bases),
                   key=order.index, default=Basis.EVIDENCE)
