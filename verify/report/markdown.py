r"""``report.md``: the run as Markdown, from the ``results.json`` dict.

A summary table at the top (claim, label, kind, verdict, instances holding / violated /
inconclusive / out of scope), then claim by claim: the statement (Markdown with LaTeX, as in the
claim file), the hypotheses, the claims it uses, the table of instances (predicted vs observed,
margin, error, basis), the verdict and why, and how to reproduce a counterexample.
The helpers :func:`summary_rows`, :func:`instance_rows` and :func:`format_value` are shared with
the HTML report. Numbers that carry an error estimate are printed by :mod:`verify.digits`:
a margin and its error side by side, to the digits that show which is larger and no more.

Examples
--------
>>> format_value(0.123456789), format_value("1/3"), format_value([1, 2, 3, 4, 5, 6, 7])
('0.123457', '1/3', '[1, 2, 3, 4, 5, 6, …]')
>>> margin_text({"margin": 4.6234e-9, "error": 4.5812e-9, "unit": "distance",
...              "basis": "estimate"})
'margin 4.62×10⁻⁹ > κ·error estimate 4.59×10⁻⁹ (distance)'
"""

from __future__ import annotations

import math

from verify.digits import exact, plus_minus, trusted, versus
from verify.report._weights_section import weights_markdown

__all__ = ["render_markdown", "summary_rows", "instance_rows", "format_value",
           "decisive_record", "decisive_lines", "verdict_class", "SUMMARY_HEADER",
           "INSTANCE_HEADER", "COUNT_KEYS", "TABLE_LEGEND", "margin_text", "basis_text",
           "findings_lines", "READING_NUMBERS", "regenerate_lines", "paper_line",
           "comparison_rows", "rejudge_command", "verdict_mark", "ARXIV_URL"]

ARXIV_ID, ARXIV_VERSION = "2305.05465", "v6"
ARXIV_URL = f"https://arxiv.org/abs/{ARXIV_ID}{ARXIV_VERSION}"
COUNT_KEYS = ("holds", "violated", "inconclusive", "out-of-scope", "error")
SUMMARY_HEADER = ("claim", "label", "kind", "expected", "verdict", "holds", "violated",
                  "inconclusive", "out of scope", "error")
INSTANCE_HEADER = ("instance", "seed", "verdict", "basis", "predicted vs observed", "margin",
                   "error", "margin/error", "unit", "note")
TABLE_LEGEND = ("Margin and error are in the unit named (positive margin: the conclusion holds "
                "with that much room), printed to the same decimal place with the digits that "
                "show which is larger. The basis says what the decision rests on: exact "
                "(rational arithmetic, error 0), enclosure or certificate (rigorous; the error is "
                "a bound), estimate (a run against its reference run; the error shown is the "
                "estimate times the measured safety factor κ), fit (a trend; the error is its "
                "coverage interval) or evidence. Only a violation on a rigorous basis refutes. "
                "– means not computed (the instance was undecided, out of scope, or its judge "
                "failed).")
#: The words of :class:`verify.claim.Basis`, as a reader needs them.
BASIS_WORDS = {
    "exact": "exact (rational or algebraic arithmetic)",
    "enclosure": "enclosure (a rigorous ball that contains the truth)",
    "certificate": "certificate (a criterion of the theory evaluated in balls or exactly)",
    "estimate": "estimate (a run against an independent reference run, times the safety "
                "factor κ)",
    "fit": "fit (a trend or regression over the checkpoints)",
    "evidence": "evidence",
}
READING_NUMBERS = (
    "**Numbers carry their error.** A number printed as *v ± e* lies within *e* of *v*; a "
    "number printed alone shows only the digits its error allows (the last one right to within "
    "one unit); integers and fractions *p/q* are exact. Powers of ten are written ×10ⁿ.",
    "**Margin and error.** A check reduces its conclusion to a signed *margin* in the unit "
    "named (positive: the conclusion holds with that much room) and the *error* of that margin "
    "on the decision's basis. An instance *holds* only when the margin exceeds its error, is "
    "*violated* only when the violation exceeds it, and is *inconclusive* otherwise; an "
    "instance that could not be judged because of its input is an *error*. Margin and error "
    "are printed to the same decimal place, with the digits that show which is larger; error 0 "
    "means exact arithmetic.",
    "**Where the errors come from.** Every run is repeated at a tighter tolerance and a higher "
    "precision (the *reference run*); a quantity computed on both runs has their difference "
    "as its error estimate (the *second route*). An estimate is not a bound until its coverage "
    "is measured: `benchmarks/error_coverage.py` measures it across the model family, and "
    "every decision on an estimate compares the margin with κ times the estimate, κ the "
    "safety factor chosen there. A rate or a limit fitted by least squares carries the error "
    "κσ: σ the standard error of the fit and κ the Student-t factor for its degrees of freedom "
    "that covers 99.73 % (±3σ of a normal law). Only the bases exact, enclosure and "
    "certificate are rigorous, and only they can refute a claim; a violation on another basis "
    "is shown as *violated (estimate)*, *violated (fit)* or *violated (evidence)* and leaves "
    "the claim inconclusive.",
    "**Basis.** What a decision rests on: " + "; ".join(BASIS_WORDS.values()) + ". Records "
    "written before the basis was recorded show –.",
    "**Indices.** Tokens are numbered from 1, as in the paper (token *i* is row *i* of `x0`); "
    "an instance *family#k* is the *k*-th draw of its family, counted from 0 (the seed of a "
    "random family's draw *k* is its seed + *k*).",
)


