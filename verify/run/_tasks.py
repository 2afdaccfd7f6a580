"""One unit of work of a run: a claim on one instance, with the re-check of a violation.

:func:`run_task` runs in a worker process (or a Dask worker), so it takes and returns plain,
picklable values: a :class:`Task` in, a record dict out (see :func:`run_task`).  It never raises:
an exception in drawing the instance, deciding the hypotheses or the check becomes an
``error`` result carrying the error message (never *inconclusive*: the numerics did not fail,
the instance could not be judged; the run then exits non-zero).

Examples
--------
>>> higher_precision("float64", mu=1.0, horizon=12)
'auto'
>>> higher_precision(30, mu=1.0, horizon=12)
50
>>> longer_checkpoints(33), [str(t) for t in longer_checkpoints((0, 1, 2))]
(49, ['0', '3/2', '3'])
"""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass, fields, is_dataclass, replace
from fractions import Fraction

from verify.claim import (
    CheckRequest,
    InstanceResult,
    InstanceVerdict,
    judge_scope,
    recheck_record,
)
from verify.errors import OutOfScope, UserFunctionError
from verify.exact.plain import to_plain
from verify.flow.simulate import _growth_rate, choose_bits, scaled_checkpoints
from verify.judge import RECHECK_FACTOR, failed, judge_request, shared_runs
from verify.model.instance_file import instance_to_toml
from verify.numerics import bits_to_digits
from verify.proof import certify_drift, certify_masked, prove_result
from verify.run._budget import judge_within

__all__ = ["Task", "run_task", "run_tasks", "same_instance", "judge_on_instance", "new_record",
           "instance_fields",
           "higher_precision", "longer_checkpoints", "exact_inputs", "RECHECK_HORIZON_FACTOR",
           "RECHECK_EXTRA_DIGITS"]

#: A violation is re-checked at the horizon × 3/2: the factor the engine re-checks with.
RECHECK_HORIZON_FACTOR = RECHECK_FACTOR
RECHECK_EXTRA_DIGITS = 20


@dataclass(frozen=True)
class Task:
    """What a worker needs to judge ``claim`` on instance ``k`` of family ``family``.

    ``instances``, ``seed``, ``precision``, ``horizon`` are the run's overrides (``None``: the
    family's own); ``budget`` (a :class:`~verify.run._budget.Budget`) limits the instance's
    wall time and memory.
    """

    claim: object
    family: str
    k: int
    seed: int | None = None
    precision: object = None
    horizon: Fraction | None = None
    budget: object = None

    @property
    def key(self) -> str:
        """``"<claim>/<family>#<k>"``: the identity of the result in the store."""
        return f"{self.claim.id}/{self.family}#{self.k}"


def higher_precision(precision: object, *, mu: float, horizon: object) -> object:
    """The re-check precision: float64 → ``"auto"``; ``"auto"`` → what ``"auto"`` picks at
    ``horizon`` plus :data:`RECHECK_EXTRA_DIGITS` digits; ``d`` digits → ``d + 20``."""
    if precision == "float64":
        return "auto"
    if precision == "auto":
        return int(math.ceil(bits_to_digits(choose_bits(mu, float(horizon))))) \
            + RECHECK_EXTRA_DIGITS
    return int(precision) + RECHECK_EXTRA_DIGITS


def longer_checkpoints(checkpoints: object) -> object:
    """Checkpoints for the re-check's horizon × 3/2
    (:func:`verify.flow.simulate.scaled_checkpoints`)."""

    return scaled_checkpoints(checkpoints, RECHECK_HORIZON_FACTOR)


def _strings(matrix) -> list:
    return [[str(Fraction(x)) for x in row] for row in matrix]


def exact_inputs(instance) -> dict:
    """The instance's exact inputs, every number an exact rational string (``"p/q"``)."""
    model = instance.model
    heads = [{"V": _strings(h.V), "Q": _strings(h.Q), "K": _strings(h.K)} for h in model.heads]
    out = {"heads": heads, "x0": _strings(instance.x0), "model": to_plain(model.describe())}
    if model.has_mlp:
        out["mlp"] = {"W": _strings(model.mlp.W), "activation": model.mlp.activation}
    return out


