r"""``results.json``: the machine-readable record of a run, its schema and a validator.

:func:`build_results` turns a :class:`verify.run.RunResult` into a plain dict
(``schema_version`` :data:`SCHEMA_VERSION`): the run parameters, library versions, every claim
(id, label, kind, statement, hypotheses, uses, SHA-256 of its file), every instance (family,
seed, exact inputs as rational strings, an instance file reproducing it, verdict, reason,
evidence, margin, error estimate, re-check, counterexample) and the claim verdicts.
:data:`RESULTS_SCHEMA` describes it in a JSON-Schema-like dict and :func:`validate_results`
checks a dict against it with a small validator (no ``jsonschema`` needed).
:func:`write_reports` writes ``results.json``, ``results.schema.json``, ``report.md`` and
``report.html`` into the run's directory.

Examples
--------
>>> problems = results_problems({"schema_version": SCHEMA_VERSION})
>>> problems[0]
"$: missing required key 'run_id'"
>>> check_schema({"type": "integer", "minimum": 0}, -1)
['$: -1 < minimum 0']
"""

from __future__ import annotations

import json
import platform
import re
from importlib import metadata
from pathlib import Path

from verify.atomic import write_atomic
from verify.claim import InstanceResult, effective_verdict, judge_claim
from verify.errors import InvalidArgument
from verify.exact.plain import to_plain
from verify.report._weights_section import CLAIM_ID, real_weights_part, weights_side_jobs
from verify.report.html import (
    claim_figure_job,
    draw_ahead,
    graph_figure_job,
    paper_figure_jobs,
    paper_figures_cache,
    render_html,
)
from verify.report.markdown import render_markdown

__all__ = ["SCHEMA_VERSION", "RESULTS_SCHEMA", "build_results", "validate_results",
           "results_problems", "check_schema", "library_versions", "write_reports",
           "load_results", "report_side_jobs"]

SCHEMA_VERSION = 2
_VERDICTS = ["holds", "violated", "inconclusive", "out-of-scope", "error"]
_NUM = ["number", "string", "null"]  # floats; "inf"/"nan" and exact "p/q" are strings
_MATRIX = {"type": "array", "items": {"type": "array", "items": {"type": "string",
                                                                 "pattern": r"^-?\d+(/\d+)?$"}}}
_STR, _STR_NULL = {"type": "string"}, {"type": ["string", "null"]}


def _obj(required: dict, optional: dict | None = None, extra: bool = False) -> dict:
    return {"type": "object", "required": list(required),
            "properties": {**required, **(optional or {})}, "additionalProperties": extra}


_INSTANCE = _obj({
    "claim": _STR, "instance": _STR, "family": _STR, "k": {"type": "integer", "minimum": 0},
    "seed": {"type": ["integer", "null"]},
    "inputs": {"type": ["object", "null"], "additionalProperties": True, "properties": {
        "heads": {"type": "array", "items": _obj({"V": _MATRIX, "Q": _MATRIX, "K": _MATRIX})},
        "x0": _MATRIX}},
    "instance_toml": _STR_NULL, "precision": {"type": ["string", "integer", "null"]},
    "horizon": _STR_NULL, "verdict": {"enum": _VERDICTS},
    "effective_verdict": {"enum": _VERDICTS}, "reason": {"type": "string", "minLength": 1},
    "effective_reason": _STR, "evidence": {"type": "object", "additionalProperties": True},
    "margin": {"type": _NUM}, "error": {"type": _NUM},
    "rechecked": {"type": ["object", "null"], "additionalProperties": True,
                  "required": ["verdict"], "properties": {"verdict": {"enum": _VERDICTS}}},
    "counterexample": _STR_NULL, "exception": _STR_NULL, "unit": _STR,
    "certificate": {"type": ["object", "null"], "additionalProperties": True,
                    "required": ["kind", "statement"]},
    "basis": {"enum": [None, "exact", "enclosure", "certificate", "estimate", "fit",
                       "evidence"]},
    "seconds": {"type": ["number", "null"], "minimum": 0}})
