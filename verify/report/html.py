r"""``report.html``: a self-contained report (inline CSS, figures as ``data:`` PNG URIs, formulas
as MathML with the LaTeX source in a tooltip; nothing is fetched from a network).

Same content as ``report.md`` plus figures: the claim dependency graph coloured by verdict and,
per claim, figures of its decisive instance (the counterexample of a refutation, the first
undecided instance of an inconclusive claim, the tightest hold of a supported one).

**Figure protocol.** :func:`default_figures` ``(record, claim)`` returns a list of
``(caption, Figure)``; ``record`` is the instance's entry of ``results.json`` (with its exact
``instance_toml``) and ``claim`` the claim's entry.  A judge or a prediction steers it through
``evidence["figure"]`` (plain, small):

* ``"predicted"``: fields of :class:`verify.report.figures.Predicted` (``polytope_vertices``,
  ``hyperplanes``, ``points``, ``subspace``, ``anchors``, ``label``) drawn over the paths;
* ``"variable"``: ``"z"`` (default) or ``"x"``;
* ``"convergence"``: ``{"times", "distances", "errors", "fit": [rate, intercept], "label"}``;
* ``"doubly_exponential"``: ``{"times", "gaps" (log form), "errors", "fit": [slope, intercept]}``.

:data:`PAPER_FIGURES` is a list of callables ``() -> list[(caption, Figure)]`` rendered in a
"Paper figures" section.  A figure that fails becomes a note in the report, never an error.
The page sets ``document.title`` to ``"ok:<n>"`` once its ``n`` images have all loaded
(``"bad:<k>/<n>"`` otherwise), so a headless browser can check it.

"""

from __future__ import annotations

import html
import tomllib
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

from verify.atomic import write_atomic
from verify.report._texthtml import inline_html, markdown_to_html
from verify.report._weights_section import weights_figures, weights_html
from verify.report.markdown import (
    INSTANCE_HEADER,
    SUMMARY_HEADER,
    TABLE_LEGEND,
    check_lines,
    conclusion_text,
    decisive_lines,
    decisive_record,
    format_value,
    instance_rows,
    summary_rows,
    verdict_class,
)

__all__ = ["render_html", "PAPER_FIGURES", "default_figures"]

PAPER_FIGURES: list[Callable] = []
FIGURE_MAX_HORIZON = 40  # the float64 re-simulation for a figure stops here

_CSS = """
body{font:15px/1.5 Georgia,'DejaVu Serif',serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222}
h1,h2,h3{font-family:'DejaVu Sans',Helvetica,sans-serif;line-height:1.2}
h2{border-top:2px solid #ddd;padding-top:.6em;margin-top:2em}
table{border-collapse:collapse;margin:.8em 0;font:13px/1.35 'DejaVu Sans',sans-serif}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right;font-family:'DejaVu Sans Mono',monospace}
.math.plain{font-family:'DejaVu Sans Mono',Consolas,monospace;background:#f6f6fa;padding:0 2px}
div.math{display:block;margin:.6em 1.5em;padding:.4em .6em} div.math.plain{white-space:pre-wrap}
math{font-size:1.05em}
code{font-family:'DejaVu Sans Mono',monospace;font-size:90%}
.v-supported{background:#d9f2dc} .v-refuted{background:#f8d4d4}
.v-refuted-expected{background:#dfe6f6} details summary{cursor:pointer}
pre{font-size:12px;background:#f7f7f7;padding:.5em;overflow-x:auto}
.v-inconclusive{background:#fbeccb} .i-holds{color:#1b6e2a} .i-violated{color:#a11}
.i-inconclusive{color:#8a5a00} .i-out-of-scope{color:#777} .i-error{color:#a11}
.verdict{padding:.5em .8em;border-radius:4px;margin:.8em 0}
figure{display:inline-block;margin:.5em 1em .5em 0;vertical-align:top;max-width:48%}
figure.wide{display:block;max-width:100%} figure.wide svg{max-width:100%;height:auto}
figure img{max-width:100%;width:540px;border:1px solid #eee} figcaption{font-size:13px;color:#555;
max-width:520px} .note{color:#777;font-size:13px} .meta{color:#555;font-size:13px}
"""
_SCRIPT = """window.addEventListener('load',function(){var im=document.images,bad=0;
for(var i=0;i<im.length;i++){if(!(im[i].complete&&im[i].naturalWidth>0)){bad++;}}
document.title=bad?('bad:'+bad+'/'+im.length):('ok:'+im.length);});"""


