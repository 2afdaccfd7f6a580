r"""The conclusion ``attention``: what the limit of :math:`P(t)` is — Boolean, of rank at most
``r``, with given leaders, pointing only at given tokens — or that it has none (``switching``).

The limit of :math:`P` is read off the **certified hardmax graph** of the scores (scores with
their error radius, :func:`verify.analysis.graph.hardmax_graph`): at the last checkpoint every row
must be decided (except at most ``free_rows_at_most`` rows) and its Boolean limit must be the same
over the tail; the rank, the leaders and the targets are then exact facts (error 0), and
*Boolean* also needs :math:`\max_{ij}\min(P_{ij}, 1 - P_{ij}) \to 0` by the trend. This supports
the conclusion (re-checked at a longer horizon by the engine) on the *evidence* basis: a graph
read at a finite time is not its limit. With the hardmax leader-map certificate
(:mod:`verify.analysis.end_certificates`), which fixes the Boolean limit for all time — its leaders,
its rank, and the uniform rows of tokens pinned at the origin by the exact symmetries — the
same facts rest on the certificate's basis (*estimate*: its hypotheses are read off the run).
A violation without it is *violated (evidence)*: never a refutation.

Examples
--------
>>> from types import SimpleNamespace
>>> from verify.claim import CheckRequest
>>> from verify.vocabulary.conclusions import ConclusionSpec
>>> from verify.predict._evaluation import Evaluation
>>> from verify.model import Instance, Model
>>> from verify.flow.simulate import simulate
>>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [[2, 0], [0, 2], ["3/2", "1/2"]], name="f#0")
>>> req = CheckRequest(None, SimpleNamespace(name="f"), inst, None, 8, 17, "float64")
>>> spec = ConclusionSpec("attention", {"leaders": [1, 2], "rank_at_most": 2})
>>> judge_attention(Evaluation(req, simulate(inst, 8, checkpoints=17), spec)).verdict.value
'holds'
"""

from __future__ import annotations

import numpy as np

from verify.analysis.evidence import Basis
from verify.analysis.graph import undecided_nodes
from verify.analysis.leader_map import hardmax_at
from verify.exact import exact_rank
from verify.exact.plain import fail
from verify.judge._decision import combine, decide, fact_basis, inconclusive
from verify.judge._shared import COMMON_KEYS, _indices, formula_or_prediction, validate_common
from verify.judge._trend import tends_to_zero
from verify.judge._verdicts import InstanceResult
from verify.numerics import ulps
from verify.numerics._fits import tail_count
from verify.predict._evaluation import quantity_error
from verify.vocabulary.conclusions import register_conclusion

__all__ = ["judge_attention"]



def _validate_attention(p, source, where):
    keys = ("boolean", "rank_at_most", "leaders", "targets_within", "free_rows_at_most",
            "switching")
    if not any(k in p for k in keys):
        fail(source, f"{where}.boolean", f"give at least one of {', '.join(keys)}.")
    for flag in ("boolean", "switching"):
        if flag in p and p[flag] is not True:
            fail(source, f"{where}.{flag}", f"{p[flag]!r} must be true; omit the key otherwise.")
    if "switching" in p and len([k for k in keys if k in p]) > 1:
        fail(source, f"{where}.switching", "states that P has no limit: it cannot be combined "
             "with statements about the limit.")
    for key in ("rank_at_most", "free_rows_at_most"):
        if key in p and (not isinstance(p[key], int) or isinstance(p[key], bool) or
                         p[key] < (1 if key == "rank_at_most" else 0)):
            fail(source, f"{where}.{key}", f"{p[key]!r} must be a whole number.")
    for key in ("leaders", "targets_within"):
        value = p.get(key)
        if isinstance(value, list):
            if not value or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 1
                                    for i in value):
                fail(source, f"{where}.{key}", f"{value!r} must be a non-empty list of token "
                     "indices (integers from 1, as in the paper), a formula or a prediction.")
        else:
            formula_or_prediction(p, key, ("indices",), source, where)
    validate_common({k: v for k, v in p.items() if k == "tail_fraction"}, source, where)


def _offdiagonal_gap(P: np.ndarray) -> np.ndarray:
    return np.max(np.minimum(P, 1 - P), axis=(1, 2))


@register_conclusion(
    "attention", summary="the limit of P is Boolean / has rank ≤ r / has the given leaders / "
                         "points only at given tokens — or P keeps switching (no limit)",
    needs="the certified hardmax graph at the last checkpoint, decided (up to "
          "free_rows_at_most rows) and with the same Boolean limit over the tail (basis: "
          "evidence, a finite-time graph; with the hardmax leader-map certificate, estimate); "
          "Boolean also needs max_ij min(P_ij, 1 − P_ij) → 0 (trend). A violation without the "
          "certificate is evidence. `switching`: the certified pattern changes over the tail "
          "(evidence that P has no limit).",
    asymptotic=True, validate=_validate_attention,
    keys={"tail_fraction": COMMON_KEYS["tail_fraction"],
          "boolean": "true: the limit of P is a 0/1 matrix",
          "rank_at_most": "the limit of P has rank at most this",
          "leaders": "the leaders (tokens followed in the limit): token indices from 1, a "
                     "formula or a prediction",
          "targets_within": "every decided row's leader is one of these tokens (indices from "
                            "1, a formula or a prediction)",
          "free_rows_at_most": "at most this many rows may stay undecided (default 0)",
          "switching": "true: the certified hardmax pattern keeps changing (P has no limit)"})
