r"""The "Real weights" section of a report: head table, spectra, one sentence's token paths.

Built only when the run judged the claim ``real-heads`` (so other reports pay nothing) and the
weights are installed; otherwise the section is absent, or one line says why the weights are
unavailable.  :func:`real_weights_part` computes the data once per run (it goes into
``results.json`` under ``real_weights``); :func:`weights_markdown` and :func:`weights_html`
render it, :func:`weights_figures` draws it.

Examples
--------
>>> weights_markdown({"available": False, "reason": "not installed"})
['## Real weights', '', 'Not shown: not installed']
>>> weights_markdown({})
[]
"""

from __future__ import annotations

import functools
import html

from verify.errors import OutOfScope
from verify.report._fig_weights import sentence_paths_figure, weights_spectra_figure
from verify.report._texthtml import inline_html, machine_math
from verify.weights import (
    classify_heads,
    count_classes,
    embed,
    head_weights,
    load_weights,
    tokenize,
)
from verify.weights._dynamics import sentence_dynamics
from verify.weights._text import (
    COLUMNS,
    LEGEND,
    counts_sentence,
    dynamics_lines,
    head_table_markdown,
    sphere_line,
    table_cells,
)

__all__ = ["real_weights_part", "weights_markdown", "weights_html", "weights_figures",
           "CLAIM_ID"]

CLAIM_ID = "real-heads"  #: the claim whose presence in a run adds the section
_DONE: dict = {}


@functools.lru_cache(maxsize=2)
def _weights(source: str | None):
    return load_weights(source)


def _family(claim):
    return next((f for f in claim.families if f.kind == "weights"), None)


def classes_part(source: str | None, layer: int) -> list:
    """The classes of every head of one layer (the head table and the spectra)."""
    weights = _weights(source)
    return classify_heads(weights, heads=[(layer, h) for h in range(weights.n_heads)])


def dynamics_part(source: str | None, sentence: str, head: str, variant: str,
                  horizon: float) -> dict:
    """:func:`~verify.weights._dynamics.sentence_dynamics` of ``head`` (``"layer.head"``) on
    ``sentence``."""
    weights = _weights(source)
    words, ids = tokenize(weights, sentence)
    layer, index = (int(v) for v in head.split("."))
    return sentence_dynamics(head_weights(weights, layer, index), embed(weights, ids), words,
                             variant=variant, horizon=horizon)


def weights_side_jobs(claim) -> dict:
    """The section's computations as independent jobs ``{key: (function, args)}`` (the run
    does them alongside the checks: :func:`verify.report.results.report_side_jobs`); ``{}``
    when the weights are not installed or the claim has no weights family."""
    family = _family(claim)
    if family is None:
        return {}
    try:
        weights = _weights(family.source)
    except OutOfScope:
        return {}
    jobs = {("weights", "dynamics", variant): (dynamics_part, (
        family.source, family.sentence, family.heads[0], variant, float(family.horizon)))
        for variant in ("plain", "sphere")}
    jobs.update({("weights", "classes", layer): (classes_part, (family.source, layer))
                 for layer in range(weights.n_layers)})
    return jobs


def _compute(claim, ahead: dict | None = None) -> dict:
    """The section's data; the parts in ``ahead`` (results of :func:`weights_side_jobs`, by
    key) are not computed again."""
    family = _family(claim)
    if family is None:
        return {}
    try:
        weights = _weights(family.source)
        tokenize(weights, family.sentence)  # OutOfScope without a usable tokenizer
    except OutOfScope as exc:
        return {"available": False, "reason": str(exc)}
    done = dict(ahead or {})
    missing = [layer for layer in range(weights.n_layers) if ("weights", "classes", layer)
               not in done]
    found = iter(classify_heads(weights, heads=[(layer, h) for layer in missing
                                                for h in range(weights.n_heads)], jobs=2))
    for layer in missing:
        done["weights", "classes", layer] = [next(found) for _ in range(weights.n_heads)]
    for key, (function, args) in weights_side_jobs(claim).items():
        if key not in done:
            done[key] = function(*args)
    classes = [c for layer in range(weights.n_layers) for c in done["weights", "classes", layer]]
    return {"available": True, "source": weights.source, "counts": count_classes(classes),
            "counts_text": counts_sentence(classes), "table": head_table_markdown(classes),
            "heads": [c.to_json() for c in classes], "sentence": family.sentence,
            "dynamics": done["weights", "dynamics", "plain"],
            "sphere": done["weights", "dynamics", "sphere"]}


