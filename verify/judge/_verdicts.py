r"""Verdicts: per instance and per claim, and the rules that produce them (design.md, "Verdicts"
and "Basis and grades").

Per instance (:class:`InstanceVerdict`): ``holds``, ``violated``, ``inconclusive`` (the numerics
could not decide; the reason says why), ``out-of-scope`` (a hypothesis is not met; never
counted as support) or ``error`` (the instance could not be judged because its input is wrong:
a formula of the wrong shape, a hypothesis that divides by zero, values the code cannot take;
the reason names the problem, and ``verify run``/``check`` exit non-zero).  A check reduces
its comparison to a signed **margin** (positive: the claim is satisfied with that much room),
the numerical **error** of that margin and the **basis** the decision rests on
(:class:`Basis`: exact, enclosure, certificate, estimate, fit, evidence):

* an *estimate* (a run against its reference run) is not a bound until its coverage is measured:
  it is multiplied by the safety factor :data:`~verify.numerics.ESTIMATE_SAFETY` (κ, measured by
  ``benchmarks/error_coverage.py``) before it is compared, and so is an error on the *evidence*
  basis; an enclosure or a certificate gives a bound, a fit a coverage interval, both used as
  they are; an *exact* decision has error 0;
* ``holds`` only when ``margin > error`` (the bound just described, stored as ``error``);
* ``violated`` only when ``-margin > error``;
* otherwise ``inconclusive``.

With ``error == 0`` the sign of the margin decides; a margin of exactly 0 holds for a non-strict
and violates a strict inequality. The word "exact" appears in a reason only on the *exact*
basis.

Per claim (:class:`ClaimVerdict`, :func:`verify.claim.judge_claim`):

* **refuted** iff some violation on a **rigorous** basis (exact, enclosure, certificate) survived
  re-checking at higher precision and a longer horizon (``InstanceResult.rechecked["verdict"] ==
  "violated"``); a violation on a weaker basis is reported as *violated (estimate)*, *violated
  (fit)* or *violated (evidence)* and makes its instance inconclusive, as does a violation not
  re-checked or one that disappears when re-checked;
* **supported** iff at least one instance is in scope and every in-scope instance holds; the
  text is "supported on N instances", or "supported by evidence on N instances" for a
  conjecture or an open problem; never "proved";
* **inconclusive** otherwise, with the reason (e.g. all instances out of scope).

Examples
--------
>>> r = judge_comparison(0.9, 1, 1e-12, relation="<=", instance="f#0", family="f",
...                      what="|x(T)| <= 1", basis="estimate")
>>> r.verdict.value, r.label
('holds', 'holds (estimate)')
>>> r.reason
'|x(T)| <= 1 holds with margin 0.100 > κ·error estimate 4.0×10⁻¹² (κ = 4; basis: estimate).'
>>> from types import SimpleNamespace
>>> from verify.claim import judge_claim
>>> claim = SimpleNamespace(id="polytope", kind="theorem", expected="holds")
>>> judge_claim(claim, [r]).text
'supported on 1 instance'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction

from verify.analysis.evidence import Basis
from verify.digits import exact, versus
from verify.errors import InvalidArgument
from verify.exact.plain import plain_float, to_plain
from verify.numerics._coverage import ESTIMATE_SAFETY, estimate_bound

__all__ = ["InstanceVerdict", "ClaimVerdict", "InstanceResult", "EVIDENCE_KINDS", "judge_instance",
           "judge_comparison", "recheck_record", "effective_verdict"]

EVIDENCE_KINDS = ("conjecture", "open-problem")  # kinds that can only gather evidence
_RELATIONS = ("<=", "<", ">=", ">", "==")
_FORBIDDEN = ("proved", "proven")


class InstanceVerdict(StrEnum):
    """Outcome on one instance."""

    HOLDS = "holds"
    VIOLATED = "violated"
    INCONCLUSIVE = "inconclusive"
    OUT_OF_SCOPE = "out-of-scope"
    ERROR = "error"


class ClaimVerdict(StrEnum):
    """Outcome of a claim over its instances."""

    SUPPORTED = "supported"
    REFUTED = "refuted"
    INCONCLUSIVE = "inconclusive"


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


@dataclass(frozen=True)
class InstanceResult:
    """The verdict of one claim on one instance, with its evidence.

    Attributes
    ----------
    instance, family : str
        Instance name (``"<family>#<k>"``) and family name.
    seed : int or None
        The seed the instance was drawn with (``None`` for explicit families).
    verdict : InstanceVerdict
    reason : str
        One sentence: why this verdict.
    evidence : dict
        Plain JSON-able values (numbers with their error bars); normalised by ``to_plain``.
    margin, error : float or None
        The signed margin (positive: satisfied) and the error it was compared with: for an
        estimate (or evidence) the estimate times the safety factor κ (the raw estimate and κ
        are in ``evidence``), for an enclosure or a certificate its bound, for a fit its
        coverage interval, 0 for an exact decision.
    rechecked : dict or None
        For a violation: the re-run at higher precision and a longer horizon, as built by
        :func:`recheck_record` (keys ``verdict``, ``reason``, ``precision``, ``horizon``,
        ``margin``, ``error``).
    counterexample : str or None
        Path of the instance file that reproduces a confirmed violation.
    unit : str
        What ``margin`` and ``error`` measure ("Euclidean distance in z", "rate (1/time)",
        "tokens", ...): both are always in this one unit.
    certificate : dict or None
        For a violation of a statement about ``t → ∞``: why the observed end will not change
        (``{"kind": ..., "statement": ...}``, see :mod:`verify.judge`); ``None`` otherwise.
    basis : Basis or None
        What the decision rests on (:class:`Basis`); ``None`` where there is no decision (an
        undecided or out-of-scope instance). A violation refutes only on a rigorous basis.

    Raises
    ------
    InvalidArgument
        If the verdict contradicts the margin (``holds`` with ``margin < error``, ``violated``
        with ``margin > -error``), the error is negative, or ``rechecked`` has no verdict.
    """

    instance: str
    family: str
    seed: int | None
    verdict: InstanceVerdict
    reason: str
    evidence: dict = field(default_factory=dict)
    margin: float | None = None
    error: float | None = None
    rechecked: dict | None = None
    counterexample: str | None = None
    unit: str = ""
    certificate: dict | None = None
    basis: Basis | None = None

    def __post_init__(self) -> None:
        try:
            verdict = InstanceVerdict(self.verdict)
        except ValueError:
            raise InvalidArgument(f"verdict={self.verdict!r} must be one of "
                                  f"{', '.join(v.value for v in InstanceVerdict)}.") from None
        object.__setattr__(self, "verdict", verdict)
        if self.basis is not None:
            try:
                object.__setattr__(self, "basis", Basis(self.basis))
            except ValueError:
                raise InvalidArgument(f"basis={self.basis!r} must be one of "
                                      f"{', '.join(b.value for b in Basis)}.") from None
        object.__setattr__(self, "evidence", to_plain(dict(self.evidence)))
        for name in ("margin", "error"):
            value = getattr(self, name)
            object.__setattr__(self, name, plain_float(value))
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise InvalidArgument(f"{self.instance}: reason={self.reason!r} must be a sentence "
                                  "saying why the verdict is what it is.")
        m, e = self.margin, self.error
        if e is not None and e < 0:
            raise InvalidArgument(f"{self.instance}: error={e} must be ≥ 0 (an error estimate).")
        if _finite(m) and _finite(e):
            if verdict is InstanceVerdict.HOLDS and m < e:
                raise InvalidArgument(f"{self.instance}: verdict 'holds' with margin {m:.3g} < "
                                      f"error {e:.3g}; holds needs the margin to exceed the error.")
            if verdict is InstanceVerdict.VIOLATED and m > -e:
                raise InvalidArgument(f"{self.instance}: verdict 'violated' with margin {m:.3g} >"
                                      f" -error {-e:.3g}; a violation must exceed the error.")
        if self.rechecked is not None:
            rechecked = to_plain(dict(self.rechecked))
            if rechecked.get("verdict") not in [v.value for v in InstanceVerdict]:
                raise InvalidArgument(f"{self.instance}: rechecked={rechecked!r} needs a "
                                      "'verdict'; build it with recheck_record().")
            object.__setattr__(self, "rechecked", rechecked)
        if self.certificate is not None:
            certificate = to_plain(dict(self.certificate))
            if not certificate.get("kind") or not certificate.get("statement"):
                raise InvalidArgument(f"{self.instance}: certificate={certificate!r} needs a "
                                      "'kind' and a 'statement'.")
            object.__setattr__(self, "certificate", certificate)

    @property
    def label(self) -> str:
        """The verdict with its basis: "holds (estimate)", "violated (evidence)", "holds
        (exact)"; the bare verdict where there is no decision."""
        if self.basis is None or self.verdict not in (InstanceVerdict.HOLDS,
                                                      InstanceVerdict.VIOLATED):
            return self.verdict.value
        return f"{self.verdict.value} ({self.basis.value})"

    @property
    def rigorous_violation(self) -> bool:
        """A violation on a rigorous basis (exact, enclosure, certificate): the only kind that
        can refute a claim, and so the only kind that is re-checked at higher precision and a
        longer horizon (:func:`effective_verdict`)."""
        return self.verdict is InstanceVerdict.VIOLATED and self.basis is not None \
            and self.basis.rigorous

    @property
    def weak_violation(self) -> bool:
        """A violation on a basis that cannot refute (estimate, fit, evidence, or none stated):
        reported as *violated (basis)*, counted as inconclusive (:func:`effective_verdict`)."""
        return self.verdict is InstanceVerdict.VIOLATED and not self.rigorous_violation

    def to_json(self) -> dict:
        """A plain dict (JSON-able); :meth:`from_json` reads it back."""
        return {"instance": self.instance, "family": self.family, "seed": self.seed,
                "verdict": self.verdict.value, "reason": self.reason, "evidence": self.evidence,
                "margin": to_plain(self.margin), "error": to_plain(self.error),
                "rechecked": self.rechecked, "counterexample": self.counterexample,
                "unit": self.unit, "certificate": self.certificate,
                "basis": self.basis.value if self.basis is not None else None}

    @classmethod
    def from_json(cls, data: dict) -> InstanceResult:
        """Inverse of :meth:`to_json`."""
        return cls(**data)