def judge_attention(ev) -> InstanceResult:
    """Boolean limit, its rank, its leaders, its targets — or switching (module docstring)."""

    p, req, traj = ev.parameters, ev.request, ev.trajectory
    if traj.reference_run is None:
        return inconclusive(req, "the run has no reference run (no error estimate).")
    n = ev.instance.n
    mask = ev.instance.model.mask_for(n)
    m = len(traj.times)
    tail = range(m - tail_count(m, float(p.get("tail_fraction", 0.5))), m)
    graphs = {k: hardmax_at(traj, k, mask) for k in tail}
    if p.get("switching"):
        return _switching(ev, graphs)
    cert, why = ev.certificate()
    cert = cert if cert is not None and cert.kind == "hardmax-leader-map" else None
    G = graphs[m - 1]
    undecided = sorted(undecided_nodes(G))
    free = int(p.get("free_rows_at_most", 0))
    evidence = {"undecided_rows": [i + 1 for i in undecided]}
    certified = _certified_facts(ev, cert) if cert is not None else None
    if certified is not None:
        evidence["certified_limit"] = certified["describe"]
    if len(undecided) > free and certified is None:
        return inconclusive(req, f"the hardmax graph at t = {traj.t[-1]:.4g} is not certified "
                            f"for tokens {[i + 1 for i in undecided[:10]]} (score margins "
                            f"within their error), and at most {free} may stay free; "
                            f"integrate longer or at higher precision (no certificate: {why}).",
                            evidence)
    targets = _targets(G)
    for k in tail:
        later = _targets(graphs[k])
        moved = [i for i in targets if i in later and later[i] != targets[i]]
        if moved and certified is None:
            return inconclusive(req, f"the certified hardmax graph still changes over the tail "
                                f"(row {moved[0] + 1} at t = {traj.t[k]:.4g} differs from "
                                f"t = {traj.t[-1]:.4g}): the limit of P is not read off yet; "
                                "integrate longer.", evidence)
    found = sorted(i for i, t in targets.items() if t == {i})
    evidence.update(leaders=[i + 1 for i in found],
                    rows_with_ties=int(sum(len(t) > 1 for t in targets.values())))
    # the graph at the horizon, read as the limit: evidence, or the certificate's basis
    read = Basis.EVIDENCE if cert is None else cert.basis
    parts = []
    if p.get("boolean"):
        parts.append(_boolean(ev, evidence, certified, cert))
    if "rank_at_most" in p:
        r = p["rank_at_most"]
        if certified is not None and certified["rank"] > r:
            parts.append(decide(req, r - certified["rank"], 0, f"the Boolean limit has rank ≤ "
                                f"{r} (certified: at least {certified['rank']} distinct "
                                "targets)", unit="rank", certificate=cert.to_dict(),
                                basis=cert.basis))
        elif undecided:
            parts.append(inconclusive(req, "the rank of the limit is not read off: rows are "
                                      "undecided."))
        else:
            rank = exact_rank(_boolean_matrix(targets, n))
            parts.append(decide(req, r - rank, 0, f"the Boolean limit has rank {rank} ≤ {r} "
                                f"(the certified hardmax graph at t = {traj.t[-1]:.4g})",
                                unit="rank", strict=False, evidence={"rank": rank},
                                basis=read))
    if "leaders" in p:
        want = _indices(ev, "leaders")
        miss = sorted(set(want) ^ set(found))
        certain = certified is not None and miss and any(
            all(certified["separated"](a, b) for b in (found if a in want else want))
            for a in miss)
        parts.append(decide(req, -len(miss), 0, f"the leaders are {[i + 1 for i in want]} "
                            f"(found {[i + 1 for i in found]})", unit="tokens", strict=False,
                            evidence={"expected_leaders": [i + 1 for i in want]},
                            certificate=cert.to_dict() if certain else None,
                            basis=fact_basis(read, bool(miss), bool(certain))))
    if "targets_within" in p:
        allowed = set(_indices(ev, "targets_within"))
        pointed = {j for t in targets.values() for j in t}
        outside = sorted(pointed - allowed)
        certain = certified is not None and any(
            j in certified["targets"] and all(certified["separated"](j, a) for a in allowed)
            for j in outside)
        parts.append(decide(req, -len(outside), 0, f"every row's leader is one of "
                            f"{sorted(i + 1 for i in allowed)} (outside: "
                            f"{[i + 1 for i in outside]})", unit="tokens", strict=False,
                            certificate=cert.to_dict() if certain else None,
                            basis=fact_basis(read, bool(outside), bool(certain))))
    if "free_rows_at_most" in p and "boolean" not in p:
        parts.append(decide(req, free - len(undecided), 0, f"at most {free} row(s) stay free "
                            f"(undecided: {len(undecided)})", unit="rows", strict=False,
                            basis=read))
    if cert is None:
        evidence["no_certificate"] = why
    return combine(req, parts, evidence)