_CLAIM = _obj({
    "id": {"type": "string", "pattern": r"^[a-z0-9]+(-[a-z0-9]+)*$"}, "label": _STR,
    "kind": {"enum": ["theorem", "lemma", "proposition", "remark", "conjecture",
                      "open-problem", "proof-step"]},
    "statement": _STR, "hypotheses": {"type": "array", "items": _STR},
    "uses": {"type": "array", "items": _STR}, "expected": {"enum": ["holds", "fails", "open"]},
    "conclusion": {"type": "array", "items": {"type": "object", "required": ["type"],
                                              "additionalProperties": True}},
    "source": _STR, "sha256": {"type": "string", "pattern": r"^([0-9a-f]{64})?$"},
    "notes": _STR, "families": {"type": "array", "items": {"type": "object",
                                                           "additionalProperties": True}},
    "parameters": {"type": "object", "additionalProperties": True}})
_VERDICT = _obj({
    "claim": _STR, "verdict": {"enum": ["supported", "refuted", "inconclusive"]},
    "text": _STR, "reason": _STR, "expected": {"enum": ["holds", "fails", "open"]},
    "matches_expected": {"type": ["boolean", "null"]},
    "n_supporting": {"type": "integer", "minimum": 0},
    "counts": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}},
    {"grades": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
     "bases": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}})
RESULTS_SCHEMA: dict = _obj({
    "schema_version": {"const": SCHEMA_VERSION},
    "run_id": {"type": "string", "pattern": r"^\d{8}T\d{6}Z-[0-9a-f]{6}$"},
    "started": _STR, "finished": _STR, "seconds": {"type": "number", "minimum": 0},
    "resumed": {"type": "integer", "minimum": 0}, "executor": _STR,
    "parameters": _obj({"instances": {"type": ["integer", "null"], "minimum": 1},
                        "seed": {"type": ["integer", "null"]},
                        "precision": {"type": ["string", "integer", "null"]},
                        "horizon": _STR_NULL}),
    "versions": {"type": "object", "required": ["python", "numpy", "scipy", "sympy", "mpmath",
                                                "flint", "networkx", "matplotlib", "verify"],
                 "additionalProperties": _STR_NULL},
    "exit_code": {"enum": [0, 1, 3, 4]},
    "claims": {"type": "array", "items": _CLAIM},
    "instances": {"type": "array", "items": _INSTANCE},
    "verdicts": {"type": "array", "items": _VERDICT}},
    {"command": {"enum": ["run", "check"]},
     "check": {"type": "object", "additionalProperties": True},
     "real_weights": {"type": "object", "additionalProperties": True}})