def _number(value: object, name: str):
    if isinstance(value, Decimal):
        value = Fraction(value)
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        try:
            return float(value)  # numpy scalars
        except (TypeError, ValueError):
            raise InvalidArgument(f"{name}={value!r} ({type(value).__name__}) must be a real "
                                  "number.") from None
    return value


def _g(x) -> str:
    """An exact margin as it is (``5/4``), a float without error estimate to 6 digits."""
    return exact(x if isinstance(x, (int, Fraction)) else float(x))


def _error_text(basis: Basis, bound: str) -> str:
    """How the error a margin was compared with is named in a reason, with its basis."""
    if basis.estimated:
        return f"κ·error estimate {bound} (κ = {ESTIMATE_SAFETY:g}; basis: {basis.value})"
    if basis is Basis.FIT:
        return f"the fit's coverage interval {bound} (basis: fit)"
    return f"the rigorous error bound {bound} (basis: {basis.value})"


def judge_instance(margin: object, error: object, *, instance: str, family: str,
                   basis: Basis | str, seed: int | None = None,
                   what: str = "the claimed inequality", strict: bool = True,
                   evidence: dict | None = None, unit: str = "",
                   certificate: dict | None = None) -> InstanceResult:
    """Turn a signed margin, its error and its basis into an :class:`InstanceResult`.

    Parameters
    ----------
    margin : real number
        Positive when the claim is satisfied (e.g. ``bound - observed``); NaN gives
        ``inconclusive``.
    error : real number ≥ 0
        The error of ``margin``: an estimate (basis estimate or evidence: multiplied by κ =
        :data:`~verify.numerics.ESTIMATE_SAFETY` before the comparison), a rigorous bound
        (enclosure, certificate), a coverage interval (fit), or 0 (exact). NaN or inf:
        unknown, so never ``holds``.
    instance, family, seed : identify the instance.
    basis : Basis or str
        What the decision rests on (:class:`Basis`). ``"exact"`` requires ``error == 0``.
    what : str
        The statement checked, used in the reason ("|x_i(t)| <= R").
    strict : bool
        Whether the claim needs ``margin > 0`` (True) or only ``margin >= 0``; matters only
        when ``error == 0``.
    evidence : dict, optional
        Extra evidence; ``margin`` and ``error`` are added (with the raw ``error_estimate`` and
        ``safety_factor`` κ when κ was applied).
    unit : str
        What the margin and the error measure.
    certificate : dict, optional
        The argument the decision rests on, for a statement about ``t → ∞`` (kept on any
        verdict).

    Returns
    -------
    InstanceResult

    Raises
    ------
    InvalidArgument
        A negative error, an unknown basis, or a nonzero error on the exact basis.

    Examples
    --------
    >>> judge_instance(1e-13, 1e-12, instance="f#0", family="f", basis="estimate").label
    'inconclusive'
    >>> judge_instance(Fraction(0), 0, instance="f#0", family="f", strict=False,
    ...                basis="exact").reason
    'the claimed inequality holds exactly (margin 0, exact arithmetic).'
    >>> judge_instance(2, 0, instance="f#0", family="f", basis="estimate", unit="tokens").reason
    'the claimed inequality holds with margin 2 (error 0; basis: estimate).'
    """
    m, e = _number(margin, "margin"), _number(error, "error")
    if e < 0:
        raise InvalidArgument(f"error={e} must be ≥ 0: it is an error estimate.")
    try:
        basis = Basis(basis)
    except ValueError:
        raise InvalidArgument(f"basis={basis!r} must be one of "
                              f"{', '.join(b.value for b in Basis)}.") from None
    if basis is Basis.EXACT and e != 0:
        raise InvalidArgument(f"basis 'exact' with error={e}: an exact decision has error 0; "
                              "name the basis the error comes from.")
    bound = estimate_bound(e) if basis.estimated and e else e
    record = dict(evidence or {}, margin=m, error=bound)
    if bound is not e:
        record.update(error_estimate=e, safety_factor=ESTIMATE_SAFETY)
    base = {"instance": instance, "family": family, "seed": seed, "evidence": record,
            "unit": unit, "certificate": certificate}
    if isinstance(m, float) and math.isnan(m):
        return InstanceResult(verdict=InstanceVerdict.INCONCLUSIVE, reason=f"{what} could not be "
                              "evaluated: the observed quantity is not a number.", margin=m,
                              error=bound, **base)
    if isinstance(bound, float) and not math.isfinite(bound):
        return InstanceResult(verdict=InstanceVerdict.INCONCLUSIVE, reason=f"{what} is undecided:"
                              f" no finite error estimate (margin {_g(m)}).", margin=m,
                              error=bound, **base)
    if bound == 0:
        ok = m > 0 or (m == 0 and not strict)
        verdict = InstanceVerdict.HOLDS if ok else InstanceVerdict.VIOLATED
        if basis is Basis.EXACT:
            text = "holds exactly" if ok else "is violated exactly"
            reason = f"{what} {text} (margin {_g(m)}, exact arithmetic)."
        else:
            text = "holds with margin" if ok else "is violated by"
            reason = (f"{what} {text} {_g(m if ok else -m)} (error 0; basis: "
                      f"{basis.value}).")
        return InstanceResult(verdict=verdict, reason=reason, margin=m, error=0.0, basis=basis,
                              **base)
    shown, bound_text = versus(m, bound)  # the digits that show the comparison, and no more
    said = _error_text(basis, bound_text)
    if m > bound:
        return InstanceResult(verdict=InstanceVerdict.HOLDS, reason=f"{what} holds with margin "
                              f"{shown} > {said}.", margin=m, error=bound, basis=basis, **base)
    if -m > bound:
        return InstanceResult(verdict=InstanceVerdict.VIOLATED, reason=f"{what} is violated by "
                              f"{versus(-m, bound)[0]}, more than {said}.", margin=m,
                              error=bound, basis=basis, **base)
    return InstanceResult(verdict=InstanceVerdict.INCONCLUSIVE, reason=f"{what} is undecided: "
                          f"the margin {shown} is within {said}; raise the precision (or the "
                          "horizon).", margin=m, error=bound, **base)