def conclusion_text(claim: dict) -> str:
    """The claim's conclusions in one line: each type with its predictions.

    >>> conclusion_text({"conclusion": [{"type": "converges", "to": {"predict": "polytope-S"}}]})
    '`converges` (to: prediction polytope-S)'
    """
    parts = []
    for c in claim.get("conclusion", []):
        keys = [f"{k}: prediction {v['predict']}" for k, v in c.items()
                if isinstance(v, dict) and "predict" in v]
        parts.append(f"`{c['type']}`" + (f" ({', '.join(keys)})" if keys else ""))
    return "; ".join(parts) or "nothing"


def format_value(value, width: int = 40) -> str:
    """A short readable form: floats to 6 significant digits, exact strings as they are, long
    lists cut with an ellipsis, ``None`` as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    if isinstance(value, list):
        items = [format_value(v, width) for v in value[:6]]
        return "[" + ", ".join(items) + (", …" if len(value) > 6 else "") + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {format_value(v, width)}" for k, v in
                               list(value.items())[:4]) + (", …" if len(value) > 4 else "") + "}"
    text = str(value)
    return text if len(text) <= width else text[:width - 1] + "…"


def margin_text(record: dict) -> str:
    """``"margin m > error estimate e (unit)"`` of an instance record, the two numbers by
    :func:`verify.digits.versus`; empty when the record has no margin."""
    margin, error = record.get("margin"), record.get("error")
    if not isinstance(margin, (int, float)) or isinstance(margin, bool):
        return ""
    unit = f" ({record['unit']})" if record.get("unit") else ""
    if not isinstance(error, (int, float)) or not math.isfinite(error):
        return f"margin {exact(float(margin))}, no finite error estimate{unit}"
    shown, bound = versus(margin, error)
    if error == 0:
        return f"margin {shown}, error 0{unit}"
    relation = ">" if abs(margin) > error else "≤"
    return f"margin {shown} {relation} {_ERROR_NAMES.get(record.get('basis'), 'error')} " \
        f"{bound}{unit}"


#: What the error of a decision is, by its basis (an estimate is compared after κ).
_ERROR_NAMES = {"estimate": "κ·error estimate", "fit": "coverage interval",
                "enclosure": "error bound", "certificate": "error bound"}


def basis_text(record: dict, long: bool = False) -> str:
    """The basis of an instance's decision (``–`` when the record predates it)."""
    basis = record.get("basis")
    if basis is None:
        return "–"
    return BASIS_WORDS.get(basis, basis) if long else basis


def summary_rows(data: dict) -> list[tuple]:
    """One row per claim: :data:`SUMMARY_HEADER`."""
    claims = {c["id"]: c for c in data["claims"]}
    rows = []
    for v in data["verdicts"]:
        c = claims[v["claim"]]
        proved = (v.get("grades") or {}).get("proved", 0)
        text = v["text"] + (f" ({proved} proved on the instance)" if proved else "")
        rows.append((c["id"], c["label"], c["kind"], c["expected"], text,
                     *(v["counts"].get(k, 0) for k in COUNT_KEYS)))
    return rows


COMPARISON_WIDTH = 160  # characters of a check's reason shown in the instance table