#: What each key means, by its path (array items are reached through the array's key): they go
#: into ``results.schema.json`` as JSON Schema ``description`` keywords.
DESCRIPTIONS = {
    "": "The record of a `verify run` or `verify check`: every claim, every instance with its "
        "exact inputs, verdict, margin and error estimate, and the claim verdicts. Token "
        "numbers count from 1 as in the paper in every text (reasons, certificate statements, "
        "reports, figures) and in the evidence's token lists (`leaders`, `leader_of`, "
        "`groups`, ...); array positions count from 0: token i is row i - 1 of `x0`, and a "
        "certificate's own data (`leader_of`, `leaders`, `pinned`) holds 0-based positions.",
    "schema_version": "Version of this schema; a reader refuses other versions.",
    "run_id": "UTC start time and a hash of the parameters; the name of the run folder.",
    "started": "UTC start time, ISO 8601.", "finished": "UTC end time, ISO 8601.",
    "seconds": "Wall-clock seconds of the checks (writing the reports not included).",
    "resumed": "Instances read back from an interrupted run instead of recomputed.",
    "executor": "Where the instances ran: the local process pool or a Dask scheduler.",
    "parameters": "The command-line overrides of the claim files (null: each family's own).",
    "versions": "Versions of Python and of every library a verdict depends on.",
    "exit_code": "0: no claim expected to hold was refuted; 1: one was; 3: inconclusive "
                 "(verify check).",
    "command": "'run' (the paper's claims) or 'check' (a user's conjecture).",
    "check": "verify check only: the search space, what was drawn and the shrinking.",
    "real_weights": "The real-weights section (claim real-heads): head classes, spectra, one "
                    "sentence's dynamics, or why the weights are unavailable.",
    "claims": "The claims checked, as read from their files.",
    "claims.id": "Stable id of the claim (its file name).",
    "claims.label": "The paper's number (arXiv 2305.05465v6), e.g. 'Theorem 3.1'.",
    "claims.statement": "The statement, Markdown with LaTeX.",
    "claims.expected": "'holds' (a theorem), 'fails' (a known false step or a literal "
                       "statement known to be false) or 'open'.",
    "claims.sha256": "SHA-256 of the claim file: which wording was checked.",
    "instances": "One record per claim and instance.",
    "instances.instance": "'<family>#<k>': the k-th instance (from 0) of the family.",
    "instances.inputs": "The exact inputs: every matrix entry a rational 'p/q' string.",
    "instances.instance_toml": "An instance file reproducing the instance exactly "
                               "(verify simulate FILE).",
    "instances.verdict": "The check's verdict on this instance.",
    "instances.effective_verdict": "The verdict that counts for the claim: a violation counts "
                                   "only when its re-check confirms it.",
    "instances.reason": "Why, in one sentence (tokens numbered from 1).",
    "instances.evidence": "The numbers behind the verdict, each with its error estimate.",
    "instances.margin": "Signed margin in `unit`: positive when the conclusion holds with that "
                        "much room. Floats; 'inf'/'nan' and exact 'p/q' as strings.",
    "instances.error": "Error estimate of the margin, in `unit`; 0 means exact arithmetic.",
    "instances.unit": "What margin and error measure.",
    "instances.basis": "What the decision rests on: exact, enclosure, certificate (rigorous), "
                       "estimate, fit or evidence; null in records older than the basis.",
    "instances.rechecked": "The re-check of a violation at higher precision and a longer "
                           "horizon.",
    "instances.counterexample": "Path, relative to the run folder, of the instance file of a "
                                "confirmed violation (verify check CLAIM --instance FILE "
                                "re-judges it).",
    "instances.certificate": "Why a violation of a statement about t -> infinity is final, or "
                             "(kind 'proof') why the instance holds for all t >= 0: its "
                             "statement, lemma, t1 and `file`, the certificate under "
                             "certificates/ that `verify certificate FILE` re-checks; "
                             "`companions`: lemmas checked beside a proof on the same "
                             "enclosure (the followers' drift after a good-triple proof), each "
                             "with its own `file`.",
    "instances.seconds": "Seconds spent on the instance.",
    "verdicts": "One verdict per claim.",
    "verdicts.verdict": "supported, refuted or inconclusive (never 'proved').",
    "verdicts.matches_expected": "Whether the verdict is the one the claim file expects "
                                 "(null for open claims and inconclusive verdicts).",
    "verdicts.counts": "Instances per effective verdict.",
    "verdicts.bases": "Decided instances per verdict and basis, e.g. 'holds (estimate)'.",
    "verdicts.grades": "In-scope instances by grade: proved (holds on a rigorous basis: proved "
                       "on the instance for all t >= 0), violated (on a rigorous basis), "
                       "estimate, evidence, unstated (no basis), undecided (inconclusive).",
}


def _with_descriptions(schema: dict, descriptions: dict, path: str = "") -> dict:
    """A copy of ``schema`` with a ``description`` at every path of ``descriptions``."""
    out = dict(schema)
    if path in descriptions:
        out["description"] = descriptions[path]
    if "items" in out and isinstance(out["items"], dict):
        out["items"] = _with_descriptions(out["items"], descriptions, path)
    if "properties" in out:
        out["properties"] = {key: _with_descriptions(value, descriptions,
                                                      f"{path}.{key}" if path else key)
                             for key, value in out["properties"].items()}
    return out