def _targets(G) -> dict:
    """Each decided row's set of certified hardmax targets (several: exact ties)."""
    return {i: set(G.successors(i)) for i in G if not G.nodes[i]["undecided"]}


def _boolean_matrix(targets: dict, n: int) -> np.ndarray:
    """The Boolean limit matrix of the decided rows (a 1 at each target)."""
    P = np.zeros((n, n), dtype=np.int64)
    for i, t in targets.items():
        P[i, sorted(t)] = 1
    return P


def _certified_facts(ev, cert) -> dict:
    """The Boolean limit fixed by a hardmax leader-map certificate, read **by points**: tokens
    whose certified limits are within their errors of each other are not told apart (the
    certificate does not say which of them a row picks). ``separated(a, b)`` says whether two
    tokens' limits are certainly distinct; leaders, targets and a lower bound of the rank
    (pairwise separated targets) follow; rows of tokens pinned at 0 are exactly uniform."""
    limit, error = np.asarray(cert.limit, dtype=float), np.asarray(cert.limit_error)
    gap = np.max(np.abs(limit[:, None] - limit[None]), axis=2) - error[:, None] - error[None]
    leader_of = cert.data["leader_of"]
    pinned = set(cert.data.get("pinned", []))
    targets = sorted({leader_of[i] for i in range(ev.instance.n) if i not in pinned})
    distinct: list[int] = []
    for t in targets:
        if all(gap[t, u] > 0 for u in distinct):
            distinct.append(t)
    return {"leaders": sorted(set(cert.data["leaders"])), "targets": set(targets),
            "rank": len(distinct) + (1 if pinned else 0), "pinned": sorted(pinned),
            "separated": lambda a, b: bool(gap[a, b] > 0),
            "describe": f"leaders {[i + 1 for i in sorted(set(cert.data['leaders']))]}"
                        + (f", uniform rows {[i + 1 for i in sorted(pinned)]}" if pinned else "")}


def _boolean(ev, evidence, certified, cert) -> InstanceResult:
    req, traj = ev.request, ev.trajectory
    if certified is not None and certified["pinned"]:
        return decide(req, -0.5, 0, f"the limit of P is Boolean (rows "
                      f"{[i + 1 for i in certified['pinned']]} stay exactly uniform: their "
                      "tokens are pinned at the origin)", unit="P entries",
                      certificate=cert.to_dict(), basis=cert.basis)
    if evidence["rows_with_ties"] or evidence["undecided_rows"]:
        return inconclusive(req, "some rows follow several tied leaders or are undecided; "
                            "whether P → a Boolean matrix is not decided by the hardmax graph.")
    B = _offdiagonal_gap(np.asarray(traj.attention, dtype=float))
    Br = _offdiagonal_gap(np.asarray(traj.reference_run.attention, dtype=float))
    err = quantity_error(B, Br) + ulps(2)  # 2 ulp of a weight ≤ 1 (STORED_ULPS = 4)
    return tends_to_zero(traj.t, B, err, tail=float(ev.parameters.get("tail_fraction", 0.5)),
                         name="B").judge(req, {"B": "max_ij min(P_ij, 1 - P_ij)"})


def _switching(ev, graphs: dict) -> InstanceResult:
    """``switching``: a row whose certified target set differs between consecutive tail
    checkpoints (rows undecided at either end are not counted)."""
    req, traj = ev.request, ev.trajectory
    keys = sorted(graphs)
    switches, undecided, when = 0, 0, []
    for a, b in zip(keys, keys[1:], strict=False):
        Ga, Gb = graphs[a], graphs[b]
        for i in range(ev.instance.n):
            if Ga.nodes[i]["undecided"] or Gb.nodes[i]["undecided"]:
                undecided += 1
            elif set(Ga.successors(i)) != set(Gb.successors(i)):
                switches += 1
                when.append(float(traj.t[b]))
    evidence = {"tail": [float(traj.t[keys[0]]), float(traj.t[-1])], "switches": switches,
                "switch_times": sorted(set(when))[:20], "undecided_rows": undecided}
    what = f"the certified hardmax pattern changes on [{traj.t[keys[0]]:g}, {traj.t[-1]:g}]"
    if switches:  # switches on a window: evidence that P has no limit, not a proof
        return decide(req, switches, 0, f"{what} ({switches} switches)", unit="switches",
                      evidence=evidence, basis=Basis.EVIDENCE)
    cert, why = ev.certificate()
    if cert is not None and cert.kind == "hardmax-leader-map":
        return decide(req, -1, 0, f"{what}: no switch, and the leader map is certified for all "
                      "time", unit="switches", evidence=evidence, certificate=cert.to_dict(),
                      basis=cert.basis)
    return inconclusive(req, f"no certified switch on the tail ({undecided} undecided rows): "
                        f"neither a limit of P nor its absence is established (no certificate: "
                        f"{why}); integrate longer.", evidence)