def _error_result(instance: str, family: str, seed, what: str, exc: BaseException,
                  lost: bool = False) -> dict:
    """The record fields of an instance that raised: *error* (its input cannot be judged), or
    *inconclusive* when nothing says the input is at fault: its worker was ``lost`` (recomputed
    on resume) or memory ran out."""
    message = f"{type(exc).__name__}: {exc}"
    result = failed(instance, family, seed, what, message,
                    input_at_fault=not (lost or isinstance(exc, MemoryError)))
    return {"result": result, "exception": message,
            "traceback": "".join(traceback.format_exception(exc))[-4000:]}


def _judge(request: CheckRequest) -> InstanceResult:
    return judge_request(request)


def run_task(task: Task) -> dict:
    """Judge one instance; never raises, except :class:`~verify.errors.UserFunctionError` (a
    function named in the claim file breaks its contract: a usage error).

    Returns
    -------
    dict
        ``key``, ``claim``, ``claim_sha256``, ``family``, ``k``, ``seed``, ``inputs`` (exact
        strings), ``instance_toml`` (an instance file reproducing the instance), ``precision``,
        ``horizon``, ``result`` (:meth:`InstanceResult.to_json`), ``exception``, ``traceback``,
        ``counterexample_toml`` (for a confirmed violation), ``seconds`` (wall clock) and
        ``cpu_seconds`` (of the worker process: what orders the next run's work,
        :mod:`verify.run._costs`, whatever the machine's load).
    """
    start, cpu = time.perf_counter(), time.process_time()
    claim = task.claim
    family = claim.family(task.family)
    seed = family.seed_of(task.k, task.seed)
    name = f"{family.name}#{task.k}"
    precision = task.precision if task.precision is not None else family.precision
    horizon = Fraction(task.horizon) if task.horizon is not None else Fraction(family.horizon)
    record = new_record(claim, family.name, task.k, seed, precision, horizon)

    def finish(result: InstanceResult, **extra) -> dict:
        record.update(extra)
        record["result"] = result.to_json()
        record["seconds"] = time.perf_counter() - start
        record["cpu_seconds"] = time.process_time() - cpu
        return record

    try:
        instance = family.instance(task.k, task.seed)
        record.update(instance_fields(claim, instance, horizon, precision))
    except OutOfScope as exc:  # e.g. real weights not installed: said, never counted
        return finish(InstanceResult(name, family.name, seed, InstanceVerdict.OUT_OF_SCOPE,
                                     f"the instance cannot be built: {exc}"))
    except Exception as exc:  # noqa: BLE001 - a run never crashes on one instance
        return finish(**_error_result(name, family.name, seed, "drawing the instance", exc))
    result, extra = judge_within(task.budget, lambda: judge_on_instance(
        claim, family, instance, seed=seed, horizon=horizon, checkpoints=family.checkpoints,
        precision=precision))
    return finish(result, **extra)


def run_tasks(tasks: tuple[Task, ...]) -> list[dict]:
    """:func:`run_task` of each of ``tasks`` in turn, in one worker, with their first runs
    shared (:func:`verify.judge.shared_runs`): for tasks of one :func:`same_instance` key,
    whose claims judge the same instance, each run is integrated once. Raises what
    :func:`run_task` raises (the runner then stores every task of the bundle as lost)."""
    with shared_runs():
        return [run_task(task) for task in tasks]


def same_instance(task: Task) -> str:
    """Equal for tasks that draw the same instance (their families equal but for their
    descriptions and counts: instance ``k`` is drawn alike) at the same horizon, checkpoints,
    precision and seed: the runner gives them to one worker (:func:`run_tasks`). Only groups
    them: whether a run is shared is decided on the exact instance and arguments
    (:func:`verify.judge.shared_runs`)."""
    family = task.claim.family(task.family)
    if not is_dataclass(family):
        return task.key
    spec = {f.name: getattr(family, f.name) for f in fields(family)
            if f.name not in ("description", "count")}
    return repr((type(family).__name__, spec, task.k, task.seed, task.precision, task.horizon))


def new_record(claim, family: str, k: int, seed: int | None, precision: object,
               horizon: object) -> dict:
    """The fields every instance record starts with (the run's store, the reports); the
    instance's fields (:func:`instance_fields`) and the result are added when known."""
    return {"key": f"{claim.id}/{family}#{k}", "claim": claim.id, "claim_sha256": claim.sha256,
            "family": family, "k": k, "seed": seed, "inputs": None, "instance_toml": None,
            "precision": to_plain(precision), "horizon": None if horizon is None
            else str(horizon), "exception": None, "traceback": None,
            "counterexample_toml": None}