def judge_comparison(observed: object, predicted: object, error: object, *, relation: str,
                     instance: str, family: str, basis: Basis | str, seed: int | None = None,
                     what: str | None = None, evidence: dict | None = None) -> InstanceResult:
    """Judge ``observed <relation> predicted`` given the error estimate of the difference.

    ``relation`` is ``"<="``, ``"<"``, ``">="``, ``">"`` or ``"=="``; the margin is
    ``predicted - observed`` for ``<=``/``<``, ``observed - predicted`` for ``>=``/``>`` and
    ``-|observed - predicted|`` for ``==``, so an equality can hold only exactly (``error == 0``)
    and is violated when the difference exceeds the error.  Exact inputs (int, Fraction,
    Decimal) give an exact margin; ``basis`` says what the decision rests on
    (:func:`judge_instance`).

    Examples
    --------
    >>> judge_comparison(Fraction(5, 4), 1, 0, relation="<=", instance="b#0", family="b",
    ...                  what="r_2(0) <= C", basis="exact").label
    'violated (exact)'
    """
    if relation not in _RELATIONS:
        raise InvalidArgument(f"relation={relation!r} must be one of {', '.join(_RELATIONS)}.")
    o, p = _number(observed, "observed"), _number(predicted, "predicted")
    margin = p - o if relation in ("<=", "<") else o - p if relation in (">=", ">") \
        else -abs(o - p)
    record = dict(evidence or {}, observed=o, predicted=p, relation=relation)
    return judge_instance(margin, error, instance=instance, family=family, seed=seed,
                          what=what or f"observed {relation} predicted", basis=basis,
                          strict=relation in ("<", ">"), evidence=record)


