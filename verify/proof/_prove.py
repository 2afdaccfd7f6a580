r"""Proving an instance: a rigorous enclosure up to :math:`t_1`, a trapping lemma at
:math:`t_1`, a certificate that the independent checker accepts.

:func:`prove_result` is the one call the judging engine makes: for an instance whose verdict
rests on an estimate (or is undecided), it

1. picks the lemmas that can trap the model's dynamics (:func:`~verify.proof._lemmas.lemmas_for`)
   and maps each conclusion of the claim onto the facts that prove it
   (:mod:`verify.proof._plans`); a conclusion without such a mapping ends the attempt with
   that lemma; the lemmas are tried in turn, each with the budget the ones before it left;
2. **looks ahead** (:func:`look_ahead`): asks the lemma at every mark
   :math:`t_1 = 0, \tfrac12, 1, \dots` up to the re-check horizon :math:`\tfrac32 T` of the
   estimate (or the longest horizon its extensions reached) on a float64 run, in balls of
   relative radius :data:`LOOKAHEAD_RADIUS` around its states (the exact tokens at 0); when
   it holds nowhere, no enclosure is computed and the reason names the inequality and its best
   margin; else the first such mark, or (the leader map, the good triple) the first point of
   a finer grid before it where it holds (:data:`LOOKAHEAD_STEP`), :math:`t^*`, is where the
   proof starts, and (the leader map, and the good triple where the followers' drift will not
   carry the enclosure on) the widest float balls on which it holds there say how wide the
   enclosure's balls may grow. The look-ahead only decides where the enclosure's effort goes,
   never a verdict;
3. encloses the trajectory (:class:`verify.enclosure.Enclosure`) straight to :math:`t^*`, asks
   the lemma whether it traps the tokens there (:func:`~verify.proof._lemmas.try_lemma`) and
   adds the facts; after a failure it tries the later marks in turn. For the leader map (and
   the good triple where the followers' drift will not carry the enclosure on) the first
   enclosure is a coarse one (:data:`COARSE`, or where the lemma allows wider balls still
   :data:`COARSER`, :data:`COARSEST`: longer steps, wider balls), each given up for the next
   finer one as soon as its balls are wider than the lemma allows in floats; for the good
   triple whose drift will carry it on, a rung of :data:`DRIFT_RUNGS` where both lemmas leave
   the slack for it in floats, with the fine enclosure from 0 as the drift's fallback;
4. has the document re-checked by :func:`verify.lemmas.check_certificate` — the checker, not the
   builder, decides — and on success returns the verdict **proved on this instance (for all
   t ≥ 0)** with basis ``certificate`` and the certificate document attached.

Escalation before giving up: the (fine) enclosure has 128 bits and steps whose remainder is
about 2^-40 of the state (the coarse ones, 2^-24..2^-36); when it loses accuracy it is started again
once with 256 bits and 2^-56 (more digits); later marks are lemmas at a later
:math:`t_1`. All within the proof budget (``parameters.proof_seconds`` of the claim, default
:data:`PROOF_SECONDS`: CPU seconds, so that a loaded machine proves what an idle one does) and
the instance's own wall budget. When nothing is proved, the
estimate-based verdict stands and its evidence says what was tried and why it failed.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from fractions import Fraction

import numpy as np
from flint import arb, arb_mat, ctx

from verify.enclosure import MAX_SIZE, Enclosure, unsupported
from verify.errors import VerifyError
from verify.flow.simulate import simulate
from verify.judge._decision import proved
from verify.judge._verdicts import InstanceResult, InstanceVerdict
from verify.lemmas import check_certificate, good_triple, hyperplane_drift, leader_map
from verify.lemmas._balls import CheckFailure, ball_text, parse_ball
from verify.numerics._monitor import _WALL_BUDGET
from verify.proof._lemmas import lemmas_for, try_lemma
from verify.proof._plans import NoPlan, plan_facts
from verify.vocabulary.hypothesis_expressions import check_hypotheses

__all__ = ["prove_result", "proof_budget", "PROOF_SECONDS", "MARK_STEP"]

#: Default CPU seconds (of the proving thread) a proof may take per instance (the environment
#: variable ``VERIFY_PROOF_SECONDS`` overrides it, also in worker processes; 0: no proofs).
PROOF_SECONDS = float(os.environ.get("VERIFY_PROOF_SECONDS", "120"))
_BUDGET: ContextVar[float] = ContextVar("verify_proof_seconds", default=PROOF_SECONDS)


@contextmanager
def proof_budget(seconds: float | None) -> Iterator[None]:
    """Inside the block a proof may take ``seconds`` (0: no proofs; ``None``: unchanged) —
    how ``verify run --proof-seconds`` reaches the workers (through
    :class:`verify.run.Budget`)."""
    if seconds is None:
        yield
        return
    token = _BUDGET.set(float(seconds))
    try:
        yield
    finally:
        _BUDGET.reset(token)
#: Spacing of the times t1 at which the lemma is tried.
MARK_STEP = Fraction(1, 2)
#: The attempt stops when each failing margin of the lemma has gained less than ``STALL_GAIN``
#: of its size at each of ``STALL_MARKS`` marks in a row (:func:`stalled`).
STALL_MARKS = 3
STALL_GAIN = 0.01
#: A stalled margin within this many enclosure radii of 0 is the enclosure's width, not the
#: dynamics: the attempt escalates the digits instead of stopping.
WIDTH_LIMITED = 100.0
_MARGIN = re.compile(r"(\S+) fails \(margin ([-+0-9.e]+)\)")


class _Clock:
    """Whether the proof's time is up (call it), and how many CPU seconds are left.

    The budget counts the CPU seconds of this thread (``time.thread_time``), so that what is
    proved does not depend on how loaded the machine is (on a shared machine 120 wall seconds
    gave some proofs 20 CPU seconds); the instance's wall budget, when it has one, stops the
    proof too."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.thread_time() + seconds
        self.shared = _WALL_BUDGET.get()

    def now(self) -> float:
        """This thread's CPU seconds (the clock the budget counts)."""
        return time.thread_time()

    def spent(self) -> float:
        """CPU seconds of this thread since the clock started."""
        return time.thread_time() - (self.end - self.seconds)

    def remaining(self) -> float:
        """CPU seconds left (the wall budget, when nearer, in wall seconds)."""
        left = self.end - time.thread_time()
        if self.shared is not None:
            left = min(left, self.shared.deadline - time.monotonic())
        return left

    def __call__(self) -> bool:
        return self.remaining() < 0


def _expiry(request) -> _Clock:
    """The proof's clock: its budget is ``parameters.proof_seconds`` of the claim, or the
    current :func:`proof_budget`."""
    return _Clock(float(request.parameters.get("proof_seconds", _BUDGET.get())))


#: The pace stop (:class:`_Pace`): an enclosure ends early when, even at the best pace it has
#: kept (time reached per CPU second, over the last ``PACE_WINDOW`` of the CPU it had spent at
#: each step, at least ``PACE_STEPS`` steps; or over its whole run), reaching its target would
#: take more than ``PACE_FACTOR`` times the CPU seconds left; never before it has spent
#: ``PACE_WARMUP`` of the proof budget. Calibrated on traced enclosures of the paper suite: the
#: *current* pace is no guide — at their transient (t ≈ 0.7..1.2) hyperplanes'
#: paper-3d-negative-pair#0 and paper-3d-positive-pair#0 (both proved within the budget) later
#: go five and more times faster, and a rule on the current pace with a factor 8 stopped
#: positive-pair at t = 1.09; the best pace so far was beaten later by at most 1.27-fold (on
#: negative-pair), so the factor is 2.
PACE_FACTOR = 2.0
PACE_WINDOW = 0.1
PACE_WARMUP = 0.1
PACE_STEPS = 20
#: The steps have collapsed (the enclosure is losing its accuracy, not just slow) when the
#: window's pace is below this share of the best pace and the last step below this share of the
#: median step so far: then more digits at once, not a stop.
COLLAPSED = 1e-6