RESULTS_SCHEMA = _with_descriptions(RESULTS_SCHEMA, DESCRIPTIONS)

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is(value, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def check_schema(schema: dict, value, path: str = "$") -> list[str]:
    """Problems of ``value`` against ``schema`` (keywords: type, const, enum, properties,
    required, additionalProperties, items, minimum, minLength, pattern)."""
    if "const" in schema and value != schema["const"]:
        return [f"{path}: {value!r} must be {schema['const']!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} is not one of {schema['enum']}"]
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in kinds):
            return [f"{path}: {type(value).__name__} {str(value)[:40]!r} is not "
                    f"{' or '.join(kinds)}"]
    problems: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties", {})
        problems += [f"{path}: missing required key {k!r}" for k in schema.get("required", [])
                     if k not in value]
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                problems += check_schema(props[key], item, f"{path}.{key}")
            elif extra is False:
                problems.append(f"{path}: unexpected key {key!r}")
            elif isinstance(extra, dict):
                problems += check_schema(extra, item, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problems += check_schema(schema["items"], item, f"{path}[{i}]")
    if _is(value, "number") and "minimum" in schema and value < schema["minimum"]:
        problems.append(f"{path}: {value} < minimum {schema['minimum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            problems.append(f"{path}: string shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            problems.append(f"{path}: {value[:40]!r} does not match {schema['pattern']}")
    return problems


def results_problems(data) -> list[str]:
    """Every way ``data`` departs from :data:`RESULTS_SCHEMA`, plus consistency checks (each
    instance's claim and each verdict's claim are listed claims)."""
    problems = check_schema(RESULTS_SCHEMA, data)
    if not problems:
        ids = {c["id"] for c in data["claims"]}
        problems += [f"$.instances[{i}].claim: {r['claim']!r} is not a listed claim"
                     for i, r in enumerate(data["instances"]) if r["claim"] not in ids]
        problems += [f"$.verdicts[{i}].claim: {v['claim']!r} is not a listed claim"
                     for i, v in enumerate(data["verdicts"]) if v["claim"] not in ids]
    return problems


def validate_results(data) -> None:
    """Raise :class:`InvalidArgument` listing the problems if ``data`` is not valid results."""
    problems = results_problems(data)
    if problems:
        shown = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more"
                                           if len(problems) > 8 else "")
        raise InvalidArgument(f"results do not match schema version {SCHEMA_VERSION}: {shown}.")


def library_versions() -> dict[str, str | None]:
    """Versions of Python and of the libraries whose numerics a verdict depends on."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for key, dist in (("numpy", "numpy"), ("scipy", "scipy"), ("sympy", "sympy"),
                      ("mpmath", "mpmath"), ("flint", "python-flint"),
                      ("networkx", "networkx"), ("matplotlib", "matplotlib"),
                      ("verify", "selfattention-verify")):
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[key] = None
    return out


def _claim(claim) -> dict:
    data = claim.to_json()
    return {key: data[key] for key in ("id", "label", "kind", "statement", "hypotheses", "uses",
                                       "expected", "conclusion", "source", "sha256", "notes",
                                       "families", "parameters")}


def _instance(record: dict) -> dict:
    result = InstanceResult.from_json(record["result"])
    verdict, why = effective_verdict(result)
    out = {key: record.get(key) for key in ("claim", "family", "k", "seed", "inputs",
                                            "instance_toml", "precision", "horizon",
                                            "exception", "seconds")}
    out.update(result.to_json())
    out.update(effective_verdict=verdict.value, effective_reason=why)
    return to_plain(out)


def build_results(run) -> dict:
    """The ``results.json`` dict of a :class:`verify.run.RunResult`."""
    instances = [_instance(r) for c in run.claims for r in run.claim_records(c.id)]
    verdicts = []
    for res in run.claim_results:
        data = res.to_json()
        del data["instances"], data["kind"]
        verdicts.append(dict(data, counts=res.counts, bases=res.bases, grades=res.grades,
                             matches_expected=res.matches_expected))
    return {"schema_version": SCHEMA_VERSION, "run_id": run.run_id, "started": run.started,
            "finished": run.finished, "seconds": run.seconds, "resumed": run.resumed,
            "executor": run.executor, "parameters": to_plain(run.parameters),
            "versions": library_versions(), "exit_code": run.exit_code,
            "claims": [_claim(c) for c in run.claims], "instances": instances,
            "verdicts": verdicts, **_check_part(getattr(run, "extra", {}) or {}),
            **real_weights_part(run)}


def _check_part(extra: dict) -> dict:
    """``command`` and, for ``verify check``, the search and shrinking summaries."""
    if extra.get("command") != "check":
        return {"command": "run"}
    return {"command": "check", "check": to_plain({k: v for k, v in extra.items()
                                                   if k != "command"})}


def load_results(path: str | Path) -> dict:
    """Read and validate a ``results.json`` (or the one in a run directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidArgument(f"{path}: cannot read results ({exc}).") from None
    validate_results(data)
    return data


def report_side_jobs(claims, run_dir: str | Path, *, figures: bool = True):
    """The ``side_jobs`` of :func:`verify.run.run_claims` for a report of ``claims`` written to
    ``run_dir``: the work of the report that does not wait for the verdicts is done alongside
    the checks, in the run's workers, instead of after them —

    * at the start, the paper's figures (unless the figure cache of this code has them) and the
      real-weights section's head classes and sentence runs (when ``real-heads`` is run);
    * once a claim's instances are judged, the figures of its decisive instance;
    * once every claim is judged, the claim dependency graph (coloured by the verdicts): drawn
      beside the last claim's figures instead of in the report afterwards.

    :func:`write_reports` then takes them from :attr:`RunResult.side <verify.run.RunResult>`
    (a figure only when it was drawn for the very data the report shows).
    """
    claims = {c.id: c for c in claims}
    run_dir = Path(run_dir)
    cached = paper_figures_cache(run_dir.parent / _CACHE) if figures else None
    verdicts: dict = {}  # the claims judged so far: the dependency graph once all are

    def jobs(claim, records: list[dict]) -> dict:
        if claim is None:
            out = {} if cached is None or cached.is_file() else {
                key: (draw_ahead, (job,)) for key, job in paper_figure_jobs().items()}
            return out | (weights_side_jobs(claims[CLAIM_ID]) if CLAIM_ID in claims else {})
        if not figures:
            return {}
        verdict = judge_claim(claim, [InstanceResult.from_json(r["result"]) for r in records])
        verdicts[claim.id] = {"verdict": verdict.verdict.value,
                              "matches_expected": verdict.matches_expected}
        job = claim_figure_job({"instances": [_instance(r) for r in records]}, _claim(claim),
                               verdict.verdict.value, run_dir)
        out = {} if job is None else {("claim", claim.id): (draw_ahead, (job,))}
        if len(verdicts) == len(claims):  # in the claims' order, as results.json has them
            graph = graph_figure_job([_claim(c) for c in claims.values()],
                                     {k: verdicts[k] for k in claims})
            out[("graph",)] = (draw_ahead, (graph,))
        return out

    return jobs


_CACHE = ".cache"  # beside the run folders: what later runs of the same code reuse


def write_reports(run, *, figures: bool = True) -> dict[str, Path]:
    """Write ``results.json`` (validated first), ``results.schema.json``, ``report.md`` and
    ``report.html`` into ``run.out_dir``; return their paths by name (figures drawn alongside
    the checks, :func:`report_side_jobs`, are taken from ``run.side``)."""

    data = build_results(run)
    validate_results(data)
    out = Path(run.out_dir)
    paths = {name: out / name for name in ("results.json", "results.schema.json", "report.md",
                                           "report.html")}
    write_atomic(paths["results.json"], json.dumps(data, indent=1, ensure_ascii=False,
                                                   allow_nan=False) + "\n")
    write_atomic(paths["results.schema.json"], json.dumps(RESULTS_SCHEMA, indent=1) + "\n")
    write_atomic(paths["report.md"], render_markdown(data))
    write_atomic(paths["report.html"], render_html(data, figures=figures,
                                                   cache_dir=out.parent / _CACHE, run_dir=out,
                                                   ahead=getattr(run, "side", None)))
    return paths