def _shorten(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


def instance_rows(data: dict, claim_id: str) -> list[tuple]:
    """One row per instance of ``claim_id``: :data:`INSTANCE_HEADER` (the verdict is the
    effective one: an unconfirmed violation reads "inconclusive"; a note repeated from the row
    above reads "as above")."""
    rows, previous = [], None
    for r in data["instances"]:
        if r["claim"] != claim_id:
            continue
        ev = r.get("evidence") or {}
        verdict = r["effective_verdict"]
        if r["verdict"] != verdict:
            verdict += f" (first {r['verdict']})"
        note = ""
        if r.get("rechecked"):
            re_ = r["rechecked"]
            note = (f"re-checked at precision {re_.get('precision')}, horizon "
                    f"{re_.get('horizon')}: {re_['verdict']}")
        if r.get("certificate"):
            note += f"; certificate: {r['certificate']['kind']}"
        horizons = [h.get("horizon") for h in ev.get("horizons") or []]
        if len(horizons) > 1:
            note += f"; horizons {', '.join(horizons)}"
        if r.get("counterexample"):
            note += f"; counterexample {r['counterexample']}"
        if r.get("exception"):
            note = f"error: {r['exception']}"
        elif r["effective_verdict"] == "out-of-scope":
            note = r["reason"]
        note = note.strip("; ")
        shown = "as above" if note and note == previous and len(note) > 40 else note
        previous = note
        if r["effective_verdict"] == "out-of-scope":
            comparison = "–"  # the note says why
        elif ev.get("predicted") is not None or ev.get("observed") is not None:
            comparison = (f"{format_value(ev.get('predicted'))} vs "
                          f"{_observed(ev.get('observed'), r.get('error'))}")
        else:  # the check states its comparison in the reason
            comparison = _shorten(r.get("reason") or "–", COMPARISON_WIDTH)
        margin, error = _margin_cells(r)
        ratio = _ratio(r)
        rows.append((r["instance"], format_value(r["seed"]), verdict, basis_text(r),
                     comparison, margin, error,
                     f"{ratio:.3g}" if math.isfinite(ratio) else "–",
                     r.get("unit") or "–", shown))
    return rows


def _observed(value, error) -> str:
    """An observed number cut to the digits the error of the comparison allows."""
    if isinstance(value, float) and isinstance(error, (int, float)) \
            and not isinstance(error, bool):
        return trusted(value, error)
    return format_value(value)


def _margin_cells(record: dict) -> tuple[str, str]:
    """The margin and error columns: :func:`verify.digits.versus` (one decimal place)."""
    margin, error = record.get("margin"), record.get("error")
    if not isinstance(margin, (int, float)) or isinstance(margin, bool):
        return format_value(margin), format_value(error)
    if not isinstance(error, (int, float)) or isinstance(error, bool):
        return exact(float(margin)), format_value(error)
    return versus(margin, error)


def _ratio(record: dict) -> float:
    margin, error = record.get("margin"), record.get("error")
    if not isinstance(margin, (int, float)) or not isinstance(error, (int, float)):
        return math.inf
    return margin / error if error else math.inf


def decisive_record(data: dict, claim_id: str, verdict: str) -> dict | None:
    """The instance that decides the claim's verdict: for *refuted* the confirmed
    counterexample, for *inconclusive* the first undecided instance, for *supported* the
    tightest hold (smallest margin / error); ``None`` when no instance is in scope."""
    records = [r for r in data["instances"] if r["claim"] == claim_id]
    if verdict == "refuted":
        found = [r for r in records if r.get("counterexample")] or \
            [r for r in records if r["effective_verdict"] == "violated"]
    elif verdict == "inconclusive":
        found = [r for r in records if r["effective_verdict"] == "inconclusive"]
    else:
        found = sorted((r for r in records if r["effective_verdict"] == "holds"), key=_ratio)
    return found[0] if found else None


def rejudge_command(record: dict, claim: dict | None) -> str | None:
    """``verify check CLAIM_FILE --instance COUNTEREXAMPLE``: the claim's own check on the saved
    counterexample (run from the report's folder), or ``None`` without a counterexample."""
    if not record.get("counterexample"):
        return None
    source = (claim or {}).get("source") or f"{record['claim']}.toml"
    return f"verify check {_shell_word(source)} --instance {_shell_word(record['counterexample'])}"


def _shell_word(text: str) -> str:
    import shlex

    return shlex.quote(str(text))


def decisive_lines(record: dict | None, verdict: str, claim: dict | None = None) -> list[str]:
    """Sentences (Markdown) on the decisive instance: what decided, on what basis with which
    margin, the certificate, and for a counterexample the commands that re-judge and replay it
    (from the report's folder)."""
    if record is None:
        return []
    role = {"refuted": "Counterexample", "inconclusive": "Undecided instance"}.get(
        verdict, "Tightest instance")
    why = record.get("effective_reason") or record["reason"]
    lines = [f"**{role}: {record['instance']}** — {why}"]
    margin = margin_text(record)
    if margin or record.get("basis"):
        lines.append("Decided on: " + "; ".join(
            part for part in (basis_text(record, long=True) if record.get("basis") else
                              "basis not recorded", margin) if part) + ".")
    certificate = record.get("certificate")
    if certificate:
        lines.append(f"Certificate ({certificate['kind']}): {certificate.get('statement', '')}")
    command = rejudge_command(record, claim)
    if command:
        rechecked = record.get("rechecked") or {}
        lines.append("Re-judge it from this report's folder (the claim's check on the "
                     f"counterexample file, at precision {rechecked.get('precision', '–')} and "
                     f"horizon {rechecked.get('horizon', '–')}): `{command}`; replay its "
                     f"trajectory: `verify simulate {_shell_word(record['counterexample'])}`.")
    return lines


def comparison_rows(record: dict | None) -> list[tuple[str, str, str]]:
    """Predicted against observed for the decisive instance, side by side: ``(quantity,
    predicted, observed ± error)`` for the quantities its evidence holds."""
    if record is None:
        return []
    ev = record.get("evidence") or {}
    rows = []
    predicted = (ev.get("figure") or {}).get("predicted") or {}
    if predicted.get("polytope_vertices"):
        rows.append(("predicted polytope", f"{len(predicted['polytope_vertices'])} vertices "
                     "(from the certified leaders)", "–"))
    if ev.get("a") is not None and ev.get("b") is not None:
        rows.append(("offsets a, 0, b of the hyperplanes", f"{format_value(ev['a'])}, 0, "
                     f"{format_value(ev['b'])}", "–"))
    if ev.get("expected_leaders") is not None or ev.get("leaders") is not None:
        rows.append(("leaders (tokens from 1)", format_value(ev.get("expected_leaders")),
                     format_value(ev.get("leaders"))))
    pairs = (("D_at_T", "D_error_at_T", f"D at the horizon T (D(t): {ev.get('D', 'distance')})",
              "→ 0"),
             ("limit", "limit_error", "limit of D(t) (fitted)", "0"),
             ("rate", "rate_bar", "decay rate of D(t) (fitted, ± κσ)", "> 0"),
             ("B_at_T", "B_error_at_T", f"B(T) = {ev.get('B', '')}", "→ 0"))
    for key, error_key, label, want in pairs:
        if isinstance(ev.get(key), (int, float)) and isinstance(ev.get(error_key), (int, float)):
            rows.append((label, want, plus_minus(ev[key], ev[error_key])))
    if isinstance(ev.get("fitted"), (int, float)) and ev.get("standard_error") is not None:
        half = float(ev["standard_error"]) * float(ev.get("coverage") or 1)
        rows.append((f"{ev.get('law', 'fitted')} {ev.get('of', '')} (fitted, ± κσ)".strip(),
                     f"{ev.get('relation', '')} {format_value(ev.get('value'))}".strip(),
                     plus_minus(ev["fitted"], half)))
    return rows


def paper_line() -> str:
    """The paper, its arXiv version (the theorem numbers of the labels) and its link."""
    return ("Geshkovski–Letrouit–Polyanskiy–Rigollet, *The emergence of clusters in "
            f"self-attention dynamics*, [arXiv:{ARXIV_ID}{ARXIV_VERSION}]({ARXIV_URL}) (Feb 2024; "
            "NeurIPS 2023): the theorem numbers of the labels are those of that version.")


def verdict_mark(verdict: dict, claim: dict) -> str:
    """How the verdict compares with the claim file's expectation, in words."""
    if verdict.get("matches_expected") is None:
        return ""
    if not verdict["matches_expected"]:
        return " (**not** as expected)"
    if verdict["verdict"] == "refuted":
        what = "a known false proof step" if claim.get("kind") == "proof-step" else \
            "false as literally worded, see the notes"
        return f" (as expected: {what})"
    return " (as expected)"


def findings_lines(data: dict) -> list[str]:
    """A short paragraph of what the run found: how many claims were supported, refuted (as
    expected or not) and left undecided, each named."""
    verdicts = data["verdicts"]
    claims = {c["id"]: c for c in data["claims"]}
    by: dict[str, list] = {}
    for v in verdicts:
        key = verdict_class(v)
        if v["verdict"] == "refuted" and v.get("matches_expected") is False:
            key = "refuted-unexpected"
        by.setdefault(key, []).append(v)
    n_instances = sum(sum(v["counts"].values()) for v in verdicts)
    parts = [f"{len(verdicts)} claim{'s' if len(verdicts) != 1 else ''} checked on "
             f"{n_instances} instances"]
    if by.get("supported"):
        open_ = [v for v in by["supported"] if claims[v["claim"]]["kind"] in
                 ("conjecture", "open-problem")]
        parts.append(f"{len(by['supported'])} supported" + (
            f" ({len(open_)} of them conjectures or open problems, supported by evidence)"
            if open_ else ""))
    lines = ["**Findings.** " + "; ".join(parts) + "."]
    if by.get("refuted-expected"):
        lines.append("Refuted as their claim files expect: " + "; ".join(
            f"`{v['claim']}` ({claims[v['claim']]['label']})" for v in by["refuted-expected"])
            + " — a known false proof step or a statement false as literally worded; each "
            "section gives the counterexample and the command that re-judges it.")
    if by.get("refuted-unexpected") or by.get("refuted"):
        bad = by.get("refuted-unexpected", []) + by.get("refuted", [])
        lines.append("**Refuted against expectation:** " + ", ".join(
            f"`{v['claim']}`" for v in bad) + " — read these sections first.")
    if by.get("inconclusive"):
        lines.append("Undecided (the numerics could not decide; each section says why): "
                     + ", ".join(f"`{v['claim']}`" for v in by["inconclusive"]) + ".")
    lines.append("No verdict is a proof: *supported* means every in-scope instance held with a "
                 "margin above its error estimate.")
    return lines


def regenerate_lines(data: dict) -> list[str]:
    """The commands that regenerate this report: from the stored instances (nothing
    recomputed) and from scratch with the same overrides."""
    p = data["parameters"]
    if data.get("command") == "check":
        part = data.get("check") or {}
        source = _shell_word(data["claims"][0].get("source") or "FILE") if data["claims"] \
            else "FILE"
        if part.get("replay"):
            amount = f" --instance {_shell_word(part['replay'])}"
        elif p.get("instances"):
            amount = f" --instances {p['instances']}"
        else:
            amount = f" --budget {part.get('budget_seconds') or 60:g}"
        seed = f" --seed {p['seed']}" if p.get("seed") is not None else ""
        return [f"Regenerate: `verify check {source}{amount}{seed}` (a time budget draws as "
                "many instances as the machine judges in that time)."]
    flags = "".join(f" --{key} {_shell_word(str(p[key]))}" for key in
                    ("instances", "seed", "precision", "horizon") if p.get(key) is not None)
    return ["Regenerate this report from its stored instances (from this report's folder; "
            "only the instances of a changed claim file are recomputed): "
            "`verify run --resume .`; the whole run from scratch: "
            f"`verify run {' '.join(c['id'] for c in data['claims'])}{flags}`."]


def verdict_class(verdict: dict) -> str:
    """The colour class of a claim verdict: a refutation the claim expects (a false proof
    step) is not a failure and has its own colour."""
    name = verdict["verdict"]
    return f"{name}-expected" if name == "refuted" and verdict.get("matches_expected") \
        else name


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header, rows) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(x) for x in row) + " |" for row in rows]
    return lines


