r"""Checks of the open problems of §12 on generic :math:`Q^\top K` and a complex leading pair.

* ``leader_clustering`` — ``generic-qk``: every (projected) token converges, the attention tends
  to a certified Boolean matrix, and each limit coincides with its leader's limit;
* ``no_clustering`` — ``complex-leading``: the certified hardmax pattern keeps changing in the
  second half of the horizon (no Boolean limit reached by ``T``).

The ``mlp`` and ``multi-head`` open problems are in :mod:`verify.checks.open_models`.
"""

from __future__ import annotations

import numpy as np

from verify.checks._parts import inconclusive, judge_part
from verify.checks._runs import (
    fits_summary,
    float_parameter,
    hardmax_at,
    simulate_with_run,
)
from verify.checks.extensions import projected_run
from verify.checks.polytopes import cluster_groups
from verify.claim import CheckRequest, InstanceResult, register_check

__all__ = ["leader_clustering", "no_clustering"]


@register_check("leader_clustering")
def leader_clustering(request: CheckRequest) -> InstanceResult:
    r"""``generic-qk``: clustering around leaders without :math:`Q^\top K \succ 0`.

    Observed: the limits of :math:`\pi_F z_i(t)` (all of ``z`` when ``V = I``), the certified
    hardmax graph at the horizon, its leaders and the leader each token follows. Statement
    checked: every token's limit is within ``τ s`` of its leader's limit, ``s`` the smallest
    distance between two leaders' limits (with one leader: the diameter of the initial
    projections), so the limits form at most as many clusters as there are leaders. Margin
    ``τ s − max_i dist_i``; error from the limit error bars. Undecided hardmax rows, tokens that
    reach no leader, or limits that have not stabilised give ``inconclusive``.
    """
    from verify.graph import followers, leader_history, undecided_nodes

    tail = float_parameter(request, "tail_fraction", 0.5)
    ran, failure = projected_run(request, tail)
    if failure:
        return failure
    C, _, traj, fits, evidence = ran
    m = len(traj.times)
    start = m - max(2, int(round(tail * m)))
    graphs = [hardmax_at(traj, k) for k in range(start, m)]
    G = graphs[-1]
    undecided = undecided_nodes(G)
    history = leader_history(graphs, traj.t[start:])
    evidence["leader_history"] = {"times": history.times,
                                  "leaders": [sorted(x) for x in history.leaders],
                                  "stable_since": history.stable_since}
    if undecided:
        return inconclusive(request, f"the hardmax target of tokens {sorted(undecided)[:5]} "
                            f"at t = {traj.t[-1]:g} is not certified by the score error bars; "
                            "raise the precision.", evidence)
    leader_of: dict[int, int] = {}
    for leader, tokens in followers(G).items():
        for i in tokens:
            leader_of.setdefault(i, leader)
    orphans = sorted(set(range(request.instance.n)) - set(leader_of))
    P = traj.attention[-1]
    P_star = np.zeros_like(P)
    for i, leader in leader_of.items():
        P_star[i, leader] = 1.0
    evidence.update(leaders=sorted(set(leader_of.values())), leader_of=leader_of,
                    boolean_distance=float(np.max(np.abs(P - P_star))))
    if orphans:
        return inconclusive(request, f"tokens {orphans[:5]} reach no leader in the certified "
                            "hardmax graph at the horizon (an attracting cycle without "
                            "self-loop).", evidence)
    limits = np.array([np.atleast_1d(f.limit) for f in fits])
    errors = np.array([f.limit_error for f in fits])
    lead = sorted(set(leader_of.values()))
    gaps = [np.max(np.abs(limits[a] - limits[b])) for k, a in enumerate(lead) for b in lead[:k]]
    start_proj = request.instance.x0_float() @ C.T
    s = min(gaps) if gaps else float(np.max(np.ptp(start_proj, axis=0)))
    gap_error = 2 * float(errors.max()) if gaps else 0.0
    fraction = float_parameter(request, "separation_fraction", 0.25)
    dist = np.array([np.max(np.abs(limits[i] - limits[leader_of[i]])) for i in range(len(fits))])
    k = int(np.argmax(dist + errors + errors[[leader_of[i] for i in range(len(fits))]]))
    evidence.update(resolution_s=s, distance_to_leader_limit=dist, projected_limits=limits,
                    limit_errors=errors, clusters=len(cluster_groups(limits, errors)))
    return judge_part(request, fraction * s - float(dist[k]),
                      float(errors[k] + errors[leader_of[k]]) + fraction * gap_error,
                      f"token {k} converges to the limit of its leader {leader_of[k]} "
                      f"({len(lead)} leader(s); distance {dist[k]:.3g} < {fraction:g}·s = "
                      f"{fraction * s:.3g})", evidence)

@register_check("no_clustering")
def no_clustering(request: CheckRequest) -> InstanceResult:
    r"""``complex-leading``: no clustering when the leading eigenvalues of ``V`` are complex.

    Observed: the certified hardmax targets (argmax of each row of the scores, certified from
    the score error bars) at the checkpoints of the tail ``[t_start, T]``; a *switch* is a row
    whose certified target set differs between two consecutive checkpoints (rows undecided at
    either end are not counted). Statement checked: at least one switch on the tail, i.e. no
    Boolean limit has been reached by ``T`` (margin ``switches − 1``, exact: a count of
    certified facts, so error 0). No switch counts as a violation only if, in addition, every
    ``z_i`` has a stabilised limit (clustering observed); otherwise the instance is inconclusive.
    """
    from verify.limits import token_limits

    ran, failure = simulate_with_run(request)
    if failure:
        return failure
    traj, run = ran
    tail = float_parameter(request, "tail_fraction", 0.5)
    m = len(traj.times)
    start = m - max(2, int(round(tail * m)))
    graphs = [hardmax_at(traj, k) for k in range(start, m)]
    switches, undecided, when = 0, 0, []
    for k in range(1, len(graphs)):
        a, b = graphs[k - 1], graphs[k]
        for i in range(request.instance.n):
            if a.nodes[i]["undecided"] or b.nodes[i]["undecided"]:
                undecided += 1
            elif set(a.successors(i)) != set(b.successors(i)):
                switches += 1
                when.append(float(traj.t[start + k]))
    evidence = {"run": run, "tail": [float(traj.t[start]), float(traj.t[-1])],
                "switches": switches, "switch_times": sorted(set(when)),
                "undecided_rows": undecided,
                "attention_row_max_min": float(traj.attention[-1].max(axis=1).min())}
    what = f"the certified hardmax pattern changes on [{traj.t[start]:g}, {traj.t[-1]:g}]"
    if switches:
        return judge_part(request, switches - 1, 0, f"{what} ({switches} switches)", evidence,
                          strict=False)
    fits = token_limits(traj, tail_fraction=tail)
    evidence["fits"] = fits_summary(fits)
    if all(f.stabilised for f in fits) and not undecided:
        return judge_part(request, -1, 0, f"{what} (no switch and every z_i has a stabilised "
                          "limit: clustering observed)", evidence, strict=False)
    return inconclusive(request, f"no certified switch on the tail, but {undecided} undecided "
                        "rows or unstabilised limits: neither clustering nor its absence is "
                        "established by T.", evidence)