class _Pace:
    """Asked by :meth:`verify.enclosure.Enclosure.advance` before every step (as its
    ``expired``): whether the proof's clock has run out, or the enclosure, even at the best
    **measured** pace it has kept, cannot reach ``target`` within the CPU seconds left (the
    constants above). It decides where effort goes, never a verdict: a stopped proof leaves the
    estimate-based verdict as it is, and ``stopped`` says why (the target, the time reached, the
    CPU seconds spent, the projected cost). The projection is in the measured pace (the steps'
    sizes and costs, whatever makes them so: stiffness, widening balls), so it follows the
    enclosure's speed instead of a fixed cost model. Where the steps have collapsed (the balls
    lose their accuracy: the pace and the last step both below :data:`COLLAPSED` of their
    usual size) ``collapsed`` is set, and the proof escalates the digits at once instead of
    waiting for a step to fail.

    Example — a fake enclosure that advances 0.001 per step at 1/8 CPU s per step, aiming at
    t = 50 with a budget of 100 CPU s: once its window (the last 10% of the CPU it spent) holds
    20 steps, at 23.9 s, its best pace (0.008 time units per CPU s) needs 6226 CPU s for the
    rest, more than twice the 76 left::

        >>> from types import SimpleNamespace
        >>> clock = SimpleNamespace(seconds=100.0, spent=0.0)
        >>> clock.now, clock.remaining = lambda: clock.spent, lambda: 100.0 - clock.spent
        >>> enclosure = SimpleNamespace(t=Fraction(0), steps=[])
        >>> pace = _Pace(lambda: False, enclosure, Fraction(50), clock)
        >>> while not pace():
        ...     clock.spent += 0.125
        ...     enclosure.t += Fraction(1, 1000)
        ...     enclosure.steps.append(SimpleNamespace(h=Fraction(1, 1000)))
        >>> {k: pace.stopped[k] for k in ("reached", "cpu_spent", "projected_cpu", "left_cpu")}
        {'reached': 0.191, 'cpu_spent': 23.88, 'projected_cpu': 6226.1, 'left_cpu': 76.12}
    """

    def __init__(self, expired: Callable[[], bool], enclosure, target: Fraction,
                 clock) -> None:
        self.expired, self.enclosure, self.clock = expired, enclosure, clock
        self.mark, self.target, self.start = Fraction(target), float(target), clock.now()
        self.samples: list[tuple[float, float, int]] = []  # (CPU spent, t, steps)
        self.first = 0  # the window's first sample
        self.best = 0.0  # the best pace so far, time units per CPU second
        self.stopped: dict | None = None

    def __call__(self) -> bool:
        if self.expired():
            return True
        spent, t = self.clock.now() - self.start, float(self.enclosure.t)
        self.samples.append((spent, t, len(self.enclosure.steps)))
        if spent < PACE_WARMUP * self.clock.seconds:
            return False
        while self.first + 1 < len(self.samples) and \
                self.samples[self.first + 1][0] <= (1 - PACE_WINDOW) * spent:
            self.first += 1
        cpu0, t0, steps0 = self.samples[self.first]
        if len(self.enclosure.steps) - steps0 < PACE_STEPS or not spent > cpu0:
            return False
        pace = (t - t0) / (spent - cpu0)
        self.best = max(self.best, pace, t / spent)
        left = self.clock.remaining()
        collapsed = pace < COLLAPSED * self.best and self._collapsed()
        projected = (self.target - t) / self.best if self.best > 0 else math.inf
        if not (collapsed or projected > PACE_FACTOR * max(left, 0.0)):
            return False
        self.stopped = {"target": str(self.mark), "reached": round(t, 4),
                        "cpu_spent": round(spent, 2), "left_cpu": round(left, 2),
                        "projected_cpu": projected if math.isinf(projected) else
                        round(projected, 1), "best_pace": self.best, "pace": pace,
                        "collapsed": collapsed}
        return True

    def _collapsed(self) -> bool:
        steps = sorted(float(step.h) for step in self.enclosure.steps)
        return float(self.enclosure.steps[-1].h) < COLLAPSED * steps[len(steps) // 2]

    def reason(self) -> str:
        """Why the enclosure stopped (when :attr:`stopped`)."""
        s = self.stopped
        if s["collapsed"]:
            return (f"the enclosure's steps collapsed at t = {s['reached']:g} after "
                    f"{s['cpu_spent']:g} CPU s of its own (the balls are losing their "
                    f"accuracy: its pace fell to {s['pace']:.3g} time units per CPU s from "
                    f"{s['best_pace']:.3g}; {s['left_cpu']:g} CPU s of the proof's budget are "
                    "left)")
        return (f"the enclosure stopped early at t = {s['reached']:g} after {s['cpu_spent']:g} "
                f"CPU s of its own: even at the best pace it kept ({s['best_pace']:.3g} time "
                f"units per CPU s; {s['pace']:.3g} over its last {100 * PACE_WINDOW:g}%) "
                f"reaching t = {float(self.target):g} would take {s['projected_cpu']:.3g} CPU "
                f"s, more than {PACE_FACTOR:g} times the {s['left_cpu']:g} CPU s left of the "
                "proof's budget")


def _applying(request) -> list:
    specs = []
    for spec in request.claim.conclusions:
        scope = check_hypotheses(spec.when, request.instance) if spec.when else None
        if scope is None or scope.holds is True:
            specs.append(spec)
    return specs


def _note(result: InstanceResult, tried: dict) -> InstanceResult:
    """``result`` with the proof attempt in its evidence; an inconclusive reason also says
    what was tried."""
    reason = result.reason
    if result.verdict is InstanceVerdict.INCONCLUSIVE and tried.get("marks_tried"):
        marks = tried["marks_tried"]
        reason += (f" [a proof was tried with lemma {tried.get('reason', '').split(':')[0]} "
                   f"at t1 = {marks[0]:g}..{max(marks):g} ({len(marks)} times, "
                   f"{tried.get('cpu_seconds', 0):.3g} CPU s): {tried.get('reason', '')}]")
    elif result.verdict is InstanceVerdict.INCONCLUSIVE:
        reason += f" [no proof for all t could be tried: {tried.get('reason', '')}]"
    return replace(result, reason=reason, evidence={**result.evidence, "proof": tried})


def prove_result(request, result: InstanceResult) -> InstanceResult:
    """The proved result of ``request``, or ``result`` with what the proof attempt tried in
    ``evidence["proof"]`` (module docstring)."""
    if result.verdict in (InstanceVerdict.OUT_OF_SCOPE, InstanceVerdict.VIOLATED) or \
            request.recheck or (result.basis is not None and result.basis.rigorous) or \
            not float(request.parameters.get("proof_seconds", _BUDGET.get())) > 0:
        return result
    instance = request.instance

    lemmas = lemmas_for(instance.model)
    why_not = unsupported(instance.model) or (
        None if instance.n * instance.d <= MAX_SIZE else
        f"n·d = {instance.n * instance.d} is above {MAX_SIZE}") or (
        None if lemmas else "no trapping lemma applies to this model")
    if why_not:
        return _note(result, {"proved": False, "reason": why_not})
    clock, outcome, runs = _expiry(request), None, {}
    for lemma in lemmas:  # each with the budget the ones before it left
        try:
            plans = [(spec, plan_facts(spec, lemma, instance)) for spec in _applying(request)]
        except NoPlan as exc:
            outcome = outcome or {"proved": False, "reason": str(exc)}
            continue
        if not plans:
            return _note(result, {"proved": False, "reason": "no conclusion applies."})
        start, cpu_start = time.perf_counter(), time.thread_time()
        tried = _search(request, lemma, plans, clock, _reach(request, result), runs)
        # the budget's clock (this thread's CPU) and the wall clock, which load stretches
        tried["cpu_seconds"] = round(time.thread_time() - cpu_start, 3)
        tried["seconds"] = round(time.perf_counter() - start, 3)
        if tried.get("document") is not None:
            return _proved(request, result, lemma, plans, tried)
        outcome = _after(outcome, tried)
        if clock():
            break
    return _note(result, outcome)


def _after(before: dict | None, tried: dict) -> dict:
    """What a failed attempt records, after the attempts of earlier lemmas: the last attempt,
    its reason preceded by theirs, the marks of all."""
    if before is None:
        return tried
    return {**tried, "reason": f"{before['reason']}; then {tried['reason']}",
            "marks_tried": before.get("marks_tried", []) + tried.get("marks_tried", []),
            **{key: before.get(key, 0) + tried.get(key, 0) for key in ("seconds", "cpu_seconds")}}


def _reach(request, result: InstanceResult) -> Fraction:
    """How far the marks go: the re-check horizon ``3T/2`` of the estimate, or the longest
    horizon the engine's extensions reached."""
    reach = Fraction(request.horizon) * Fraction(3, 2)
    for tried in result.evidence.get("horizons") or []:
        reach = max(reach, Fraction(tried.get("re_check") or tried.get("horizon") or 0))
    return reach


def failing_margins(why: str) -> dict[str, float]:
    """The margins of the lemma's failed inequalities, by name, as its builder reports them in
    its reason (``"g_in fails (margin -0.347)"``); empty when it names none.

    >>> failing_margins("g_out fails (margin -35.8); g_in fails (margin -14.9)")
    {'g_out': -35.8, 'g_in': -14.9}
    """
    return {name: float(m) for name, m in _MARGIN.findall(why)}


def comparable_margins(lemma: str, instance, t1: Fraction, failing: dict) -> dict:
    r"""The failing margins that :func:`stalled` follows, made comparable between marks: the
    leader map's score gaps :math:`g_{\rm out}, g_{\rm in}` as they are (they tend to the
    limits' gaps); the good triple's :math:`G_\pm e^{-2\lambda_1 t_1} = c\mu_\pm^2 -
    e^{-\lambda_1 t_1} K_1 - e^{-2\lambda_1 t_1} K_2` (:mod:`verify.lemmas.good_triple`: it
    tends to :math:`c\mu_\pm^2`, while :math:`G_\pm` itself first grows more negative). Other
    inequalities and lemmas are not followed (no stall is declared on them).

    >>> from verify.lemmas import leader_map
    >>> comparable_margins(leader_map.ID, None, Fraction(1), {"g_in": -0.3, "rho": -5.0})
    {'g_in': -0.3}
    """
    if lemma == leader_map.ID:
        return {k: v for k, v in failing.items() if k in ("g_out", "g_in")}
    if lemma == good_triple.ID:
        lam = max(np.linalg.eigvals(np.asarray(instance.model.V, dtype=float)).real)
        scale = math.exp(-2 * lam * float(t1))
        return {k: v * scale for k, v in failing.items() if k.startswith("dominance-")}
    return {}


def stalled(margins: list[dict], marks: int = STALL_MARKS) -> bool:
    """Whether the lemma has stopped getting closer to holding: every inequality that fails at
    the last mark failed at each of the ``marks`` marks before it and gained less than
    :data:`STALL_GAIN` of its size at each step (``margins``: the failing margins by name, one
    dict per mark). A new inequality failing (e.g. the leader map's allowances once its score
    gaps hold) is progress, not a stall.

    >>> stalled([{"g": -7e-9}] * 4), stalled([{"g": -36}, {"g": -0.3}, {"g": -0.4}, {"g": -0.5}])
    (True, False)
    """
    window = margins[-marks - 1:]
    if len(window) <= marks or not window[-1]:
        return False
    for name in window[-1]:
        values = [m.get(name) for m in window]
        if any(v is None or not v < 0 for v in values):
            return False
        if any(b - a >= STALL_GAIN * abs(a) for a, b in zip(values, values[1:], strict=False)):
            return False
    return True


def _marks(last_mark: Fraction) -> list[Fraction]:
    """The marks 0, 1/2, 1, ... up to ``last_mark`` (which is the last)."""
    marks = [Fraction(0)]
    while marks[-1] < last_mark:
        marks.append(min(marks[-1] + MARK_STEP, last_mark))
    return marks


def _search(request, lemma: str, plans: list, expired: _Clock,
            last_mark: Fraction, runs: dict) -> dict:
    """Look ahead (:func:`look_ahead`), enclose straight to the first mark where the lemma
    holds in floats and try it there, then at the later marks in turn; escalate the digits
    once. For the lemmas of :data:`COARSE_SEARCH` (and the good triple where
    :func:`_drift_settled`) the first enclosure is a coarse one
    (:data:`COARSEST`, :data:`COARSER`, :data:`COARSE`: the first the look-ahead's allowance
    admits), given up for the next finer one when its balls outgrow the look-ahead's
    allowance (:class:`_Narrow`) or the lemma fails on balls wider than the look-ahead's; the
    good triple whose drift will carry the enclosure on gets a rung of :data:`DRIFT_RUNGS`
    instead, the first its ``carried`` slack admits (:func:`_admitted`), given up likewise.
    No enclosure is computed when the lemma holds at no mark in floats. After a failure
    it stops early, saying why, when the lemma's failing margins have stopped improving
    (:func:`stalled`; when they are within the enclosure's width it escalates instead). Each
    enclosure to a mark is also stopped by its measured pace (:class:`_Pace`): when even at
    its best pace reaching the mark would take more than :data:`PACE_FACTOR` times the CPU
    seconds left, or, when its steps have collapsed, it escalates the digits. (An earlier rule
    projected the next mark's cost from the last segment times its growth, before the
    look-ahead: it stopped hyperplanes' paper-3d-negative-pair#0 at t1 = 1.5 with 73 of its
    120 CPU s left, where the proof succeeds within the budget; the pace rule is calibrated on
    traces of that instance.)"""

    instance = request.instance
    marks = _marks(last_mark)
    tried, history, ahead, stopped, coarse = [], [], None, None, None
    why = "no mark reached"
    settings = [COARSEST, COARSER, COARSE, *DRIFT_RUNGS, *SETTINGS]
    while settings:
        setting = settings.pop(0)
        is_coarse = any(setting is c for c in (COARSEST, COARSER, COARSE, *DRIFT_RUNGS))
        given_up = False
        enclosure = Enclosure(instance, bits=setting["bits"], tol=setting["tol"])
        if ahead is None:
            ahead = look_ahead(request, lemma, enclosure, marks, runs)
            if ahead["first"] is None and ahead["reached"] == str(marks[-1]):
                return {"proved": False, "reason": f"{lemma}: {ahead['reason']}",
                        "marks_tried": [], "margins": [], "look_ahead": ahead}
        allowance = _admitted(setting, ahead) if is_coarse else None
        if is_coarse and allowance is None:
            continue  # not measured (COARSE_SEARCH), t* = 0, or too narrow for this one
        first = Fraction(ahead["first"] if ahead["first"] is not None else ahead["after"])
        margins, escalate = [], False
        for mark in [first] + [m for m in marks if m > first]:
            pace = _Pace(expired, enclosure, mark, expired)
            if is_coarse:
                pace = _Narrow(pace, enclosure, allowance)
            if not enclosure.advance(mark, expired=pace):
                if is_coarse and pace.wide is not None:
                    coarse, given_up = _coarse_record(enclosure, pace.wide), True
                    break  # too wide for the lemma: the next (finer) enclosure, from 0
                if is_coarse:
                    pace = pace.pace
                if pace.stopped is not None:  # the measured pace, not the clock, ended it
                    enclosure.message = pace.reason()
                    if pace.stopped["collapsed"]:
                        enclosure.status = "failed"
                    stopped = pace.stopped
                why = f"the enclosure stopped: {enclosure.message}"
                if ahead["first"] is not None and not tried:
                    why += (f" (the look-ahead saw the lemma hold in floats from t1 = "
                            f"{float(Fraction(ahead['first'])):g})")
                break
            document, why = try_lemma(lemma, instance, enclosure, mark)
            tried.append(float(mark))
            held = document is not None
            if held:
                document, why = _with_facts(request, document, plans, enclosure, mark)
                if document is not None:
                    found = {"proved": True, "document": document, "t1": str(mark),
                             "enclosure": enclosure.describe(), "marks_tried": tried,
                             "margins": history, "look_ahead": ahead}
                    if coarse is not None:
                        found["coarse"] = coarse
                    if lemma == good_triple.ID:
                        rung = allowance if any(setting is r for r in DRIFT_RUNGS) else None
                        found["drift"], found["drift_document"] = _drift_beside(
                            request, enclosure, mark, expired, runs, rung)
                    return found
            if is_coarse and not held and _relative_radius(enclosure) > LOOKAHEAD_RADIUS:
                # the lemma fails on balls wider than the float balls it held on: perhaps
                # the width; the fine enclosure (when narrower, or when the lemma holds and
                # a fact fails, the look-ahead knew nothing better: the later marks, as the
                # fine one would)
                coarse = _coarse_record(enclosure, f"the lemma fails at t1 = {mark}: {why}")
                given_up = True
                tried.pop()
                break
            failing = failing_margins(why)
            margins.append(comparable_margins(lemma, instance, mark, failing))
            history.append([float(mark), failing])
            if stalled(margins):
                width, worst = enclosure.radius(), min(failing.values())
                if abs(worst) > WIDTH_LIMITED * width:
                    window = "; ".join(f"{name}: " + ", ".join(
                        f"{m[name]:.3g}" for m in margins[-STALL_MARKS - 1:])
                        for name in margins[-1])
                    why = (f"the lemma's failing margins stopped improving ({window} at t1 = "
                           f"{float(mark) - STALL_MARKS * float(MARK_STEP):.4g}.."
                           f"{float(mark):.4g}, far beyond the enclosure's radius {width:.2g}): "
                           f"the dynamics, not the digits, keep it from holding, e.g. a tie "
                           f"between scores that stays a tie (the last reason: {why})")
                    return _failed(lemma, why, tried, history, enclosure, ahead, stopped)
                why = (f"the lemma's worst margin {worst:.3g} stopped improving within the "
                       f"enclosure's width ({width:.2g}) at t1 = {float(mark):.4g}")
                escalate = True  # more digits may resolve it
                break
        if given_up and not expired():
            continue
        if not escalate and enclosure.status != "failed":
            break  # the budget or the horizon ended it: more digits would not help
    failed = _failed(lemma, why, tried, history, enclosure, ahead, stopped)
    if coarse is not None:
        failed["coarse"] = coarse
    return failed


def _coarse_record(enclosure, why: str) -> dict:
    """What the coarse enclosure did before the fine one took over (for the evidence)."""
    return {"tol": enclosure.tol, "t": str(enclosure.t), "steps": len(enclosure.steps),
            "radius": enclosure.radius(), "seconds": round(enclosure.seconds, 3),
            "why": why}


def _admitted(setting: dict, ahead: dict) -> float | None:
    """The relative radius a coarse enclosure's balls must stay within (:class:`_Narrow`), or
    ``None`` when the look-ahead does not admit ``setting``: a rung of :data:`DRIFT_RUNGS`
    reads the look-ahead's ``carried`` allowance (the good triple at :math:`t^*` and the
    followers' drift where the enclosure is carried on to, both in floats), the others its
    ``allowance`` (the lemma at :math:`t^*`); each needs it at least as wide as its own
    ``"allowance"``.

    >>> _admitted(DRIFT_RUNGS[1], {"allowance": None, "carried": {"allowance": 2.0 ** -14}})
    6.103515625e-05
    >>> _admitted(DRIFT_RUNGS[0], {"allowance": None, "carried": {"allowance": 2.0 ** -14}})
    >>> _admitted(COARSE, {"allowance": None, "carried": {"allowance": 2.0 ** -14}})
    """
    if any(setting is rung for rung in DRIFT_RUNGS):
        allowance = (ahead.get("carried") or {}).get("allowance")
    else:
        allowance = ahead.get("allowance")
    if allowance is None or allowance < setting.get("allowance", 0):
        return None
    return allowance


class _Narrow:
    """The coarse enclosure's stop (:data:`COARSE`): its pace stop, and whether its balls
    have grown wider than the lemma allows at the look-ahead's mark (``allowance``: the
    relative radius of the widest float balls on which the lemma held there) — then it is
    given up for the fine enclosure at once instead of spending its steps on balls that
    cannot prove the lemma."""

    def __init__(self, pace: Callable[[], bool], enclosure, allowance: float) -> None:
        self.pace, self.enclosure, self.allowance = pace, enclosure, allowance
        self.wide: str | None = None

    def __call__(self) -> bool:
        if self.pace():
            return True
        wide = _relative_radius(self.enclosure)
        if wide > self.allowance:
            self.wide = (f"its balls grew wider ({wide:.2g} of the state) than the lemma "
                         f"allows in floats ({self.allowance:.2g}) at t = "
                         f"{float(self.enclosure.t):.4g}")
            return True
        return False


def _relative_radius(enclosure) -> float:
    """The enclosure's largest radius at its end over its largest coordinate there."""
    size = max((abs(float(v.mid())) for v in enclosure.x.entries()), default=0.0)
    return enclosure.radius() / max(size, 1e-300)


#: The enclosures a proof tries in turn: a coarse one (steps aiming at a remainder of
#: ``COARSE["tol"]`` of the state) when the look-ahead found where the lemma holds, given up
#: for the next as soon as its balls are wider than the lemma allows there in floats
#: (:class:`_Narrow`) or the lemma fails there; then the fine one; then more digits
#: (``SETTINGS``). On the leader map's 31 proved instances of ``verify run polytope
#: order-preserved one-bounded-token escape-threshold boolean-1d`` the lemma allowed balls of
#: 2^-26..2^-8 of the state where it first held, and the coarse enclosure stayed within that
#: and proved every one, with 5–60 % fewer steps (23–35 % on the dearest: polytope spd-3d#0
#: 204 → 147, uniform-scalar-positive#3 170 → 111); coarser tolerances (2^-28 at order 10,
#: 2^-24 at order 8) collapse on spd-3d#0.
COARSE = {"bits": 128, "tol": 2.0 ** -32}
#: Coarser enclosures still, tried first (the coarsest first) where the look-ahead's
#: allowance is at least their ``"allowance"`` (of the state), each given up for the next
#: when its balls outgrow the allowance. Each factor 2^4 in the tolerance costs about 14 %
#: less CPU to t* (measured at 128 bits, order 12, one process: polytope spd-3d#0 4.27 /
#: 3.63 / 3.12 CPU s at 2^-32 / 2^-28 / 2^-24, spd-3d#1 2.23 / 1.91 / 1.64, hyperplanes
#: random-good-triple#0 4.92 / 4.23 / 3.71, order-preserved uniform#1 1.60 / 1.37 / 1.19),
#: but the balls' width grows much faster than the tolerance: spd-3d#0 ends at 1.3e-8 /
#: 6.1e-7 / 1.0e-3 of the state (the lemma allows 6.1e-5 there), the others at 6.9e-9 /
#: 1.2e-7 / 3.2e-6, 7.2e-9 / 1.2e-7 / 3.0e-6 and 4.1e-8 / 5.7e-7 / 8.5e-6. So 2^-28 where
#: the lemma allows at least 2^-16, 2^-24 where it allows 2^-8 (the largest allowance
#: measured); on prove_vs_estimate's 32 proofs none was given up, every t1 the same.
COARSER = {"bits": 128, "tol": 2.0 ** -28, "allowance": 2.0 ** -16}
COARSEST = {"bits": 128, "tol": 2.0 ** -24, "allowance": 2.0 ** -8}
SETTINGS = ({"bits": 128, "tol": 2.0 ** -40}, {"bits": 256, "tol": 2.0 ** -56})
#: The rungs of a good triple whose enclosure the followers' drift will carry on
#: (:func:`_drift_settled` false: the drift holds in floats only at a later mark, so the enclosure
#: that proves the good triple at :math:`t_1` goes on to that mark beside the proof). **What decides
#: the rung** is the slack of both lemmas, measured on the look-ahead's float64 run before anything
#: is enclosed (:func:`_carried`): the smaller of the widest float balls on which the good triple
#: holds at :math:`t^*` and on which lemma ``hyperplane-drift`` holds at the first later mark where
#: it holds in floats. The first rung whose ``"allowance"`` that slack reaches is tried (the
#: coarsest first); its balls must stay within the slack (:class:`_Narrow` to :math:`t^*`, the same
#: test while carried on), else it is given up for the next one. Where the drift is still undecided
#: on a rung although it holds in floats at a later mark, :func:`_drift_beside` falls back to the
#: fine enclosure (``SETTINGS[0]``) from 0 to those marks, with its own budget
#: (:data:`FALLBACK_SHARE`): the good triple's proof is never at stake (a rung failing it is given
#: up for the fine one, as the coarse ones are), and the drift gets the fine enclosure it had before
#: these rungs. Measured on the paper's figures (128 bits, to :math:`t_1` / to 5/2, steps; the slack
#: on the grid of :data:`ALLOWANCE_STEP`): paper-2d (slack 2^-12) 345 / 433 at 2^-32 against 416 /
#: 514 at 2^-40; paper-3d-positive-pair (2^-12) 321 / 345 against 408 / 435; paper-3d-negative-pair
#: (2^-16) 353 / 417 at 2^-36 against 408 / 476 — and at 2^-32 it ends at 5.3e-4 of the state at
#: 5/2, wider than the drift allows (2^-16): its drift is undecided there. The proofs' CPU with the
#: drift (VERIFY_COMPILED=0, side by side at load 4–7): 19.5 / 29.8 / 25.5 -> 16.7 / 25.6 / 20.7 s,
#: the drift decided the same. Each rung is 2^20 times narrower than the slack it needs, the ratio
#: at which every one of these kept 85–200 times its slack at 5/2 and the one below it (2^16,
#: negative-pair at 2^-32) did not.
DRIFT_RUNGS = ({"bits": 128, "tol": 2.0 ** -32, "allowance": 2.0 ** -12},
               {"bits": 128, "tol": 2.0 ** -36, "allowance": 2.0 ** -16})
#: The fine enclosure a rung falls back to for the drift (:data:`DRIFT_RUNGS`) has at most
#: ``FALLBACK_SHARE`` times the CPU the proof had taken when its drift was tried (or
#: :data:`DRIFT_SECONDS` if more), within the proof's budget: from 0 it repeats what the proof
#: on the rung did, to the drift's mark, where before these rungs the fine enclosure was carried
#: on with :data:`DRIFT_SHARE` beside a fine proof; on the paper's figures the fine proof with its
#: drift to 5/2 costs 1.3–1.4 times the look-ahead and the rung to :math:`t_1`.
FALLBACK_SHARE = 3.0
#: The lemmas whose look-ahead refines :math:`t^*` on the finer grid (:data:`LOOKAHEAD_STEP`):
#: measured on the leader map's instances of the paper suite and on the good triple's (the six
#: hyperplanes instances, ``verify run hyperplanes`` with and without it side by side: every t1
#: earlier, e.g. paper-2d#0 3/2 -> 21/16, random-good-triple#1 1 -> 5/8, the same drift
#: decisions; 119.8 -> 118.2 CPU s, little, as the drift beside the paper's figures carries the
#: enclosure on to 5/2 either way; the three instances of the n <= 8, d <= 3 benchmark
#: 18.2 -> 16.1).
REFINED_SEARCH = (leader_map.ID, good_triple.ID)
#: The lemmas whose first enclosure is the coarse one (:data:`COARSE`): the leader map's. The good
#: triple's only where the followers' drift will not carry the enclosure on (:func:`_drift_settled`:
#: its lemma holds at t* on float balls as wide as the coarse enclosure's may grow, or fails in
#: floats at t* and at the later marks tried): on hyperplanes paper-3d-negative-pair#0 the coarse
#: enclosure, carried on beside the proof for the drift, failed at t = 2.47 (a remainder of NaN: its
#: balls too wide for the softmax; at 5ea38c0 it reaches 5/2 with balls of 5.3e-4 of the state, too
#: wide for the drift) before the mark 5/2 where the fine one certifies the drift (where the drift
#: does carry it on, the rungs of :data:`DRIFT_RUNGS` are chosen from both lemmas' slack). On the
#: random-good-triples (no drift in floats) the coarse enclosure (2^-32) proves the good triple at
#: the same t1 with 121 instead of 162 and 25 instead of 34 steps (allowance 2^-8, final radii 7e-9
#: and 2e-9 of the state; the coarsest, 2^-24, with 92 and 21); on symmetric-middle (the drift holds
#: at t* = 11/8 on float balls of 2^-8) with 78 (56 at 2^-24) instead of 110, the drift decided
#: there as on the fine one (converges).
COARSE_SEARCH = (leader_map.ID,)
#: The look-ahead measures how wide the balls may be where the lemma first holds in floats:
#: relative radii ``LOOKAHEAD_RADIUS · ALLOWANCE_STEP^k`` up to ``ALLOWANCE_MAX``.
ALLOWANCE_STEP = 4.0
ALLOWANCE_MAX = 2.0 ** -4

#: The look-ahead refines :math:`t^*` on this finer grid: once the lemma holds in floats at a
#: mark, it is asked at the points of this grid between the mark before and that one, and the
#: proof starts at the first where it holds. The enclosure's first steps are its dearest (the
#: attention not yet saturated), its last ones before :math:`t^*` its cheapest, so little is
#: saved on the long proofs; on the paper suite's leader-map instances (n ≤ 8, d ≤ 3) the
#: enclosure to the refined mark costs 3 % (polytope spd-3d#0, 23/8 instead of 3) to 40 %
#: (symmetric-odd#0, 11/16 instead of 1) less than to the mark, and the lemma holds there on
#: every one (on order-preserved uniform#1 and #2 the order fact does not: the proof goes on to
#: the mark).
LOOKAHEAD_STEP = Fraction(1, 16)

#: The look-ahead's balls: this share of the state's largest coordinate around each float64
#: state. The lemma must hold on every state that close (its safety margin: the float64 run's
#: own error is about 1e-10 of the state, an enclosure's radius at the marks 1e-11..1e-9), so
#: that a margin creeping to 0 (a tie in the limit) or rounding does not read as holding.
LOOKAHEAD_RADIUS = 2.0 ** -26


class _NotReached(LookupError):
    """The float64 run has no (finite) state of this variable at this mark."""


class _FloatMarks:
    """A float64 run's states at the marks as balls of relative radius
    :data:`LOOKAHEAD_RADIUS` (the enclosure's own exact balls at 0), read by a lemma's builder
    in place of an enclosure (:func:`~verify.proof._lemmas.try_lemma` reads ``group``,
    ``bits``, ``x_at``/``z_at`` and ``describe``). Never a proof: the look-ahead only."""

    def __init__(self, enclosure, run: Callable[[], dict],
                 radius: float = LOOKAHEAD_RADIUS) -> None:
        self.enclosure, self.run = enclosure, run  # the run is made when first needed
        self.group, self.bits, self.radius = enclosure.group, enclosure.bits, radius

    def _balls(self, variable: str, t) -> arb_mat:
        if Fraction(t) == 0:
            return self.enclosure.x_at(0) if variable == "x" else self.enclosure.z_at(0)
        values = self.run()[variable].get(Fraction(t))
        if values is None:
            raise _NotReached(f"{variable} at t = {t}")
        radius = self.radius * float(np.max(np.abs(values)))
        return arb_mat([[arb(float(v), radius) for v in row] for row in values])

    def x_at(self, t) -> arb_mat:
        return self._balls("x", t)

    def z_at(self, t) -> arb_mat:
        return self._balls("z", t)

    def describe(self) -> dict:
        return {}


def _finer(before: Fraction, mark: Fraction) -> list[Fraction]:
    """The points of the :data:`LOOKAHEAD_STEP` grid strictly between two marks.

    >>> [str(t) for t in _finer(Fraction(1, 2), Fraction(3, 4))]
    ['9/16', '5/8', '11/16']
    """
    k = math.floor(before / LOOKAHEAD_STEP) + 1
    return [LOOKAHEAD_STEP * j for j in range(k, math.ceil(mark / LOOKAHEAD_STEP))]


def _float_run(request, marks: list[Fraction], runs: dict, key: str = "states") -> dict:
    """The float64 states ``{"x": {t: array}, "z": {...}}`` at the marks a float64 run reached
    (finite ones only), computed once per instance and kept in ``runs[key]``."""
    if key not in runs:
        states: dict = {"x": {}, "z": {}}
        try:
            traj = simulate(request.instance, marks[-1], checkpoints=marks,
                            error_estimate=False)
        except (VerifyError, ArithmeticError, ValueError) as exc:
            runs[key], runs[f"{key} message"] = states, f"the float64 run failed: {exc}"
            return runs[key]
        for variable in ("x", "z"):
            try:
                values = traj.tokens(variable)
            except VerifyError:
                continue
            for t, state in zip(traj.times, values, strict=False):
                if np.all(np.isfinite(state)):
                    states[variable][Fraction(t)] = np.array(state, dtype=float)
        runs[key] = states
        runs[f"{key} message"] = "" if traj.success else \
            f"the float64 run stopped: {traj.message}"
    return runs[key]


def look_ahead(request, lemma: str, enclosure, marks: list[Fraction], runs: dict) -> dict:
    """Where the lemma first holds in floats: ``lemma`` asked at every mark (in order) on the
    balls of :class:`_FloatMarks` — the exact tokens at 0, then a float64 run's states (run
    only when the lemma fails at 0; ``runs`` keeps it for the next lemma) widened by
    :data:`LOOKAHEAD_RADIUS`.

    Returns a dict: ``first`` (where it first holds, as text, or ``None``: the first mark, or
    an earlier point of the finer grid (:data:`LOOKAHEAD_STEP`) after the mark before it;
    ``refined``: the failing margins at the points of the grid before it), ``reached`` (the
    last mark the run reached in order), ``after`` (the first mark not
    reached, where the proof must look on its own when ``first`` is ``None``), ``margins``
    (the failing margins by mark), ``allowance`` (the leader map, and the good triple where
    :func:`_drift_settled`: the relative radius of the widest float balls on which it holds at
    ``first`` (:func:`_allowance`), which picks the coarse enclosure; else ``None``),
    ``carried`` (the good triple where the drift will carry the enclosure on: the slack of
    both lemmas, :func:`_carried`, which picks the rung of :data:`DRIFT_RUNGS`; else ``None``)
    and ``reason`` (when it holds nowhere: the inequality that fails and its best margin).
    Deciding where to spend the enclosure's effort is all it does: a lemma holding in floats
    proves nothing.
    """
    seen = _FloatMarks(enclosure, lambda: _float_run(request, marks, runs))
    mark, reached, history, why = _first_holding(request, lemma, seen, marks)
    if mark is not None:
        first, refined, where = _refine(request, lemma, enclosure, runs,
                                        reached if lemma in REFINED_SEARCH else None, mark)
        where = where or seen
        allowance, carried = None, None
        if first > 0 and (lemma in COARSE_SEARCH or lemma == good_triple.ID):
            allowance = _allowance(request, lemma, where, first)
            if lemma == good_triple.ID and not _drift_settled(request, where, seen, first,
                                                              allowance):
                # the drift carries the enclosure on: a rung of DRIFT_RUNGS, or the fine one
                carried = _carried(request, where, seen, first, allowance)
                allowance = None
        return {"first": str(first), "reached": str(mark), "margins": history,
                "refined": refined, "allowance": allowance, "carried": carried}
    after = next((m for m in marks if reached is None or m > reached), marks[-1])
    found = {"first": None, "reached": None if reached is None else str(reached),
             "after": str(after), "margins": history}
    if reached is None or reached < marks[-1]:
        found["reason"] = runs.get("states message") or "the float64 run did not reach every mark"
        return found
    found["reason"] = "no proof tried: " + _nowhere(lemma, history, why, marks[-1])
    return found


def _drift_settled(request, where: _FloatMarks, seen: _FloatMarks, first: Fraction,
                   allowance: float) -> bool:
    """(The good triple) whether the followers' drift beside the proof will not carry the
    enclosure on (:func:`_drift_beside`), so that the proof's first enclosure may be a coarse
    one: lemma ``hyperplane-drift`` holds at :math:`t^*` on float balls as wide as the good
    triple's ``allowance`` (the coarse enclosure's balls stay narrower: decided at
    :math:`t_1 = t^*`), or it fails in floats at :math:`t^*` (``where``) and at the
    :data:`DRIFT_MARKS` marks after it (``seen``: nothing to carry it on for)."""
    wide = _FloatMarks(where.enclosure, where.run, allowance)
    if _drift_in_floats(request, wide, [first]) == (first, ""):
        return True
    return _drift_in_floats(request, where, [first])[0] is None and \
        _drift_in_floats(request, seen, _drift_marks(first))[0] is None


def _carried(request, where: _FloatMarks, seen: _FloatMarks, first: Fraction,
             allowance: float) -> dict | None:
    """(The good triple, where the followers' drift will carry the enclosure on) the slack of
    both lemmas on the look-ahead's float64 run, which picks the rung of :data:`DRIFT_RUNGS`:
    the first of :math:`t^*` (``where``) and the :data:`DRIFT_MARKS` marks after it
    (``seen``) where lemma ``hyperplane-drift`` holds in floats, the widest float balls on
    which it holds there (:func:`_allowance`), and ``allowance``, the smaller of that and the
    good triple's ``allowance`` at :math:`t^*`; ``None`` where the float64 run cannot tell
    (the drift holds at no mark it reached). Effort only, like the look-ahead."""
    for balls, times in ((where, [first]), (seen, _drift_marks(first))):
        at, why = _drift_in_floats(request, balls, times)
        if at is not None and why:
            return None  # the float64 run has no state there
        if at is not None:
            drift = _allowance(request, hyperplane_drift.ID, balls, at)
            return {"mark": str(at), "good_triple": allowance, "drift": drift,
                    "allowance": min(allowance, drift)}
    return None


def _refine(request, lemma: str, enclosure, runs: dict, before: Fraction | None,
            mark: Fraction) -> tuple[Fraction, list, _FloatMarks | None]:
    """The first point of the :data:`LOOKAHEAD_STEP` grid strictly between the mark ``before``
    (where the lemma failed in floats) and ``mark`` (where it held) at which the lemma holds
    in floats (a second float64 run, to ``mark`` only: checkpoints make the first run's
    integrator stop at each, so the grid is not in it), else ``mark``; the failing margins
    at the points before it; and the float balls it held on (``None``: those of the mark)."""
    points = [] if before is None else _finer(before, mark)
    if not points:
        return mark, [], None
    seen = _FloatMarks(enclosure, lambda: _float_run(
        request, [Fraction(0), *points, mark], runs, key=f"refine to {mark}"))
    held, _, refined, _ = _first_holding(request, lemma, seen, points)
    return (mark, refined, None) if held is None else (held, refined, seen)


def _first_holding(request, lemma: str, seen: _FloatMarks,
                   times: list[Fraction]) -> tuple[Fraction | None, Fraction | None, list, str]:
    """``lemma`` asked on the float balls ``seen`` at each of ``times`` in order, up to the
    first the float64 run has not reached: the first time it holds (``None``: none), the
    last time before it where it failed (``None``: none), the failing margins there by time,
    and the last failure's reason."""
    history, failed, why = [], None, ""
    for t in times:
        try:
            document, why = try_lemma(lemma, request.instance, seen, t)
        except _NotReached:
            break
        if document is not None:
            return t, failed, history, why
        failed = t
        history.append([float(t), failing_margins(why)])
    return None, failed, history, why


def _allowance(request, lemma: str, seen: _FloatMarks, t: Fraction) -> float:
    """The relative radius of the widest float balls around the float64 state at ``t`` on
    which the lemma still holds, among ``LOOKAHEAD_RADIUS · ALLOWANCE_STEP^k`` up to
    :data:`ALLOWANCE_MAX` (where the look-ahead saw it hold with the first): how wide a coarse
    enclosure's balls may grow (:class:`_Narrow`). Effort only, like the look-ahead."""
    allowance = radius = LOOKAHEAD_RADIUS
    while radius * ALLOWANCE_STEP <= ALLOWANCE_MAX:
        radius *= ALLOWANCE_STEP
        try:
            document, _ = try_lemma(lemma, request.instance,
                                    _FloatMarks(seen.enclosure, seen.run, radius), t)
        except (CheckFailure, ArithmeticError, ValueError):
            document = None
        if document is None:
            break
        allowance = radius
    return allowance


def _nowhere(lemma: str, history: list, why: str, last: Fraction) -> str:
    """Why the lemma holds at no mark in floats, with the best margin of each inequality that
    fails at the last mark."""
    head = (f"lemma {lemma} fails at every t1 = 0, {float(MARK_STEP):g}, ..., {float(last):g} "
            f"(the exact tokens at 0, a float64 run in balls of relative radius "
            f"{LOOKAHEAD_RADIUS:.2g} after)")
    last_failing = history[-1][1] if history else {}
    if not last_failing:
        return f"{head}: at t1 = {float(last):g}, {why}"
    parts = []
    for name in last_failing:
        t_best, best = max(((t, m[name]) for t, m in history if name in m),
                           key=lambda pair: pair[1])
        parts.append(f"inequality {name} (best margin {best:.3g} at t1 = {t_best:g}, "
                     f"{last_failing[name]:.3g} at t1 = {float(last):g})")
    return f"{head}: {'; '.join(parts)}"


def _failed(lemma: str, why: str, tried: list, history: list, enclosure, ahead: dict,
            stopped: dict | None = None) -> dict:
    failed = {"proved": False, "reason": f"{lemma}: {why}", "marks_tried": tried,
              "margins": history, "enclosure": enclosure.describe(), "look_ahead": ahead}
    if stopped is not None:
        failed["stopped_early"] = stopped
    return failed


def _with_facts(request, document: dict, plans: list, enclosure, t1: Fraction):
    facts, enclosure_facts = [], []
    for _, templates in plans:
        for fact in templates:
            fact = dict(fact)
            if fact["fact"] == "order-after-t1":
                fact["offsets"] = _offsets(document)
                before = _order_before(enclosure, t1)
                if before is None:
                    return None, "the order on [0, t1] is not resolved by the enclosure."
                enclosure_facts.append(before)
            facts.append(fact)
    document = {**document, "claim": request.claim.id, "instance_name": request.instance.name,
                "facts": facts, "enclosure_facts": enclosure_facts,
                "conclusions_proved": [f"{spec.where} ({spec.type})" for spec, _ in plans]}
    check = check_certificate(document)
    if not check.valid:
        return None, "the checker rejects the certificate: " + "; ".join(check.reasons)
    return document, ""


def _offsets(document: dict) -> dict:
    """``y_j(t1) = z_j - z_leader`` as ball text, for the order fact (d = 1)."""
    leader_of = document["conclusions"]["leader_of"]
    with ctx.workprec(int(document["enclosure"]["bits"])):
        z = [parse_ball(row[0]) for row in document["enclosure"]["tokens"]]
        return {str(j): ball_text(z[j] - z[a]) for j, a in enumerate(leader_of)
                if a is not None and a != j}


#: How much finer a step is cut when a gap is not positive in its first cut.
FINER = 16


def _order_before(enclosure, t1: Fraction, pieces: int = 4) -> dict | None:
    """(``d = 1``) the order of the tokens on ``[0, t1]`` from the steps' dense enclosures
    (each step cut in ``pieces``, a step where a gap is not positive once more in
    ``FINER · pieces``: long steps move each token's box by more than a narrow gap): the
    smallest lower bound of every consecutive gap of the rescaled tokens, or ``None`` when one
    is not positive."""
    instance = enclosure.instance
    order = sorted(range(instance.n), key=lambda i: instance.x0[i, 0])

    def gaps(step, cuts: int) -> list[float]:
        out = []
        for k in range(cuts):
            box = step.over(step.h * k / cuts, step.h * (k + 1) / cuts)
            out += [float((box[j, 0] - box[i, 0]).lower())
                    for i, j in zip(order, order[1:], strict=False)]
        return out

    smallest = None
    for step in enclosure.steps:
        if step.t0 >= t1:
            break
        lower = gaps(step, pieces)
        if not all(gap > 0 for gap in lower):
            lower = gaps(step, FINER * pieces)
            if not all(gap > 0 for gap in lower):
                return None
        smallest = min(lower) if smallest is None else min(smallest, *lower)
    return {"fact": "order on [0, t1]", "basis": "enclosure",
            "statement": "every consecutive gap z_{i+1} - z_i of the sorted tokens stays "
                         f"above {smallest:.3g} on [0, t1] (each step's dense enclosure, cut in "
                         f"{pieces}, or {FINER * pieces} where a gap needs it).",
            "smallest_gap": smallest}


#: When lemma ``hyperplane-drift`` decides nothing at a good-triple proof's t1, it is tried at
#: up to ``DRIFT_MARKS`` later marks (multiples of ``MARK_STEP``) of the same enclosure,
#: carried on with at most ``DRIFT_SHARE`` times the CPU the proof took, or ``DRIFT_SECONDS``
#: if more: effort beside the verdict, never the verdict. Measured on the hyperplanes claim:
#: the paper's figures are decided at 5/2 for 0.04–0.13 of their proof's CPU (proved at
#: t1 = 21/16 … 15/8, or at 3/2 … 2 before the refined look-ahead); the two
#: random-good-triples stayed undecided after 10 CPU s (the floor before, 20 of the 33 CPU s
#: spent on them) and after 76 without a limit. The enclosure is carried on only to the marks
#: from the first where the lemma holds in floats (:func:`_drift_in_floats`): on the paper's
#: figures 5/2 (where the enclosure decides it), on the random-good-triples none of the four
#: (lead-plus / lead-minus fail there in floats too), which saved the 5.3 of the benchmark's
#: 15.1 CPU s the drift took on them (prove_vs_estimate at main 6e1b0e6) and decided nothing.
DRIFT_MARKS = 4
DRIFT_SHARE = 0.5
DRIFT_SECONDS = 2.0


def _drift_marks(t1: Fraction) -> list[Fraction]:
    """The :data:`DRIFT_MARKS` marks after ``t1`` on the marks' grid (wherever ``t1`` lies).

    >>> [str(t) for t in _drift_marks(Fraction(1, 4))]
    ['1/2', '1', '3/2', '2']
    """
    first = (t1 // MARK_STEP + 1) * MARK_STEP
    return [first + k * MARK_STEP for k in range(DRIFT_MARKS)]


def _drift_in_floats(request, seen: _FloatMarks, times: list[Fraction]) -> \
        tuple[Fraction | None, str]:
    """Lemma ``hyperplane-drift`` asked on the float balls ``seen`` at each of ``times`` in
    order: the first time where it holds, or where the float64 run has no state (it cannot
    tell; then the reason says so), else ``None`` and the last failure's reason. Like the
    look-ahead, it only decides where an enclosure's effort goes (whether to carry one on for
    the drift), never a verdict."""
    why = ""
    for t in times:
        try:
            document, why = try_lemma(hyperplane_drift.ID, request.instance, seen, t)
        except _NotReached:
            return t, f"the float64 run has no state at t = {t}"
        except (CheckFailure, ArithmeticError, ValueError) as exc:
            document, why = None, str(exc)
        if document is not None:
            return t, ""
    return None, why


def _drift_floats(request, enclosure, runs: dict, later: list[Fraction]) -> _FloatMarks:
    """The float balls the drift's look-ahead reads: the proof's look-ahead run (``runs``)
    when it was made, else a float64 run of its own to the last of ``later``."""
    def run() -> dict:
        if "states" in runs:
            return runs["states"]
        return _float_run(request, [Fraction(0), *later], runs, key=f"drift to {later[-1]}")
    return _FloatMarks(enclosure, run)


def _drift_beside(request, enclosure, t1: Fraction, expired: _Clock,
                  runs: dict | None = None, rung: float | None = None) -> tuple[dict, dict | None]:
    """After a good-triple proof: lemma ``hyperplane-drift`` on the same enclosure at the same
    ``t1`` (milliseconds, no new enclosure) — what the followers of each trapped side do, which
    Theorem 4.2 and the hyperplanes claim leave open ("the other coordinates need not
    converge"). Where it decides nothing at ``t1`` (the good triple can hold before the followers
    prefer one leader), the same enclosure is carried on to at most :data:`DRIFT_MARKS` later
    marks (multiples of ``MARK_STEP``), within the proof's budget (``expired``) and at most
    :data:`DRIFT_SHARE` of the CPU the proof took (or :data:`DRIFT_SECONDS`), and the lemma
    tried at each from the first where it holds on the float balls of the look-ahead's float64
    run (``runs``; where it holds at none of them, the enclosure is not carried on: effort
    only, like the look-ahead); the record's ``t1`` is the mark where it was decided, its
    ``cpu_seconds`` those of the budget's clock. When the proof's enclosure is a rung of
    :data:`DRIFT_RUNGS` (``rung``: the relative radius its balls must stay within), it is
    carried on only while its balls stay that narrow; where the drift is still undecided on it
    at those marks, the fine enclosure (``SETTINGS[0]``) goes from 0 to them with its own
    budget (:data:`FALLBACK_SHARE`), on the same clock, and the lemma is tried on it; the
    record's ``fallback`` says what the rung and the fine enclosure did, and its
    ``cpu_seconds`` count both. Returns the record for the proof's
    evidence (``behaviour`` overall and per side: ``drifts``, ``turns``, ``converges`` or
    ``undecided``, with the reason when undecided) and the lemma's certificate document, or
    ``None`` when the lemma does not hold there or the checker rejects it. It never changes
    the verdict: the claim does not state it."""
    spent = expired.spent()
    seconds = max(DRIFT_SECONDS, DRIFT_SHARE * spent)
    wide = _Narrow(lambda: expired() or expired.spent() - spent >= seconds, enclosure,
                   math.inf if rung is None else rung)

    mark = t1
    document, why = _drift_at(request, enclosure, mark)
    later = _drift_marks(t1) if document is None else []
    if later:
        # the marks before the first where the lemma holds in floats are skipped; where it
        # holds at none of them the enclosure is not carried on at all (on the paper suite's
        # random-good-triples: undecided, as after the 76 CPU s they once had)
        start, in_floats = _drift_in_floats(request, _drift_floats(
            request, enclosure, {} if runs is None else runs, later), later)
        if start is None:
            why += (f"; it holds in floats at none of the {DRIFT_MARKS} later marks t1 = "
                    f"{later[0]}..{later[-1]} ({in_floats}), so the enclosure was not carried "
                    "on")
        later = [] if start is None else [m for m in later if m >= start]
    tried = f" (tried at t1 = {t1} and at {', '.join(map(str, later))})"
    if later:
        mark, document, why, stopped = _carry(request, enclosure, mark, later, wide, why)
        if document is None:
            why += (f"; carried on with at most {seconds:.3g} CPU s beside the proof, {stopped}"
                    if stopped else tried)
    fallback = None
    if document is None and later and rung is not None:
        # it holds in floats at these marks but not on the rung: the fine enclosure from 0
        began, own = expired.spent(), max(DRIFT_SECONDS, FALLBACK_SHARE * spent)
        fallback = {"rung": _coarse_record(enclosure, why), "own_cpu": round(own, 3)}
        fine = Enclosure(request.instance, bits=SETTINGS[0]["bits"], tol=SETTINGS[0]["tol"])
        mark, document, last, stopped = _carry(
            request, fine, t1, later, lambda: expired() or expired.spent() - began >= own, "")
        fallback.update(enclosure=fine.describe(), cpu_seconds=round(expired.spent() - began, 3))
        if document is None:
            why = (f"undecided on the enclosure of the proof (tol {enclosure.tol:.3g}: {why}); "
                   f"the fine enclosure from 0, with at most {own:.3g} CPU s of its own, "
                   + (f"did not decide it either: {stopped}" if stopped else
                      f"did not decide it either: {last}{tried}"))
        else:
            why = last
    record = {"lemma": hyperplane_drift.ID, "t1": str(mark),
              "cpu_seconds": round(expired.spent() - spent, 3)}
    if fallback is not None:
        record["fallback"] = fallback
    if document is None:
        return {**record, "behaviour": "undecided", "reason": why}, None
    conclusions = document["conclusions"]
    overall = conclusions["behaviour"]
    witnesses = conclusions["drifting"] + conclusions.get("turning", [])
    sides = {}
    for side, leader in conclusions["leaders"].items():
        followers = [k for k in conclusions[side] if k != leader]
        certified = [w for w in witnesses if w["side"] == side]
        behaviour = overall if overall == "converges" or certified else "undecided"
        sides[side] = {"leader": leader, "followers": followers, "behaviour": behaviour,
                       "certified": [w["follower"] for w in certified]}
        if certified and overall == "drifts":
            sides[side]["rates"] = sorted({f"{float(parse_ball(w['rate']).mid()):.3g}"
                                           for w in certified})
    return {**record, "behaviour": overall, "sides": sides}, document


def _carry(request, enclosure, mark: Fraction, marks: list[Fraction], stop: Callable[[], bool],
           why: str) -> tuple[Fraction, dict | None, str, str | None]:
    """``enclosure`` advanced to each of ``marks`` in turn (``stop`` ends it) and lemma
    ``hyperplane-drift`` tried at each until it decides: the last mark where it was tried
    (``mark`` where none), the lemma's certificate document (``None``: undecided), the last
    reason it gave (``why`` where none), and, when the enclosure stopped before a mark, where
    and why (else ``None``)."""
    for later_mark in marks:
        if not enclosure.advance(later_mark, expired=stop):
            reason = getattr(stop, "wide", None) or enclosure.message
            return mark, None, why, f"the enclosure stopped before t1 = {later_mark} ({reason})"
        mark = later_mark
        document, why = _drift_at(request, enclosure, mark)
        if document is not None:
            return mark, document, why, None
    return mark, None, why, None


def _drift_at(request, enclosure, t1: Fraction) -> tuple[dict | None, str]:
    """Lemma ``hyperplane-drift`` on the enclosure at ``t1``: its certificate document as the
    independent checker accepted it, or ``None`` and why not."""
    try:
        document, why = try_lemma(hyperplane_drift.ID, request.instance, enclosure, t1)
    except CheckFailure as exc:
        return None, str(exc)
    if document is None:
        return None, why
    document = {**document, "claim": request.claim.id,
                "instance_name": request.instance.name, "facts": [], "enclosure_facts": []}
    check = check_certificate(document)
    if not check.valid:
        return None, "the checker rejects it: " + "; ".join(check.reasons)
    return document, why


def _drift_sentence(drift: dict) -> str:
    """The drift record as a sentence of the proof's statement."""
    if drift["behaviour"] == "undecided" and "sides" not in drift:
        return (f" Beside the claim, lemma {drift['lemma']} decides nothing about the followers "
                f"({drift['reason'].rstrip('.')}).")
    parts = []
    for side, s in drift["sides"].items():
        how = {"drifts": "drift away along their hyperplane like e^(" + ", ".join(
                   s.get("rates", [])) + " t)",
               "turns": "turn about their leader forever",
               "converges": "converge"}.get(s["behaviour"], "are undecided")
        count = len(s["certified"]) if s["behaviour"] in ("drifts", "turns") else \
            len(s["followers"])
        parts.append(f"side {side} (leader {s['leader']}): {count} of {len(s['followers'])} "
                     f"followers {how}")
    return (f" Beside the claim (which does not state it), lemma {drift['lemma']} at t1 = "
            f"{float(Fraction(drift['t1'])):g} certifies: {'; '.join(parts)} — its certificate "
            "is written beside this one.")


def _proved(request, result: InstanceResult, lemma: str, plans: list, outcome: dict):
    document = outcome.pop("document")
    companion = outcome.pop("drift_document", None)
    with ctx.workprec(int(document["enclosure"]["bits"])):
        smallest = min(float(parse_ball(q["margin"]).lower()) for q in document["inequalities"])
    t1 = float(Fraction(outcome["t1"]))
    how = (f"rigorous enclosure on [0, {t1:g}] ({outcome['enclosure']['steps']} Taylor steps, "
           f"{outcome['enclosure']['bits']} bits), then lemma {lemma} at t1 = {t1:g}" if t1 > 0
           else f"lemma {lemma} on the exact initial tokens (t1 = 0)")
    statement = (f"proved on this instance (for all t ≥ 0): {how} (smallest margin "
                 f"{smallest:.3g}); "
                 f"{len(document['facts'])} fact(s) give "
                 f"{', '.join(document['conclusions_proved'])}; the independent checker "
                 "accepts the certificate.")
    if "drift" in outcome:
        statement += _drift_sentence(outcome["drift"])
    certificate = {"kind": "proof", "statement": statement, "lemma": lemma, "t1": outcome["t1"],
                   "document": document}
    if companion is not None:
        certificate["companions"] = [{"lemma": hyperplane_drift.ID, "document": companion}]
    return proved(result, statement, evidence={**result.evidence, "proof": outcome,
                                               "estimate": {"verdict": result.verdict.value,
                                                            "reason": result.reason}},
                  margin=smallest, unit="smallest lemma margin", certificate=certificate)
