r"""``report.md``: the run as Markdown, from the ``results.json`` dict.

A summary table at the top (claim, label, kind, verdict, instances holding / violated /
inconclusive / out of scope), then claim by claim: the statement (Markdown with LaTeX, as in the
claim file), the hypotheses, the claims it uses, the table of instances (predicted vs observed,
margin, error estimate), the verdict and why, and how to reproduce a counterexample.
The helpers :func:`summary_rows`, :func:`instance_rows` and :func:`format_value` are shared with
the HTML report.

Examples
--------
>>> format_value(0.123456789), format_value("1/3"), format_value([1, 2, 3, 4, 5, 6, 7])
('0.123457', '1/3', '[1, 2, 3, 4, 5, 6, …]')
"""

from __future__ import annotations

import math

from verify.report._weights_section import weights_markdown

__all__ = ["render_markdown", "summary_rows", "instance_rows", "format_value",
           "decisive_record", "decisive_lines", "verdict_class", "SUMMARY_HEADER",
           "INSTANCE_HEADER", "COUNT_KEYS", "TABLE_LEGEND"]

COUNT_KEYS = ("holds", "violated", "inconclusive", "out-of-scope", "error")
SUMMARY_HEADER = ("claim", "label", "kind", "expected", "verdict", "holds", "violated",
                  "inconclusive", "out of scope", "error")
INSTANCE_HEADER = ("instance", "seed", "verdict", "basis", "predicted vs observed", "margin",
                   "error", "margin/error", "unit", "note")
TABLE_LEGEND = ("Margin and error are in the unit named (positive margin: the conclusion holds "
                "with that much room). The basis says what the decision rests on: exact "
                "(rational arithmetic, error 0), enclosure or certificate (rigorous; the error is "
                "a bound), estimate (a run against its reference run; the error shown is the "
                "estimate times the measured safety factor κ), fit (a trend; the error is its "
                "coverage interval) or evidence. Only a violation on a rigorous basis refutes. "
                "– means not computed (the instance was undecided, out of scope, or its judge "
                "failed).")


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
    effective one: an unconfirmed violation reads "inconclusive")."""
    rows = []
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
        if ev.get("predicted") is not None or ev.get("observed") is not None:
            comparison = (f"{format_value(ev.get('predicted'))} vs "
                          f"{format_value(ev.get('observed'))}")
        else:  # the check states its comparison in the reason
            comparison = _shorten(r.get("reason") or "–", COMPARISON_WIDTH)
        ratio = _ratio(r)
        rows.append((r["instance"], format_value(r["seed"]), verdict, r.get("basis") or "–",
                     comparison, format_value(r.get("margin")), format_value(r.get("error")),
                     f"{ratio:.3g}" if math.isfinite(ratio) else "–",
                     r.get("unit") or "–", note.strip("; ")))
    return rows


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


def decisive_lines(record: dict | None, verdict: str) -> list[str]:
    """Sentences (Markdown) on the decisive instance: what decided, the certificate, and how to
    replay a counterexample."""
    if record is None:
        return []
    role = {"refuted": "Counterexample", "inconclusive": "Undecided instance"}.get(
        verdict, "Tightest instance")
    why = record.get("effective_reason") or record["reason"]
    lines = [f"**{role}: {record['instance']}** — {why}"]
    certificate = record.get("certificate")
    if certificate:
        lines.append(f"Certificate ({certificate['kind']}): {certificate.get('statement', '')}")
    if record.get("counterexample"):
        lines.append(f"Reproduce it from this report's folder: "
                     f"`verify simulate {record['counterexample']}`")
    return lines


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
           "Geshkovski–Letrouit–Polyanskiy–Rigollet, *The emergence of clusters in "
           "self-attention dynamics* (arXiv 2305.05465). Verdicts are numerical: "
           "\"supported on N instances\" means every in-scope instance held with a margin "
           "above its error estimate — never a proof.", "",
           f"Run {data['started']} → {data['finished']} ({data['seconds']:.1f} s"
           + (f", {data['resumed']} instances resumed" if data["resumed"] else "") + "); "
           f"overrides: instances {format_value(p['instances'])}, seed "
           f"{format_value(p['seed'])}, precision {format_value(p['precision'])}, horizon "
           f"{format_value(p['horizon'])}. Exit code {data['exit_code']}.", "",
           "## Summary", ""]
    out += _table(SUMMARY_HEADER, summary_rows(data))
    for line in check_lines(data):
        out += ["", line]
    verdicts = {v["claim"]: v for v in data["verdicts"]}
    for c in data["claims"]:
        v = verdicts[c["id"]]
        mark = {True: " (as expected)", False: " (**not** as expected)", None: ""}
        hyps = ", ".join(f"`{h}`" for h in c["hypotheses"]) or "none"
        uses = ", ".join(f"`{u}`" for u in c["uses"]) or "none"
        out += ["", f"## `{c['id']}` — {c['label']} ({c['kind']})", "",
                f"**Verdict: {v['text']}**{mark[v['matches_expected']]}. {v['reason']}", "",
                c["statement"], "",
                f"**Hypotheses:** {hyps}. **Uses:** {uses}. **Expected:** {c['expected']}. "
                f"**Concludes:** {conclusion_text(c)}.", ""]
        for line in decisive_lines(decisive_record(data, c["id"], v["verdict"]), v["verdict"]):
            out += [line, ""]
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