def check_lines(data: dict) -> list[str]:
    """Sentences on the search and the shrinking of a ``verify check`` (empty for a run)."""
    part = data.get("check") or {}
    lines = []
    if part.get("replay"):
        lines.append(f"Replayed on the instance file `{part['replay']}`.")
    search = part.get("search")
    if search:
        covered = search.get("covered") or {}
        axes = "; ".join(f"{axis}: " + ", ".join(f"{k} ×{v}" for k, v in counts.items())
                         for axis, counts in covered.items() if isinstance(counts, dict))
        budget = part.get("budget_seconds")
        lines.append(f"Search: {search.get('drawn', 0)} instances drawn (stopped: "
                     f"{search.get('stopped')}; budget "
                     + (f"{budget:g} s" if budget else "a number of instances") + "), horizon "
                     f"{search.get('horizon')}. Space: {'; '.join(search.get('space') or [])}. "
                     f"Covered: {axes or 'nothing'}."
                     + ("" if search.get("stopped") == "found" else " No counterexample among "
                        "them: evidence, never a proof."))
        if search.get("skipped"):
            lines.append(f"{search['skipped']} draws could not be built (e.g. "
                         f"{'; '.join(search.get('skipped_examples') or [])}).")
    shrink = part.get("shrink")
    if shrink:
        lines.append(f"Shrinking {shrink['from']}: n {shrink['n'][0]} → {shrink.get('minimal_n')}"
                     f", d {shrink['d'][0]} → {shrink.get('minimal_d')} by "
                     f"{len(shrink['moves'])} moves ({'; '.join(shrink['moves']) or 'none'}), "
                     f"{shrink['evaluations']} evaluations (every move kept "
                     f"{shrink.get('within', 'the hypotheses')}; "
                     f"{shrink.get('refused', 0)} left the search space and were refused); "
                     "minimal counterexample "
                     f"`{shrink.get('counterexample')}` (re-checked at higher precision and a "
                     "longer horizon).")
    return lines


