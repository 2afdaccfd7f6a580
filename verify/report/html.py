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
Figures are shown at their native size (click one to see it full-window) with their caption as
alt text. Once its ``n`` images have all loaded the page sets ``data-images="ok:<n>"`` on its
``<html>`` element (``"bad:<k>/<n>"`` otherwise), so a headless browser can check it; the
title stays the run's.

A refuted claim is shown from its saved counterexample file (the data the re-judging command
reads): its exact data, its token paths at that file's horizon and, when the re-check recorded
it, the violated quantity over time (:mod:`verify.report._fig_violation`).

"""

from __future__ import annotations

import hashlib
import html
import json
import math
import tomllib
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import verify
from verify.atomic import write_atomic
from verify.errors import InvalidArgument
from verify.flow.simulate import simulate
from verify.model.instance_file import parse_instance
from verify.report._fig_violation import violation_figures
from verify.report._texthtml import inline_html, machine_math, markdown_to_html, plain_text
from verify.report._weights_section import weights_figures, weights_html
from verify.report.figures import (
    Predicted,
    figure_to_png_bytes,
    figure_to_svg,
    plot_attention_heatmaps,
    plot_convergence,
    plot_dependency_graph,
    plot_doubly_exponential,
    plot_trajectories,
)
from verify.report.markdown import (
    INSTANCE_HEADER,
    READING_NUMBERS,
    SUMMARY_HEADER,
    TABLE_LEGEND,
    check_lines,
    comparison_rows,
    conclusion_text,
    decisive_lines,
    decisive_record,
    findings_lines,
    format_value,
    instance_rows,
    paper_line,
    regenerate_lines,
    summary_rows,
    verdict_class,
    verdict_mark,
)
from verify.report.paper_figures import PAPER_FIGURES
from verify.run._workers import new_pool

__all__ = ["render_html", "default_figures", "page_title", "choose_variable"]

FIGURE_MAX_HORIZON = 40  # the float64 re-simulation for a figure stops here

_CSS = """
body{font:15px/1.5 Georgia,'DejaVu Serif',serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222}
h1,h2,h3{font-family:'DejaVu Sans',Helvetica,sans-serif;line-height:1.2}
h2{border-top:2px solid #ddd;padding-top:.6em;margin-top:2em}
table{border-collapse:collapse;margin:.8em 0;font:13px/1.35 'DejaVu Sans',sans-serif}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right;font-family:'DejaVu Sans Mono',monospace}
.math.plain{font-family:'DejaVu Sans Mono',Consolas,monospace;background:#f6f6fa;padding:0 2px}
div.math{display:block;margin:.6em 1.5em;padding:.4em .6em} div.math.plain{white-space:pre-wrap}
math{font-size:1.05em;font-family:'DejaVu Math TeX Gyre','STIX Two Math','Latin Modern Math',math}
code{font-family:'DejaVu Sans Mono',monospace;font-size:90%}
.v-supported{background:#d9f2dc} .v-refuted{background:#f8d4d4}
.v-refuted-expected{background:#dfe6f6} details summary{cursor:pointer}
pre{font-size:12px;background:#f7f7f7;padding:.5em;overflow-x:auto}
.v-inconclusive{background:#fbeccb} .i-holds{color:#1b6e2a} .i-violated{color:#a11}
.i-inconclusive{color:#8a5a00} .i-out-of-scope{color:#777} .i-error{color:#a11}
.verdict{padding:.5em .8em;border-radius:4px;margin:.8em 0}
.legend span.sw{display:inline-block;padding:1px 8px;margin:0 .5em 0 0;border:1px solid #bbb;
border-radius:3px}
figure{display:block;margin:.8em 0;max-width:100%} figure.wide svg{max-width:100%;height:auto}
figure img{max-width:100%;height:auto;border:1px solid #eee;cursor:zoom-in}
figcaption{font-size:13px;color:#555;max-width:900px} .note{color:#777;font-size:13px}
.meta{color:#555;font-size:13px}
#zoom{display:none;position:fixed;inset:0;z-index:10;background:rgba(20,20,20,.88);
cursor:zoom-out} #zoom.on{display:block}
#zoom img{width:98vw;height:96vh;margin:2vh 1vw 0;object-fit:contain}
@media print{body{max-width:none;margin:0;padding:0;font-size:9.5pt;line-height:1.35}
h2{break-before:auto;margin-top:.8em;padding-top:.3em} p{margin:.4em 0}
.verdict,figure,tr,pre{break-inside:avoid} .verdict{padding:.3em .5em}
figure{display:inline-block;width:49%;margin:0 0 .3em;vertical-align:top}
figure.wide{display:block;width:100%} figure img{width:100%;height:auto;border:0;cursor:auto}
figcaption{font-size:7.5pt} table{font-size:7.5pt} th,td{padding:1px 4px}
.notes{font-size:8.5pt} div.math{margin:.3em 1em;padding:.1em}
#zoom,.noprint{display:none} a{color:inherit;text-decoration:none}}
"""
_SCRIPT = """window.addEventListener('load',function(){var im=document.images,bad=0,n=0;
for(var i=0;i<im.length;i++){if(im[i].parentNode.id==='zoom'){continue;}n++;
if(!(im[i].complete&&im[i].naturalWidth>0)){bad++;}}
document.documentElement.setAttribute('data-images',bad?('bad:'+bad+'/'+n):('ok:'+n));});
document.addEventListener('click',function(e){var z=document.getElementById('zoom');
if(!z){return;}var t=e.target;if(t.tagName==='IMG'&&t.parentNode.tagName==='FIGURE'){
z.firstChild.src=t.src;z.firstChild.alt=t.alt;z.className='on';}
else if(z.className==='on'){z.className='';}});
document.addEventListener('keydown',function(e){var z=document.getElementById('zoom');
if(z&&e.key==='Escape'){z.className='';}});"""
#: The verdict colours of the summary and of each verdict box, with what they mean.
LEGEND = (("v-supported", "supported: every in-scope instance held"),
          ("v-refuted", "refuted, against the claim file's expectation"),
          ("v-refuted-expected", "refuted as expected (a known false step, or a statement "
                                 "false as literally worded)"),
          ("v-inconclusive", "inconclusive: the numerics could not decide"))


def _instance_of(record: dict, key: str = "instance_toml"):
    data = tomllib.loads(record[key], parse_float=Decimal)
    return parse_instance(data, f"<{record['instance']}>")


def _claim_variable(claim: dict) -> str | None:
    """The variable the claim's conclusions are about (``z``, ``x`` or ``direction``), if they
    name one."""
    named = {c.get("variable") for c in claim.get("conclusion") or []} - {None}
    return next(iter(named)) if len(named) == 1 and named <= {"z", "x", "direction"} else None


def _growth(values) -> float:
    """How far a path family leaves its start: ``max |v(t)| / max |v(0)|`` (inf if it
    overflows)."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(values)):
        return math.inf
    start = float(np.max(np.abs(values[0]))) or 1.0
    return float(np.max(np.abs(values))) / start


def choose_variable(traj, spec: dict, claim: dict) -> str:
    """The variable a figure of ``traj`` shows: the judge's (``evidence["figure"]``), else the
    claim's conclusions', else whichever of ``z`` and ``x`` stays bounded (``z`` blows up where
    ``V`` has negative eigenvalues, ``x`` where it has positive ones), ``z`` on a tie."""
    wanted = spec.get("variable") or _claim_variable(claim)
    if wanted in ("z", "x", "direction") and (wanted != "z" or traj.z is not None):
        return wanted
    if traj.z is None or traj.x is None:
        return "x" if traj.z is None else "z"
    return "x" if _growth(traj.x) < _growth(traj.z) / 100 else "z"


def default_figures(record: dict, claim: dict) -> list:
    r"""Token paths (with ``evidence["figure"]["predicted"]`` drawn in), ``P(t)`` heat maps with
    the rank, a convergence plot and a doubly exponential plot when the evidence carries them;
    the paths come from a float64 re-simulation of the stored exact instance (an illustration:
    the verdict rests on the check's own numerics) — of the saved counterexample file
    (``record["replay_toml"]``, its horizon) for a refutation, with the violated quantity over
    time. The variable drawn is :func:`choose_variable`'s.

    Besides the keys of the module docstring, ``evidence["figure"]`` may hold
    ``"doubly_exponential"``: ``{"times", "gaps", "errors", "fit": [slope, intercept],
    "label"}`` with ``gaps`` the logarithms :math:`\log|g(t)|` (they would underflow otherwise),
    drawn as :math:`\log(-\log|g(t)|)` by
    :func:`~verify.report.figures.plot_doubly_exponential`. ``errors``, ``fit`` and ``label`` may
    be ``None``; an entry without ``times`` or data is not drawn.
    """
    from fractions import Fraction


    spec = (record.get("evidence") or {}).get("figure") or {}
    out = []
    replay = bool(record.get("replay_toml"))
    if record.get("instance_toml") or replay:
        loaded = _instance_of(record, "replay_toml" if replay else "instance_toml")
        instance = loaded.instance
        stated = loaded.simulation.get("horizon") if replay else record.get("horizon")
        horizon = min(Fraction(str(stated or 10)), FIGURE_MAX_HORIZON)
        checkpoints = 41
        h = instance.model.h
        if h is not None:  # discrete layers: whole numbers of layers, no rescaled form
            horizon = max(h, (horizon // h) * h)
            checkpoints = sorted({(horizon * k / 40 // h) * h for k in range(41)})
        traj = simulate(instance, horizon, checkpoints=checkpoints, error_estimate=False)
        variable = choose_variable(traj, spec, claim)
        predicted = Predicted(**spec["predicted"]) if spec.get("predicted") else None
        source = "the counterexample file" if replay else "the instance"
        what = f"{record['instance']}: token paths on [0, {format_value(horizon)}]"
        out.append((what + (" with the predicted object" if predicted else "")
                    + f" (float64 re-simulation of {source}).",
                    plot_trajectories(traj, variable=variable, predicted=predicted)))
        if replay:
            out += violation_figures(record, claim, traj)
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


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height of a PNG from its IHDR chunk."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _img(caption: str, fig) -> str:
    """A figure at its native size (the browser may only shrink it to the page), its caption
    as alt text in plain Unicode; a click shows it full-window."""
    import base64


    png = figure_to_png_bytes(fig)
    width, height = _png_size(png)
    uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return (f'<figure><img src="{uri}" width="{width}" height="{height}" '
            f'alt="{html.escape(plain_text(caption))}">'
            f"<figcaption>{inline_html(machine_math(caption))}</figcaption></figure>")


def _figures(maker: Callable, *args, embed: Callable | None = None) -> str:
    """The figures of ``maker(*args)`` (as PNG images, or through ``embed``); a figure that
    cannot be drawn says why in words."""

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

    return [("Claim dependency graph: an arrow B → A means that claim A uses claim B; colour "
             "is the verdict.",
             plot_dependency_graph(edges, verdicts))]


def _svg(caption: str, fig) -> str:
    return (f'<figure class="wide">{figure_to_svg(fig)}'
            f"<figcaption>{inline_html(machine_math(caption))}</figcaption></figure>")


def _draw(job: tuple) -> str:
    maker, args = job
    return _figures(maker, *args, embed=_svg if maker is dependency_figures else _img)


def draw_figures(jobs: dict) -> dict:
    """``{key: (maker, args)}`` → ``{key: html}``, drawn in parallel worker processes (one per
    core; figures are independent and drawing them is most of a report's time), serially when
    there is one core or a pool cannot start. The workers die with this process (a report
    killed mid-way leaves none behind: :func:`verify.run._workers.worker_init`)."""
    import os


    workers = min(len(jobs), os.cpu_count() or 1)
    if workers > 1:
        try:
            with new_pool(workers) as pool:
                return dict(zip(jobs, pool.map(_draw, jobs.values()), strict=True))
        except (OSError, RuntimeError):  # no processes here (or a broken pool): draw serially
            pass
    return {key: _draw(job) for key, job in jobs.items()}


def _replay_text(record: dict, run_dir: Path | None) -> str | None:
    """The saved counterexample file of a record (from the run's folder), or ``None``."""
    if not record.get("counterexample") or run_dir is None:
        return None
    try:
        return (Path(run_dir) / record["counterexample"]).read_text(encoding="utf-8")
    except OSError:
        return None


def _decisive(data: dict, claim_id: str, verdict: str, run_dir: Path | None) -> dict | None:
    """The decisive record, with ``replay_toml`` (its counterexample file) for a refutation."""
    record = decisive_record(data, claim_id, verdict)
    if record is None:
        return None
    replay = _replay_text(record, run_dir) if verdict == "refuted" else None
    return dict(record, replay_toml=replay) if replay else record


def claim_figure_job(data: dict, claim: dict, verdict: str, run_dir: Path | None) -> tuple | None:
    """The figure job ``(maker, args)`` of one claim (its decisive instance, from
    ``data["instances"]``), or ``None`` when it has none to draw."""
    decisive = _decisive(data, claim["id"], verdict, run_dir)
    if decisive is None or not (decisive.get("instance_toml") or decisive.get("replay_toml")) \
            or decisive.get("exception"):
        return None
    return default_figures, (decisive, claim)


def paper_figure_jobs() -> dict:
    """The jobs of the paper's figures (fixed and seeded: they depend on nothing in a run)."""
    return {("paper", i): (maker, ()) for i, maker in enumerate(PAPER_FIGURES)}


def _figure_jobs(data: dict, check: bool, run_dir: Path | None = None) -> dict:
    """Every figure of the report as a job: the paper's figures (slowest, first), the claims'
    decisive instances, the dependency graph."""
    verdicts = {v["claim"]: v for v in data["verdicts"]}
    jobs: dict = {} if check else paper_figure_jobs()
    for c in data["claims"]:
        job = claim_figure_job(data, c, verdicts[c["id"]]["verdict"], run_dir)
        if job is not None:
            jobs[("claim", c["id"])] = job
    if data.get("real_weights", {}).get("available"):
        jobs[("weights",)] = (weights_figures, (data["real_weights"],))
    jobs[("graph",)] = graph_figure_job(data["claims"], verdicts)
    return jobs


def graph_figure_job(claims: list[dict], verdicts: dict) -> tuple:
    """The job ``(maker, args)`` of the claim dependency graph: ``claims`` as in
    ``results.json``, ``verdicts`` the claim verdicts (``{"verdict", "matches_expected"}``) by
    claim id (the graph is coloured by :func:`verdict_class`)."""
    return dependency_figures, ({c["id"]: list(c["uses"]) for c in claims},
                                {k: verdict_class(v) for k, v in verdicts.items()})


def job_digest(job: tuple) -> str:
    """A hash of a figure job (its maker and its arguments): a figure drawn ahead is used only
    for the very job the report asks for."""
    maker, args = job
    blob = json.dumps([maker.__module__, maker.__qualname__, args], sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


def draw_ahead(job: tuple) -> tuple[str, str]:
    """``(job_digest(job), html)``: a figure job drawn before the report is written (alongside
    the checks, :func:`verify.report.results.report_side_jobs`)."""
    return job_digest(job), _draw(job)


def _machine(text: str) -> str:
    """HTML of a machine-written sentence: its pseudo-math typeset like the statements."""
    return inline_html(machine_math(text))


def _comparison_table(record: dict | None) -> str:
    rows = comparison_rows(record)
    if not rows:
        return ""
    body = "".join(f"<tr><td>{_machine(q)}</td><td>{_machine(p)}</td>"
                   f'<td class="num">{html.escape(o)}</td></tr>' for q, p, o in rows)
    return ("<table><thead><tr><th>predicted vs observed</th><th>predicted</th>"
            f"<th>observed (± error)</th></tr></thead><tbody>{body}</tbody></table>")


def _claim_section(data: dict, c: dict, v: dict, figures: str,
                   run_dir: Path | None = None) -> str:
    """Verdict against the expectation, statement, the decisive instance (its basis, margin,
    certificate or reason, predicted against observed, the commands that re-judge and replay a
    counterexample, its exact data — the counterexample file's for a refutation — and its
    figures), then the instance table."""
    e = html.escape
    records = [r for r in data["instances"] if r["claim"] == c["id"]]
    rows = instance_rows(data, c["id"])
    comparison = INSTANCE_HEADER.index("predicted vs observed")
    hyps = ", ".join(f"<code>{e(h)}</code>" for h in c["hypotheses"]) or "none"
    uses = ", ".join(f'<a href="#{e(u)}"><code>{e(u)}</code></a>' for u in c["uses"]) or "none"
    decisive = _decisive(data, c["id"], v["verdict"], run_dir)
    parts = [f'<h2 id="{e(c["id"])}"><code>{e(c["id"])}</code> — {e(c["label"])} '
             f"<small>({e(c['kind'])})</small></h2>",
             f'<div class="verdict v-{e(verdict_class(v))}"><strong>Verdict: {e(v["text"])}'
             f"</strong>{inline_html(verdict_mark(v, c))}. {_machine(v['reason'])}"
             f"{_grades(v)}</div>",
             markdown_to_html(c["statement"]),
             f"<p><strong>Hypotheses:</strong> {hyps}. <strong>Uses:</strong> {uses}. "
             f"<strong>Expected:</strong> {e(c['expected'])}. <strong>Concludes:</strong> "
             f"{inline_html(conclusion_text(c))}.</p>"]
    parts += [f"<p>{_machine(line)}</p>" for line in
              decisive_lines(decisive, v["verdict"], c)]
    parts.append(_comparison_table(decisive))
    if decisive is not None and decisive.get("replay_toml"):
        parts.append(f"<details><summary>Exact data of {e(decisive['instance'])}: the "
                     f"counterexample file <code>{e(decisive['counterexample'])}</code> (what "
                     f"the commands above read)</summary><pre>{e(decisive['replay_toml'])}</pre>"
                     "</details>")
    elif decisive is not None and decisive.get("instance_toml"):
        parts.append(f"<details><summary>Exact data of {e(decisive['instance'])} (an instance "
                     f"file)</summary><pre>{e(decisive['instance_toml'])}</pre></details>")
    parts.append(figures)
    machine_rows = [tuple(cell if j in (0, 1, 2) else machine_math(str(cell))
                          for j, cell in enumerate(row)) for row in rows]
    parts += [_table(INSTANCE_HEADER, machine_rows,
                     [f"i-{r['effective_verdict']}" for r in records],
                     [{comparison: machine_math(r.get("reason") or "")} for r in records]),
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


def paper_figures_cache(cache_dir: str | Path) -> Path:
    """The file in ``cache_dir`` where the paper's figures of this very code are kept."""
    return Path(cache_dir) / f"paper-figures-{_code_key()}.html"


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


def _legend() -> str:
    swatches = " ".join(f'<span class="sw {cls}">{html.escape(text)}</span>'
                        for cls, text in LEGEND)
    return (f'<p class="legend meta"><strong>Colours.</strong> {swatches}. In the instance '
            'tables: <span class="i-holds">holds</span>, <span class="i-violated">violated'
            '</span>, <span class="i-inconclusive">inconclusive</span>, <span '
            'class="i-out-of-scope">out of scope</span>.</p>')


def render_html(data: dict, *, figures: bool = True, cache_dir: str | Path | None = None,
                run_dir: str | Path | None = None, ahead: dict | None = None) -> str:
    """The self-contained HTML report of a ``results.json`` dict (figures optional).

    ``cache_dir``: where the paper's figures are kept between runs of the same code (they
    take half the time of a report and never change with the run). ``run_dir``: the run's
    folder, where the saved counterexample files are read (a refutation is shown from its
    file). ``ahead``: figures already drawn, ``{key: (job_digest, html)}`` (:func:`draw_ahead`);
    one is used when its digest is that of the job asked for, else drawn again."""
    e = html.escape
    run_dir = None if run_dir is None else Path(run_dir)
    p = data["parameters"]
    verdicts = {v["claim"]: v for v in data["verdicts"]}
    rows = summary_rows(data)
    summary = _table(SUMMARY_HEADER, rows, [f"v-{verdict_class(verdicts[r[0]])}" for r in rows])
    resumed = f", {data['resumed']} resumed" if data["resumed"] else ""
    links = " · ".join(f'<a href="#{e(c["id"])}">{e(c["id"])}</a>' for c in data["claims"])
    check = data.get("command") == "check"
    title = "Conjecture check" if check else "Claim suite run"
    reading = "".join(f"<p>{inline_html(line)}</p>" for line in READING_NUMBERS)
    body = [f"<h1>{title} <code>{e(data['run_id'])}</code></h1>",
            f"<p>{inline_html(paper_line())} Verdicts are numerical: “supported on N "
            "instances” means every in-scope instance held with a margin above its error "
            "estimate — never a proof. Formulas are typeset as MathML (hover one for its LaTeX "
            "source); click a figure to see it full-window.</p>",
            *(f"<p>{inline_html(line)}</p>" for line in findings_lines(data)),
            f'<p class="meta">Run {e(data["started"])} → {e(data["finished"])} '
            f"({data['seconds']:.1f} s{resumed}"
            f"); overrides: instances {e(format_value(p['instances']))}, seed "
            f"{e(format_value(p['seed']))}, precision {e(format_value(p['precision']))}, "
            f"horizon {e(format_value(p['horizon']))}; exit code {data['exit_code']}.</p>",
            *(f'<p class="meta">{inline_html(line)}</p>' for line in regenerate_lines(data)),
            "<h2>Summary</h2>", _legend(), summary, f"<p>{links}</p>",
            f"<details open><summary><strong>How to read the numbers</strong></summary>{reading}"
            "</details>"]
    body += [f"<p>{e(line)}</p>" for line in check_lines(data)]
    jobs = _figure_jobs(data, check, run_dir) if figures else {}
    cached = None if cache_dir is None or not figures or check else \
        paper_figures_cache(cache_dir)
    if cached is not None and cached.is_file():
        jobs = {key: job for key, job in jobs.items() if key[0] != "paper"}
    ready = {key: (ahead or {})[key][1] for key, job in jobs.items()
             if (ahead or {}).get(key, ("",))[0] == job_digest(job)}
    fresh = draw_figures({key: job for key, job in jobs.items() if key not in ready})
    drawn = {key: ready[key] if key in ready else fresh[key] for key in jobs}
    body.append(drawn.get(("graph",), ""))
    for c in data["claims"]:
        body.append(_claim_section(data, c, verdicts[c["id"]], drawn.get(("claim", c["id"]), ""),
                                   run_dir))
    paper = _paper_section(drawn, cached) if figures and not check else []
    if paper:
        body += ["<h2>Paper figures</h2>", *paper]
    body += weights_html(data.get("real_weights", {}), drawn.get(("weights",), ""))
    versions = ", ".join(f"{e(k)} {e(str(v))}" for k, v in data["versions"].items())
    body.append(f'<h2>Environment</h2><p class="meta">{versions}</p><p class="meta">Claim '
                "files: " + ", ".join(f"<code>{e(c['id'])}</code> sha256 "
                                      f"{e(c['sha256'][:12])}" for c in data["claims"]) + "</p>")
    body.append('<div id="zoom" class="noprint"><img alt=""></div>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(page_title(data))}</title><style>{_CSS}</style>"
            f"<script>{_SCRIPT}</script></head><body>\n" + "\n".join(body)
            + "\n</body></html>\n")


def page_title(data: dict) -> str:
    """The page's title: what was run, its id and its verdicts in a few words.

    >>> page_title({"run_id": "20261101T000000Z-abcdef", "command": "run",
    ...             "verdicts": [{"verdict": "supported"}, {"verdict": "refuted"}]})
    'verify run 20261101T000000Z-abcdef — 2 claims: 1 supported, 1 refuted'
    """
    counts: dict[str, int] = {}
    for v in data["verdicts"]:
        counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
    words = ", ".join(f"{counts[k]} {k}" for k in ("supported", "refuted", "inconclusive")
                      if counts.get(k))
    n = len(data["verdicts"])
    return (f"verify {data.get('command') or 'run'} {data['run_id']} — {n} claim"
            f"{'s' if n != 1 else ''}: {words or 'none judged'}")


def _grades(v: dict) -> str:
    """What the in-scope instances rest on (``grades`` of results.json), as one sentence."""
    grades = v.get("grades") or {}
    names = {"proved": "proved on the instance (for all t ≥ 0)",
             "violated": "violated on a rigorous basis", "estimate": "supported by an "
             "error estimate", "evidence": "evidence", "unstated": "basis not stated",
             "undecided": "undecided"}
    parts = [f"{k} {names[g]}" for g, k in grades.items() if k and g in names]
    return f" <em>Grades: {', '.join(parts)}.</em>" if parts else ""