def instance_fields(claim, instance, horizon: object, precision: object) -> dict:
    """``inputs`` (exact strings) and ``instance_toml`` (a file reproducing the instance)."""

    return {"inputs": exact_inputs(instance), "instance_toml": instance_to_toml(
        instance, {"horizon": str(horizon), "precision": precision},
        description=f"{claim.id} ({claim.label}), instance {instance.name}")}


def judge_on_instance(claim, family, instance, *, seed: int | None, horizon: Fraction,
                      checkpoints: object, precision: object,
                      recheck: bool = True) -> tuple[InstanceResult, dict]:
    """Decide the scope, judge the claim's conclusions (:func:`verify.judge.judge_request`),
    try to prove the verdict on the instance (:func:`verify.proof.prove_result`: a rigorous
    enclosure and a trapping lemma, within the proof budget: basis enclosure or certificate)
    and re-check a violation on a rigorous basis (no other can refute); never raises, except
    :class:`~verify.errors.UserFunctionError` (a usage error of the claim file).

    ``recheck=False`` returns the first run's verdict as it is (the shrinker's oracle, whose
    final answer is re-checked by its caller).

    ``family`` is anything with a ``name`` (a :class:`~verify.claim.Family`, or the search's
    stand-in).  Returns the result and ``{"exception", "traceback"}`` for an error or
    ``{"counterexample_toml"}`` for a violation confirmed by the re-check at higher precision
    and a longer horizon.
    """
    name = instance.name
    try:
        out = judge_scope(claim.hypotheses, instance, family=family.name, seed=seed)
    except Exception as exc:  # noqa: BLE001
        failed = _error_result(name, family.name, seed, "deciding the hypotheses", exc)
        return failed.pop("result"), failed
    if out is not None:
        return out, {}
    request = CheckRequest(claim, family, instance, seed, horizon, checkpoints, precision,
                           dict(claim.parameters))
    try:
        result = certify_masked(request, _judge(request))  # exact, cheap: also in the oracle
        result = certify_drift(request, result)  # an enclosure: proofs on; also in the oracle
        if recheck:  # prove the verdict on the instance (the shrinker's oracle does not)
            result = prove_result(request, result)
    except UserFunctionError:  # the claim file is wrong: a usage error, not a verdict
        raise
    except Exception as exc:  # noqa: BLE001
        failed = _error_result(name, family.name, seed, "judging the conclusions", exc)
        return failed.pop("result"), failed
    if not recheck or not result.rigorous_violation:
        return result, {}  # only a violation on a rigorous basis can refute: re-check it
    return _recheck(result, request, instance)


def _recheck(result: InstanceResult, request: CheckRequest,
             instance) -> tuple[InstanceResult, dict]:
    try:
        mu = _growth_rate(instance.model)
    except Exception:  # noqa: BLE001 - only sizes the precision
        mu = 1.0
    horizon = request.horizon * RECHECK_HORIZON_FACTOR
    precision = higher_precision(request.precision, mu=mu, horizon=horizon)
    checkpoints = longer_checkpoints(request.checkpoints)
    again = replace(request, horizon=horizon, precision=precision, checkpoints=checkpoints,
                    recheck=True)
    try:
        rerun = certify_drift(again, certify_masked(again, _judge(again)))
    except UserFunctionError:
        raise
    except Exception as exc:  # noqa: BLE001
        rerun = _error_result(result.instance, result.family, result.seed,
                              "the re-check", exc)["result"]
    result = replace(result, rechecked=recheck_record(rerun, precision=precision,
                                                      horizon=horizon))
    if rerun.verdict is not InstanceVerdict.VIOLATED:
        return result, {}
    simulation = {"horizon": str(horizon), "precision": precision}
    if isinstance(checkpoints, int):
        simulation["checkpoints"] = checkpoints
    reason = " ".join(rerun.reason.split())
    text = instance_to_toml(instance, simulation, description=(
        f"Counterexample to {request.claim.id} ({request.claim.label}), instance "
        f"{result.instance}: {reason}"))
    return result, {"counterexample_toml": text}