def real_weights_part(run) -> dict:
    """``{"real_weights": {...}}`` for a run that judged ``real-heads``, else ``{}`` (the parts
    computed alongside the checks, in ``run.side``, are used as they are)."""
    claim = next((c for c in run.claims if c.id == CLAIM_ID), None)
    if claim is None:
        return {}
    key = (run.run_id, claim.sha256)
    if key not in _DONE:
        _DONE.clear()
        _DONE[key] = _compute(claim, getattr(run, "side", None))
    return {"real_weights": _DONE[key]} if _DONE[key] else {}


def weights_markdown(part: dict) -> list[str]:
    """Markdown lines of the section (empty when there is none)."""

    if not part:
        return []
    if not part.get("available"):
        return ["## Real weights", "", f"Not shown: {part['reason']}"]
    return ["## Real weights", "",
            f"Every attention head of `{part['source']}` as the paper's (Q, K, V): "
            "B = W_Q[h]ᵀ W_K[h] / √d_head and V = W_O[:, h] W_V[h] (one head alone on the "
            "residual stream; biases, other heads, MLP and LayerNorms left out), classified "
            "with exact characteristic polynomials and certified eigenvalue balls "
            "(`verify weights`).", "", part["table"], "", *dynamics_lines(part["dynamics"]),
            "", *sphere_line(part.get("sphere")), ""]


def weights_html(part: dict, figures: str) -> list[str]:
    """HTML of the section: the same text as Markdown, the table, and ``figures``."""

    if not part:
        return []
    if not part.get("available"):
        return ["<h2>Real weights</h2>", f"<p>Not shown: {html.escape(part['reason'])}</p>"]
    from types import SimpleNamespace


    head = "".join(f"<th>{html.escape(h)}</th>" for h, _ in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in
                                    table_cells(SimpleNamespace(**c))) + "</tr>"
                   for c in part["heads"])
    intro = weights_markdown(part)[2]
    return (["<h2>Real weights</h2>", f"<p>{inline_html(machine_math(intro))}</p>",
             f"<table><tr>{head}</tr>{body}</table>", f"<p>{html.escape(LEGEND)}</p>",
             f"<p>{html.escape(part['counts_text'])}</p>"]
            + [f"<p>{inline_html(machine_math(line))}</p>" for line in
               dynamics_lines(part["dynamics"]) + sphere_line(part.get("sphere")) if line]
            + [figures])


def weights_figures(part: dict) -> list:
    """``(caption, figure)`` pairs: the spectra per layer and the sentence's token paths."""

    out = [("Non-zero eigenvalues of V = W_O[:, h] W_V[h] for every head, one panel per layer "
            "(★: λ_1 of a certified good triple; the 352 zero eigenvalues of each head are not "
            "drawn).", weights_spectra_figure(part["heads"]))]
    dyn = part["dynamics"]
    if dyn.get("phi_paths"):
        planes = dyn.get("hyperplanes") or {}
        out.append((f"φ₁*(z_i(t)) of every token of the sentence under head {dyn['head']}, "
                    "labelled by its word (leaders in bold); dashed: the predicted hyperplanes "
                    "a, 0, b of Theorem 4.2.",
                    sentence_paths_figure(dyn["times"], dyn["phi_paths"], dyn["words"],
                                          dyn["leaders"], planes.get("offsets"),
                                          title=f"head {dyn['head']}")))
    return out
