"""Expected seconds of a run's instances, to order the work longest first — never a verdict.

:func:`verify.run.run_claims` hands the instances to its workers longest first, so that no
worker idles at the end while the other holds a long instance. :func:`expected_cost` is a
static guess (the size of a field evaluation times the horizon, more in arbitrary precision or
with an MLP); it knows nothing of proofs (an attempt that fails uses its whole budget, one that
succeeds may take a few seconds) or of an extension made again in arbitrary precision, which
together decide the suite's longest instances. An earlier run of the same instances knows:
:func:`recorded_seconds` reads the seconds its records hold (``instances.jsonl`` of the newest
runs in the same folder, made with the same parameters and proof budget, each record of the
same claim file, precision and horizon), and :func:`expected_seconds` uses them where they
exist and elsewhere the static guess, scaled to seconds by the recorded instances' median
ratio. Only the order of the work depends on them: every instance is judged by the same code
whatever the order, and the results are stored and reported in the claims' order.

Examples
--------
>>> from verify.claim import load_claims
>>> from verify.cli import default_claims_dir
>>> from verify.run._tasks import Task
>>> claims = {c.id: c for c in load_claims(default_claims_dir())}
>>> slow, quick = Task(claims["polytope"], "paper-uniform-2d", 0), Task(claims["mlp"],
...                                                                      "relu-identity", 0)
>>> static = expected_seconds([slow, quick], {})
>>> static[slow.key] > static[quick.key]
True
>>> seen = {quick.key: (*_signature(quick), 90.0)}  # an earlier run's record
>>> measured = expected_seconds([slow, quick], seen)
>>> measured[quick.key], round(measured[slow.key])  # the other scaled like the recorded one
(90.0, 300)
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path

from verify.exact.plain import to_plain
from verify.run._store import INSTANCES_FILE, RUN_FILE
from verify.run._tasks import Task

__all__ = ["expected_cost", "expected_seconds", "recorded_seconds", "RECENT_RUNS"]

#: How many of the newest earlier runs :func:`recorded_seconds` reads (each store is a few MB:
#: the exact inputs of every instance).
RECENT_RUNS = 3

#: Relative cost of an integration in arbitrary precision against float64 (run and reference),
#: and of a field with an MLP (its extra products per evaluation). Measured on the suite's
#: no-proof run of 5ea38c0: with these factors the mlp instances' CPU seconds per unit of cost
#: are 0.3–1.3× the median over all instances, ReLU (no reference run) and tanh alike.
_ARB_COST, _MLP_COST = 8, 4


def _effective(task: Task) -> tuple[object, Fraction]:
    family = task.claim.family(task.family)
    precision = task.precision if task.precision is not None else family.precision
    horizon = Fraction(task.horizon if task.horizon is not None else family.horizon)
    return precision, horizon


def expected_cost(task: Task) -> float:
    """A rough relative cost of ``task``, only to order the work (longest first): the size of
    one field evaluation ``n²·d`` times the horizon, times :data:`_ARB_COST` for a family in
    arbitrary precision and :data:`_MLP_COST` with an MLP. A family of real weights (whose
    ``n``, ``d`` are those of its head space) counts like any other.

    >>> from verify.claim import load_claims
    >>> from verify.cli import default_claims_dir
    >>> claims = {c.id: c for c in load_claims(default_claims_dir())}
    >>> heads = Task(claims["real-heads"], "minilm-fastest-head", 0)
    >>> small = Task(claims["polytope"], "paper-uniform-2d", 0)
    >>> expected_cost(heads) > 10 * expected_cost(small)
    True
    """
    family = task.claim.family(task.family)
    precision, horizon = _effective(task)
    cost = family.n ** 2 * family.d * float(horizon or 1)
    if precision != "float64":
        cost *= _ARB_COST
    if family.model.get("mlp"):
        cost *= _MLP_COST
    return cost


def _signature(task: Task) -> tuple:
    """What a recorded instance must share with ``task`` for its seconds to count."""
    precision, horizon = _effective(task)
    return task.claim.sha256, to_plain(precision), str(horizon)


def expected_seconds(tasks: list[Task], recorded: Mapping[str, tuple]) -> dict[str, float]:
    """``{task.key: expected seconds}``: the seconds ``recorded`` (:func:`recorded_seconds`)
    holds for a task of the same claim file, precision and horizon, else its
    :func:`expected_cost` times the median of seconds/cost over the recorded tasks (1 when
    none is recorded: then only the static guess orders)."""
    seen = {t.key: recorded[t.key][-1] for t in tasks
            if t.key in recorded and tuple(recorded[t.key][:-1]) == _signature(t)}
    ratios = [seen[t.key] / expected_cost(t) for t in tasks if t.key in seen]
    scale = statistics.median(ratios) if ratios else 1.0
    return {t.key: seen[t.key] if t.key in seen else scale * expected_cost(t) for t in tasks}


def recorded_seconds(folder: str | Path, *, parameters: dict, proof: float | None,
                     exclude: str | Path | None = None,
                     runs: int = RECENT_RUNS) -> dict[str, tuple]:
    """``{key: (claim_sha256, precision, horizon, seconds)}`` of the instances finished by the
    newest ``runs`` earlier runs in ``folder`` (its subfolders ``<run-id>/``, newest first by
    their id, which begins with the UTC time) that were made with these ``parameters`` and
    this proof budget ``proof`` (``run.json``); the newest record of a key wins; its CPU
    seconds (``cpu_seconds``; a record without them: its wall seconds). ``exclude``:
    a run folder to leave out (the run being made). Unreadable stores are skipped: this only
    orders work."""
    folder = Path(folder)
    try:
        candidates = sorted((p for p in folder.iterdir() if (p / RUN_FILE).is_file()),
                            key=lambda p: p.name, reverse=True)
    except OSError:
        return {}
    skip = None if exclude is None else Path(exclude).resolve()
    found: dict[str, tuple] = {}
    used = 0
    for run in candidates:
        if used == runs:
            break
        if skip is not None and run.resolve() == skip:
            continue
        try:
            stored = json.loads((run / RUN_FILE).read_text())
            if stored.get("parameters") != parameters or "proof_seconds" not in stored or \
                    stored["proof_seconds"] != proof:
                continue
            lines = (run / INSTANCES_FILE).read_text().splitlines()
        except (OSError, ValueError):
            continue
        used += 1
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            seconds = record.get("cpu_seconds", record.get("seconds"))
            if record.get("key") in found or record.get("lost") or \
                    not isinstance(seconds, int | float):
                continue
            found[record["key"]] = (record.get("claim_sha256"), record.get("precision"),
                                    record.get("horizon"), float(seconds))
    return found
