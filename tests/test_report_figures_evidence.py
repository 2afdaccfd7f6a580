"""The limit judges attach ``evidence["figure"]`` (the theorem's predicted object, the
convergence of D(t) with the judge's own fitted rate) built from their own numbers, small and JSON
without NaN, and the report draws it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from verify.analysis.evidence import FIGURE_POINTS, figure_convergence
from verify.claim import CheckRequest, InstanceVerdict, judge_scope, load_claim
from verify.judge import judge_request
from verify.model.instance_file import instance_to_toml
from verify.report.html import default_figures

CLAIMS = Path(__file__).resolve().parents[1] / "claims"
# claim id, family, the predicted fields expected, the number of figures default_figures returns
CASES = [("polytope", "paper-uniform-2d", {"polytope_vertices", "points"}, 3),
         ("hyperplanes", "paper-2d", {"hyperplanes"}, 3),
         ("polytope-subspace", "origin-in-interior", set(), 3),
         ("boolean-1d", None, set(), 2)]
GIDS = {"polytope_vertices": "predicted-polytope", "points": "predicted-points",
        "hyperplanes": "predicted-hyperplane", "subspace": "predicted-subspace"}


def _run(cid: str, family_name: str | None):
    claim = load_claim(CLAIMS / f"{cid}.toml")
    family = next(f for f in claim.families if family_name in (None, f.name))
    inst = family.instance(0)
    assert judge_scope(claim.hypotheses, inst, family=family.name) is None
    request = CheckRequest(claim, family, inst, family.seed_of(0), family.horizon,
                           family.checkpoints, family.precision, dict(claim.parameters))
    result = judge_request(request)
    assert result.verdict is InstanceVerdict.HOLDS, result.reason
    record = {"instance": inst.name, "horizon": str(family.horizon),
              "instance_toml": instance_to_toml(inst, {"horizon": str(family.horizon),
                                                       "precision": family.precision}),
              "evidence": result.to_json()["evidence"]}
    return claim, result, record


def _numbers(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, float):
        yield value


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def ran(request):
    cid, family, fields, count = request.param
    claim, result, record = _run(cid, family)
    return cid, fields, count, claim, result, record


def test_figure_evidence_is_small_plain_json(ran):
    cid, fields, _, _, result, _ = ran
    spec = result.evidence.get("figure", {})
    text = json.dumps(spec, allow_nan=False)           # raises on NaN/inf or numpy objects
    assert json.loads(text) == spec and len(text) < 20_000
    assert set(spec.get("predicted", {})) - {"label"} == fields
    for x in _numbers(spec):                           # 6 significant digits
        assert float(f"{x:.6g}") == x
    for key in ("convergence", "doubly_exponential"):
        if key in spec:
            entry = spec[key]
            assert 3 <= len(entry["times"]) <= FIGURE_POINTS
            data = entry.get("distances", entry.get("gaps"))
            assert len(data) == len(entry["times"]) and None not in data
            assert entry["times"] == sorted(entry["times"])


def test_the_fit_is_the_judges_own_rate_through_the_resolved_tail(ran):
    cid, _, _, _, result, _ = ran
    spec = result.evidence.get("figure", {})
    if cid == "hyperplanes":  # the drawn hyperplanes are the prediction's {phi* = a, 0, b}
        a, b = result.evidence["a"], result.evidence["b"]
        assert spec["predicted"]["hyperplanes"][1] == sorted([a, 0.0, b])
    fit = spec.get("convergence", {}).get("fit")
    if cid == "boolean-1d":
        assert "convergence" not in spec  # a Boolean limit is not a distance decaying in t
        return
    if "rate" not in result.evidence:  # no exponential rate was fitted: no line is drawn
        assert fit is None, cid
        return
    rate, intercept = fit
    assert rate == pytest.approx(result.evidence["rate"], rel=1e-5)
    t, d, e = (np.array(spec["convergence"][k]) for k in ("times", "distances", "errors"))
    resolved = (d > e) & (t >= t[-1] / 2)
    # the line runs through the resolved tail: within a factor 10 of every point there
    assert rate > 0 and resolved.any()
    assert np.all(np.abs(np.log(d[resolved]) - (intercept - rate * t[resolved])) < np.log(10))


def test_default_figures_draw_the_predicted_object_and_the_rates(ran):
    _, fields, count, claim, _, record = ran
    figs = default_figures(record, claim.to_json())
    assert len(figs) == count
    gids = {a.get_gid() for a in figs[0][1].findobj() if a.get_gid()}
    assert {GIDS[f] for f in fields if f in GIDS} <= gids
    assert "with the predicted object" in figs[0][0] or not fields
    for caption, fig in figs[2:]:
        assert any(a.get_gid() in ("fit", "gaps") or (a.get_gid() or "").startswith("distance")
                   for a in fig.findobj()), caption


def test_figure_convergence_fits_only_the_intercept_and_drops_nonfinite():
    t = np.linspace(0, 10, 201)
    d = np.exp(0.5 - 1.5 * t)
    d[3] = np.inf
    c = figure_convergence(t, d, np.full_like(t, 1e-300), 1.5, 5.0, "d")
    assert len(c["times"]) == FIGURE_POINTS and np.inf not in c["distances"]
    assert c["fit"] == [1.5, 0.5]
    json.dumps(c, allow_nan=False)
    none = figure_convergence(t[:5], np.zeros(5), np.ones(5), float("nan"), 0.0, "d")
    assert none["fit"] is None                         # no rate, no resolved point: no line
