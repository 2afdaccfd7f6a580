"""The claim-level verdict: :class:`ClaimResult`, :func:`judge_claim`, :func:`exit_code`.

The rules are stated in :mod:`verify.judge._verdicts` (design.md, "Verdicts").

Examples
--------
>>> from types import SimpleNamespace
>>> from verify.judge._verdicts import InstanceResult
>>> claim = SimpleNamespace(id="codimension", kind="conjecture", expected="open")
>>> ok = InstanceResult("f#0", "f", 0, "holds", "three planes seen.", margin=0.5, error=1e-9,
...                     basis="estimate")
>>> judge_claim(claim, [ok]).text
'supported by evidence on 1 instance'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from verify.analysis.evidence import Basis
from verify.errors import InvalidArgument
from verify.judge._verdicts import ClaimVerdict, InstanceResult, InstanceVerdict, effective_verdict

__all__ = ["ClaimResult", "judge_claim", "exit_code", "EXIT_ERROR"]

_FORBIDDEN = ("proved", "proven")


def _instances(k: int) -> str:
    return f"{k} instance{'s' if k != 1 else ''}"


@dataclass(frozen=True)
class ClaimResult:
    """The verdict of one claim over its instances.

    Attributes
    ----------
    claim, kind, expected : str
        The claim's id, kind and what its file expects (``"holds"``, ``"fails"``, ``"open"``).
    verdict : ClaimVerdict
    reason : str
        Why, in a sentence or two (quotes the deciding instance reasons).
    text : str
        The headline: "supported on N instances", "supported by evidence on N instances",
        "refuted: k violations confirmed at higher precision", "inconclusive: …".  Never
        contains "proved" or "proven".
    n_supporting : int
        In-scope instances that hold.
    instances : tuple of InstanceResult
    """

    claim: str
    kind: str
    expected: str
    verdict: object
    reason: str
    text: str
    n_supporting: int
    instances: tuple = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdict", ClaimVerdict(self.verdict))
        object.__setattr__(self, "instances", tuple(
            r if isinstance(r, InstanceResult) else InstanceResult.from_json(r)
            for r in self.instances))
        if any(word in self.text.lower() for word in _FORBIDDEN):
            raise InvalidArgument(f"text={self.text!r}: a numerical verdict never says "
                                  "'proved'; say 'supported'.")

    @property
    def counts(self) -> dict[str, int]:
        """Number of instances per *effective* verdict (see :func:`effective_verdict`)."""

        return dict(Counter(effective_verdict(r)[0].value for r in self.instances))

    @property
    def grades(self) -> dict[str, int]:
        """In-scope instances by what their verdict rests on (design.md, "Basis and grades"):
        ``proved`` — holds on a rigorous basis (exact, enclosure, certificate: *proved on this
        instance for all t ≥ 0*), ``violated`` — a violation on a rigorous basis (the only kind
        that refutes), ``estimate`` — holds within an error estimate, ``evidence`` — a fit or
        other evidence, ``unstated`` — a decision that does not state its basis, ``undecided``
        — inconclusive, which includes a violation on a non-rigorous basis
        (:func:`~verify.judge._verdicts.effective_verdict`)."""

        out = {"proved": 0, "violated": 0, "estimate": 0, "evidence": 0, "unstated": 0,
               "undecided": 0}
        for r in self.instances:
            verdict = effective_verdict(r)[0]
            if verdict is InstanceVerdict.OUT_OF_SCOPE:
                continue
            if verdict is InstanceVerdict.INCONCLUSIVE:
                out["undecided"] += 1
            elif r.basis is None:
                out["unstated"] += 1
            elif r.basis.rigorous:
                out["proved" if verdict is InstanceVerdict.HOLDS else "violated"] += 1
            elif r.basis is Basis.ESTIMATE:
                out["estimate"] += 1
            else:
                out["evidence"] += 1
        return out

    @property
    def grades_text(self) -> str:
        """``"3 proved on the instance, 1 estimate"`` (empty when nothing is in scope)."""
        names = {"proved": "proved on the instance", "violated": "violated (rigorous)",
                 "estimate": "estimate",
                 "evidence": "evidence", "unstated": "basis not stated",
                 "undecided": "undecided"}
        return ", ".join(f"{k} {names[g]}" for g, k in self.grades.items() if k)

    @property
    def bases(self) -> dict[str, int]:
        """Number of decided instances per verdict and basis ("holds (estimate)", "violated
        (evidence)", ...): what the claim's verdict rests on."""
        return dict(Counter(r.label for r in self.instances if r.basis is not None
                            and r.verdict.value in ("holds", "violated")))

    @property
    def matches_expected(self) -> bool | None:
        """Whether the verdict is what the file expects (``None`` if inconclusive or open)."""
        if self.verdict.value == "inconclusive" or self.expected == "open":
            return None
        return (self.verdict.value == "supported") == (self.expected == "holds")

    def to_json(self) -> dict:
        """A plain dict (JSON-able); :meth:`from_json` reads it back."""
        return {"claim": self.claim, "kind": self.kind, "expected": self.expected,
                "verdict": self.verdict.value, "reason": self.reason, "text": self.text,
                "n_supporting": self.n_supporting,
                "instances": [r.to_json() for r in self.instances]}

    @classmethod
    def from_json(cls, data: dict) -> ClaimResult:
        """Inverse of :meth:`to_json`."""
        return cls(**data)


def judge_claim(claim, results: Iterable) -> ClaimResult:
    """Apply design.md's rules to the instance results of ``claim``.

    Parameters
    ----------
    claim : Claim
        Anything with ``id``, ``kind`` and ``expected`` attributes.
    results : iterable of InstanceResult

    Returns
    -------
    ClaimResult
        refuted iff some violation on a rigorous basis survived re-checking; supported iff some
        instance is in scope and every in-scope instance holds (the reason counts the bases the
        holds rest on); inconclusive otherwise, with the reason (violations on a weaker basis
        are named: "violated (evidence)").
    """

    results = tuple(results)
    kind, evidence_only = str(claim.kind), str(claim.kind) in ("conjecture", "open-problem")
    effective = [effective_verdict(r) for r in results]
    by = {v: [(r, why) for r, (verdict, why) in zip(results, effective, strict=True)
              if verdict is v] for v in InstanceVerdict}
    holds, violated = by[InstanceVerdict.HOLDS], by[InstanceVerdict.VIOLATED]
    undecided, out = by[InstanceVerdict.INCONCLUSIVE], by[InstanceVerdict.OUT_OF_SCOPE]
    failed = by[InstanceVerdict.ERROR]
    in_scope = len(results) - len(out)

    def make(verdict, reason, text):
        return ClaimResult(claim.id, kind, str(claim.expected), verdict, reason, text,
                           len(holds), results)

    def first(items, k=2):
        shown = "; ".join(f"{r.instance}: {why}" for r, why in items[:k])
        return shown + (f"; and {len(items) - k} more" if len(items) > k else "")

    if violated:
        where = f" ({', '.join(r.counterexample for r, _ in violated if r.counterexample)})" \
            if any(r.counterexample for r, _ in violated) else ""
        reason = (f"{_instances(len(violated))} violated the claim, confirmed when re-checked "
                  f"at higher precision and a longer horizon{where}: {first(violated)}")
        count = len(violated)
        return make(ClaimVerdict.REFUTED, reason, f"refuted: {count} violation"
                    f"{'s' if count != 1 else ''} confirmed at higher precision")
    if not results:
        return make(ClaimVerdict.INCONCLUSIVE, "no instance was run.",
                    "inconclusive: no instances")
    if in_scope == 0:
        reasons = {why for _, why in out}
        why = f"{next(iter(reasons))} (all of them)" if len(reasons) == 1 else first(out)
        return make(ClaimVerdict.INCONCLUSIVE,
                    f"all {_instances(len(results))} are out of scope, and out-of-scope "
                    f"instances never count as support: {why}",
                    "inconclusive: all instances out of scope")
    skipped = f" {_instances(len(out))} out of scope, not counted." if out else ""
    if failed:
        return make(ClaimVerdict.INCONCLUSIVE,
                    f"{len(failed)} of {in_scope} instances could not be judged because of an "
                    f"error in their input ({len(holds)} hold): {first(failed)}.{skipped}",
                    f"inconclusive: {len(failed)} of {_instances(in_scope)} failed with an "
                    "error")
    if not undecided:
        n = len(holds)
        word = "supported by evidence on" if evidence_only else "supported on"
        return make(ClaimVerdict.SUPPORTED,
                    f"every in-scope instance ({n}) holds with a margin above its error "
                    f"({_bases(r for r, _ in holds)}).{_horizons(holds)}{skipped}",
                    f"{word} {_instances(n)}")
    weak = [(r, why) for r, why in undecided if r.verdict is InstanceVerdict.VIOLATED]
    also = (f"; {len(weak)} violated on a non-rigorous basis "
            f"({_bases(r for r, _ in weak)}), which does not refute") if weak else ""
    kinds = sorted({(r.basis or "evidence") for r, _ in weak})
    headline = "" if not weak else (f" ({len(weak)} violated ({kinds[0]}))" if len(kinds) == 1
                                    else f" ({len(weak)} violated: {_bases(r for r, _ in weak)})")
    return make(ClaimVerdict.INCONCLUSIVE,
                f"{len(undecided)} of {in_scope} in-scope instances are inconclusive "
                f"({len(holds)} hold{also}): {first(weak or undecided)}.{skipped}",
                f"inconclusive: {len(undecided)} of {_instances(in_scope)} undecided{headline}")


def _bases(results) -> str:
    """How many decisions rest on each basis, strongest first: "10 estimate, 2 fit"."""

    counts = Counter((r.basis or Basis.EVIDENCE) for r in results)
    return ", ".join(f"{counts[b]} {b.value}" for b in Basis if counts[b])


def _horizons(holds: list) -> str:
    """Which horizons support the statements about ``t → ∞``: each held at its last horizon
    ``T`` and at the re-check ``3T/2`` (``evidence["horizons"]``, :mod:`verify.judge`);
    ``holds`` lists pairs (result, reason)."""
    from fractions import Fraction

    last = [r.evidence["horizons"][-1] for r, _ in holds if r.evidence.get("horizons")]
    spans = sorted(Fraction(h["horizon"]) for h in last if h.get("re_check"))
    if not spans:
        return ""
    where = f"T = {float(spans[0]):.4g}" if spans[0] == spans[-1] else \
        f"T from {float(spans[0]):.4g} to {float(spans[-1]):.4g}"
    return (f" The statements about t → ∞ held at the horizon T and again at 3T/2 on "
            f"{_instances(len(spans))} ({where}).")


#: Exit code of ``verify run`` and ``verify check`` when an instance failed with an error.
EXIT_ERROR = 4


def exit_code(results: Iterable[ClaimResult]) -> int:
    """1 when a claim expected to hold is refuted, else :data:`EXIT_ERROR` (4) when an instance
    failed with an error (its input is wrong), else 0 (2, bad usage, is the CLI's)."""
    results = list(results)
    if any(r.expected == "holds" and r.verdict.value == "refuted" for r in results):
        return 1
    return EXIT_ERROR if any(r.counts.get("error") for r in results) else 0