def _instance_of(record: dict):
    from verify.instance_file import parse_instance

    data = tomllib.loads(record["instance_toml"], parse_float=Decimal)
    return parse_instance(data, f"<{record['instance']}>").instance


def default_figures(record: dict, claim: dict) -> list:
    r"""Token paths (with ``evidence["figure"]["predicted"]`` drawn in), ``P(t)`` heat maps with
    the rank, a convergence plot and a doubly exponential plot when the evidence carries them;
    the paths come from a float64 re-simulation of the stored exact instance (an illustration:
    the verdict rests on the check's own numerics).

    Besides the keys of the module docstring, ``evidence["figure"]`` may hold
    ``"doubly_exponential"``: ``{"times", "gaps", "errors", "fit": [slope, intercept],
    "label"}`` with ``gaps`` the logarithms :math:`\log|g(t)|` (they would underflow otherwise),
    drawn as :math:`\log(-\log|g(t)|)` by
    :func:`~verify.report.figures.plot_doubly_exponential`. ``errors``, ``fit`` and ``label`` may
    be ``None``; an entry without ``times`` or data is not drawn.
    """
    from fractions import Fraction

    from verify.report.figures import (
        Predicted,
        plot_attention_heatmaps,
        plot_convergence,
        plot_doubly_exponential,
        plot_trajectories,
    )
    from verify.simulate import simulate

    spec = (record.get("evidence") or {}).get("figure") or {}
    out = []
    if record.get("instance_toml"):
        instance = _instance_of(record)
        horizon = min(Fraction(record.get("horizon") or 10), FIGURE_MAX_HORIZON)
        checkpoints, variable = 41, spec.get("variable", "z")
        h = instance.model.h
        if h is not None:  # discrete layers: whole numbers of layers, no rescaled form
            horizon = max(h, (horizon // h) * h)
            checkpoints = sorted({(horizon * k / 40 // h) * h for k in range(41)})
            variable = spec.get("variable", "x")
        traj = simulate(instance, horizon, checkpoints=checkpoints, error_estimate=False)
        predicted = Predicted(**spec["predicted"]) if spec.get("predicted") else None
        what = f"{record['instance']}: token paths on [0, {format_value(horizon)}]"
        out.append((what + (" with the predicted object" if predicted else "")
                    + " (float64 re-simulation).",
                    plot_trajectories(traj, variable=variable, predicted=predicted)))
        out.append((f"{record['instance']}: attention matrix P(t) at a few times and its "
                    "numerical rank.", plot_attention_heatmaps(traj)))
    conv = spec.get("convergence")
    if conv and conv.get("times") and conv.get("distances"):
        kwargs = {k: conv[k] for k in ("errors", "label") if conv.get(k) is not None}
        fit = tuple(conv["fit"]) if conv.get("fit") else None
        out.append((f"{record['instance']}: distance to the predicted limit (log scale)"
                    + (" with the fitted rate." if fit else "."),
                    plot_convergence(conv["times"], conv["distances"], fit=fit, **kwargs)))
    double = spec.get("doubly_exponential")
    if double and double.get("times") and double.get("gaps"):
        kwargs = {k: double[k] for k in ("errors", "label") if double.get(k) is not None}
        fit = tuple(double["fit"]) if double.get("fit") else None
        out.append((f"{record['instance']}: doubly exponential convergence, log(−log gap) "
                    "against t" + (" with the fitted line." if fit else "."),
                    plot_doubly_exponential(double["times"], double["gaps"], fit=fit, log=True,
                                            **kwargs)))
    return out


def _img(caption: str, fig) -> str:
    from verify.report.figures import figure_to_data_uri

    uri = figure_to_data_uri(fig)
    return (f'<figure><img src="{uri}" alt="{html.escape(caption)}">'
            f"<figcaption>{inline_html(caption)}</figcaption></figure>")


def _figures(maker: Callable, *args, embed: Callable | None = None) -> str:
    """The figures of ``maker(*args)`` (as PNG images, or through ``embed``); a figure that
    cannot be drawn says why in words."""
    from verify.errors import InvalidArgument

    try:
        return "".join((embed or _img)(caption, fig) for caption, fig in maker(*args))
    except InvalidArgument as exc:  # a sentence naming the problem
        why = str(exc)
    except Exception as exc:  # noqa: BLE001 - a figure never breaks a report
        why = f"drawing it failed ({type(exc).__name__}); the verdict does not depend on it"
    return f'<p class="note">This figure could not be drawn: {html.escape(why[:300])}</p>'


def _cell(value, full: str | None = None) -> str:
    """A table cell; a text cut for the table (ending in "…") expands to ``full``."""
    text = str(value)
    if full and text.endswith("…") and " ".join(full.split()) != text:
        return (f"<td><details><summary>{inline_html(text)}</summary>{inline_html(full)}"
                "</details></td>")
    return f"<td>{inline_html(text)}</td>"


def _table(header, rows, classes=None, full=None) -> str:
    """``full[i]``: the uncut text of row ``i``'s cells, by column index."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes else ""
        uncut = full[i] if full else {}
        cells = "".join(_cell(x, uncut.get(j)) for j, x in enumerate(row))
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def dependency_figures(edges: dict, verdicts: dict) -> list:
    """The claim dependency graph, coloured by verdict (a figure maker)."""
    from verify.report.figures import plot_dependency_graph

    return [("Claim dependency graph: an arrow B → A means that claim A uses claim B; colour "
             "is the verdict.",
             plot_dependency_graph(edges, verdicts))]


def _svg(caption: str, fig) -> str:
    from verify.report.figures import figure_to_svg

    return (f'<figure class="wide">{figure_to_svg(fig)}'
            f"<figcaption>{inline_html(caption)}</figcaption></figure>")


def _draw(job: tuple) -> str:
    maker, args = job
    return _figures(maker, *args, embed=_svg if maker is dependency_figures else _img)


def draw_figures(jobs: dict) -> dict:
    """``{key: (maker, args)}`` → ``{key: html}``, drawn in parallel worker processes (one per
    core; figures are independent and drawing them is most of a report's time), serially when
    there is one core or a pool cannot start. The workers die with this process (a report
    killed mid-way leaves none behind: :func:`verify.run._workers.worker_init`)."""
    import os

    from verify.run._workers import new_pool

    workers = min(len(jobs), os.cpu_count() or 1)
    if workers > 1:
        try:
            with new_pool(workers) as pool:
                return dict(zip(jobs, pool.map(_draw, jobs.values()), strict=True))
        except (OSError, RuntimeError):  # no processes here (or a broken pool): draw serially
            pass
    return {key: _draw(job) for key, job in jobs.items()}


def _figure_jobs(data: dict, check: bool) -> dict:
    """Every figure of the report as a job: the paper's figures (slowest, first), the claims'
    decisive instances, the dependency graph."""
    verdicts = {v["claim"]: v for v in data["verdicts"]}
    jobs: dict = {}
    if not check:
        jobs.update({("paper", i): (maker, ()) for i, maker in enumerate(PAPER_FIGURES)})
    for c in data["claims"]:
        decisive = decisive_record(data, c["id"], verdicts[c["id"]]["verdict"])
        if decisive is not None and decisive.get("instance_toml") \
                and not decisive.get("exception"):
            jobs[("claim", c["id"])] = (default_figures, (decisive, c))
    if data.get("real_weights", {}).get("available"):
        jobs[("weights",)] = (weights_figures, (data["real_weights"],))
    jobs[("graph",)] = (dependency_figures, ({c["id"]: list(c["uses"]) for c in data["claims"]},
                                             {k: verdict_class(v) for k, v in verdicts.items()}))
    return jobs


def _claim_section(data: dict, c: dict, v: dict, figures: str) -> str:
    """Verdict against the expectation, statement, the decisive instance (its certificate or
    reason, the replay command, its exact data, its figures), then the instance table."""
    e = html.escape
    records = [r for r in data["instances"] if r["claim"] == c["id"]]
    rows = instance_rows(data, c["id"])
    comparison = INSTANCE_HEADER.index("predicted vs observed")
    hyps = ", ".join(f"<code>{e(h)}</code>" for h in c["hypotheses"]) or "none"
    uses = ", ".join(f'<a href="#{e(u)}"><code>{e(u)}</code></a>' for u in c["uses"]) or "none"
    mark = {True: " (as expected)", False: " (<strong>not</strong> as expected)", None: ""}
    decisive = decisive_record(data, c["id"], v["verdict"])
    parts = [f'<h2 id="{e(c["id"])}"><code>{e(c["id"])}</code> — {e(c["label"])} '
             f"<small>({e(c['kind'])})</small></h2>",
             f'<div class="verdict v-{e(verdict_class(v))}"><strong>Verdict: {e(v["text"])}'
             f"</strong>{mark[v['matches_expected']]}. {inline_html(v['reason'])}"
             f"{_grades(v)}</div>",
             markdown_to_html(c["statement"]),
             f"<p><strong>Hypotheses:</strong> {hyps}. <strong>Uses:</strong> {uses}. "
             f"<strong>Expected:</strong> {e(c['expected'])}. <strong>Concludes:</strong> "
             f"{inline_html(conclusion_text(c))}.</p>"]
    parts += [f"<p>{inline_html(line)}</p>" for line in decisive_lines(decisive, v["verdict"])]
    if decisive is not None and decisive.get("instance_toml"):
        parts.append(f"<details><summary>Exact data of {e(decisive['instance'])} (an instance "
                     f"file)</summary><pre>{e(decisive['instance_toml'])}</pre></details>")
    parts.append(figures)
    parts += [_table(INSTANCE_HEADER, rows, [f"i-{r['effective_verdict']}" for r in records],
                     [{comparison: r.get("reason") or ""} for r in records]),
              f'<p class="note">{e(TABLE_LEGEND)}</p>']
    if c.get("notes"):
        parts.append('<div class="notes"><em>Notes.</em> ' + markdown_to_html(c["notes"])
                     + "</div>")
    return "\n".join(parts)


def _code_key() -> str:
    """A hash of this package's source and of the libraries that draw: the paper's figures
    depend on nothing else (their setups are fixed and seeded)."""
    import hashlib
    import importlib.metadata

    import verify

    digest = hashlib.sha256()
    root = Path(verify.__file__).parent
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    for name in ("numpy", "scipy", "matplotlib", "python-flint", "networkx"):
        try:
            digest.update(f"{name}={importlib.metadata.version(name)}".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(name.encode())
    return digest.hexdigest()[:20]


def _paper_section(drawn: dict, cached: Path | None) -> list[str]:
    """The paper's figures: drawn now (and kept in the file ``cached``) or read from it (its
    name carries :func:`_code_key`: the figures of this very code)."""
    paper = [html_ for key, html_ in drawn.items() if key[0] == "paper"]
    if cached is None:
        return paper
    if paper:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(cached, "\n".join(paper))  # never a truncated cache to reuse
        except OSError:  # a cache that cannot be written only costs time
            pass
        return paper
    return [cached.read_text(encoding="utf-8")] if cached.is_file() else []


def render_html(data: dict, *, figures: bool = True, cache_dir: str | Path | None = None) -> str:
    """The self-contained HTML report of a ``results.json`` dict (figures optional).

    ``cache_dir``: where the paper's figures are kept between runs of the same code (they
    take half the time of a report and never change with the run)."""
    import verify.report.paper_figures  # noqa: F401  (fills PAPER_FIGURES)
    e = html.escape
    p = data["parameters"]
    verdicts = {v["claim"]: v for v in data["verdicts"]}
    rows = summary_rows(data)
    summary = _table(SUMMARY_HEADER, rows, [f"v-{verdict_class(verdicts[r[0]])}" for r in rows])
    resumed = f", {data['resumed']} resumed" if data["resumed"] else ""
    links = " · ".join(f'<a href="#{e(c["id"])}">{e(c["id"])}</a>' for c in data["claims"])
    check = data.get("command") == "check"
    title = "Conjecture check" if check else "Claim suite run"
    body = [f"<h1>{title} <code>{e(data['run_id'])}</code></h1>",
            "<p>Geshkovski–Letrouit–Polyanskiy–Rigollet, <em>The emergence of clusters in "
            "self-attention dynamics</em> (arXiv 2305.05465). Verdicts are numerical: "
            "“supported on N instances” means every in-scope instance held with a margin above "
            "its error estimate — never a proof. Formulas are typeset as MathML; hover one for "
            "its LaTeX source.</p>",
            f'<p class="meta">Run {e(data["started"])} → {e(data["finished"])} '
            f"({data['seconds']:.1f} s{resumed}"
            f"); overrides: instances {e(format_value(p['instances']))}, seed "
            f"{e(format_value(p['seed']))}, precision {e(format_value(p['precision']))}, "
            f"horizon {e(format_value(p['horizon']))}; exit code {data['exit_code']}.</p>",
            "<h2>Summary</h2>", summary, f"<p>{links}</p>"]
    body += [f"<p>{e(line)}</p>" for line in check_lines(data)]
    jobs = _figure_jobs(data, check) if figures else {}
    cached = None if cache_dir is None or not figures or check else \
        Path(cache_dir) / f"paper-figures-{_code_key()}.html"
    if cached is not None and cached.is_file():
        jobs = {key: job for key, job in jobs.items() if key[0] != "paper"}
    drawn = draw_figures(jobs)
    body.append(drawn.get(("graph",), ""))
    for c in data["claims"]:
        body.append(_claim_section(data, c, verdicts[c["id"]], drawn.get(("claim", c["id"]), "")))
    paper = _paper_section(drawn, cached) if figures and not check else []
    if paper:
        body += ["<h2>Paper figures</h2>", *paper]
    body += weights_html(data.get("real_weights", {}), drawn.get(("weights",), ""))
    versions = ", ".join(f"{e(k)} {e(str(v))}" for k, v in data["versions"].items())
    body.append(f'<h2>Environment</h2><p class="meta">{versions}</p><p class="meta">Claim '
                "files: " + ", ".join(f"<code>{e(c['id'])}</code> sha256 "
                                      f"{e(c['sha256'][:12])}" for c in data["claims"]) + "</p>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>verify run {e(data['run_id'])}</title><style>{_CSS}</style>"
            f"<script>{_SCRIPT}</script></head><body>\n" + "\n".join(body)
            + "\n</body></html>\n")


def _grades(v: dict) -> str:
    """What the in-scope instances rest on (``grades`` of results.json), as one sentence."""
    grades = v.get("grades") or {}
    names = {"proved": "proved on the instance (for all t ≥ 0)",
             "violated": "violated on a rigorous basis", "estimate": "supported by an "
             "error estimate", "evidence": "evidence", "unstated": "basis not stated",
             "undecided": "undecided"}
    parts = [f"{k} {names[g]}" for g, k in grades.items() if k and g in names]
    return f" <em>Grades: {', '.join(parts)}.</em>" if parts else ""