def recheck_record(rerun: InstanceResult, *, precision: object, horizon: object) -> dict:
    """The ``rechecked`` dict of a violation, from its re-run at ``precision`` and ``horizon``
    (with the re-run's evidence: the data of the saved counterexample, which reports draw)."""
    return to_plain({"verdict": rerun.verdict.value, "reason": rerun.reason,
                     "precision": precision, "horizon": horizon, "margin": rerun.margin,
                     "error": rerun.error, "evidence": rerun.evidence})


def effective_verdict(result: InstanceResult) -> tuple[InstanceVerdict, str]:
    """The verdict that counts for the claim: a violation counts only if it rests on a rigorous
    basis (exact, enclosure, certificate) and its re-check (higher precision, longer horizon)
    is also a violation; otherwise the instance is inconclusive, and a violation on a weaker
    basis says so: "violated (estimate)", "violated (fit)", "violated (evidence)"."""
    if result.verdict is not InstanceVerdict.VIOLATED:
        return result.verdict, result.reason
    if result.weak_violation:
        basis = result.basis or Basis.EVIDENCE
        return InstanceVerdict.INCONCLUSIVE, (
            f"violated ({basis.value}): {result.reason} — a violation on the {basis.value} "
            "basis is evidence, not a refutation (a claim is refuted only on an exact, "
            "enclosure or certificate basis).")
    if result.rechecked is None:
        return InstanceVerdict.INCONCLUSIVE, (f"violation not yet re-checked at higher precision "
                                              f"and a longer horizon: {result.reason}")
    if result.rechecked["verdict"] != InstanceVerdict.VIOLATED.value:
        return InstanceVerdict.INCONCLUSIVE, (
            f"a violation at first ({result.reason}) disappeared when re-checked at precision "
            f"{result.rechecked.get('precision')} and horizon {result.rechecked.get('horizon')}"
            f" ({result.rechecked['verdict']}: {result.rechecked.get('reason', '')}).")
    return InstanceVerdict.VIOLATED, result.reason