def render_markdown(data: dict) -> str:
    """The Markdown report of a ``results.json`` dict."""
    p = data["parameters"]
    title = "Conjecture check" if data.get("command") == "check" else "Claim suite run"
    out = [f"# {title} `{data['run_id']}`", "",
           paper_line() + " Verdicts are numerical: \"supported on N instances\" means every "
           "in-scope instance held with a margin above its error estimate — never a proof.", ""]
    for line in findings_lines(data):
        out += [line, ""]
    out += [f"Run {data['started']} → {data['finished']} ({data['seconds']:.1f} s"
            + (f", {data['resumed']} instances resumed" if data["resumed"] else "") + "); "
            f"overrides: instances {format_value(p['instances'])}, seed "
            f"{format_value(p['seed'])}, precision {format_value(p['precision'])}, horizon "
            f"{format_value(p['horizon'])}. Exit code {data['exit_code']}.", "",
            *regenerate_lines(data), "", "## Summary", ""]
    out += _table(SUMMARY_HEADER, summary_rows(data))
    out += ["", "### How to read the numbers", ""]
    for line in READING_NUMBERS:
        out += [line, ""]
    for line in check_lines(data):
        out += ["", line]
    verdicts = {v["claim"]: v for v in data["verdicts"]}
    for c in data["claims"]:
        v = verdicts[c["id"]]
        hyps = ", ".join(f"`{h}`" for h in c["hypotheses"]) or "none"
        uses = ", ".join(f"`{u}`" for u in c["uses"]) or "none"
        out += ["", f"## `{c['id']}` — {c['label']} ({c['kind']})", "",
                f"**Verdict: {v['text']}**{verdict_mark(v, c)}. {v['reason']}", "",
                c["statement"], "",
                f"**Hypotheses:** {hyps}. **Uses:** {uses}. **Expected:** {c['expected']}. "
                f"**Concludes:** {conclusion_text(c)}.", ""]
        decisive = decisive_record(data, c["id"], v["verdict"])
        for line in decisive_lines(decisive, v["verdict"], c):
            out += [line, ""]
        compared = comparison_rows(decisive)
        if compared:
            out += _table(("predicted vs observed", "predicted", "observed (± error)"),
                          compared) + [""]
        out += _table(INSTANCE_HEADER, instance_rows(data, c["id"]))
        out += ["", TABLE_LEGEND]
        if c.get("notes"):
            out += ["", "*Notes.* " + c["notes"]]
    out += ["", *weights_markdown(data.get("real_weights", {}))]
    versions = ", ".join(f"{k} {v}" for k, v in data["versions"].items())
    out += ["", "## Environment", "", versions, "",
            "Claim files: " + ", ".join(f"`{c['id']}` sha256 {c['sha256'][:12]}"
                                        for c in data["claims"]), ""]
    return "\n".join(out)
