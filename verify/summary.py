"""What ``verify simulate`` reports about a trajectory, as plain data and as text.

Examples
--------
>>> import numpy as np
>>> position_clusters(np.array([[0.0, 0.0], [1e-9, 0.0], [1.0, 1.0]]), tolerance=1e-6)
[[0, 1], [2]]
"""

from __future__ import annotations

import numpy as np

from verify.instance_file import InstanceFile
from verify.trajectory import Trajectory

__all__ = ["position_clusters", "simulation_summary", "format_summary"]


def position_clusters(points: np.ndarray, tolerance: float) -> list[list[int]]:
    """Groups of tokens linked by chains of distances ≤ ``tolerance`` (single linkage), sorted."""
    from scipy.cluster.hierarchy import fcluster, linkage

    points = np.asarray(points, dtype=float)
    if len(points) == 1:
        return [[0]]
    labels = fcluster(linkage(points, method="single"), t=tolerance, criterion="distance")
    groups: dict[int, list[int]] = {}
    for index, label in enumerate(labels):
        groups.setdefault(int(label), []).append(index)
    return sorted(groups.values())


def spectral_reading(loaded: InstanceFile) -> str | None:
    """The spectral class of ``V`` (and ``QᵀK``) in one line, or ``None`` with several heads."""
    from verify.exact.spectral import spectral_summary

    model = loaded.instance.model
    if len(model.heads) != 1:
        return None
    return spectral_summary(model.beta * model.Q, model.K, model.V)


def _why_no_estimate(status: str) -> str:
    """Why a trajectory has no error estimate: the re-run is made only after a run reaches T."""
    if status == "success":
        return "run with --no-error-estimate"
    return f"the run stopped before T ({status}); the re-run is made only after a complete run"


def attention_reading(traj: Trajectory, k: int = -1) -> dict:
    """Leaders, clusters and the Boolean limit read from the hardmax graph at checkpoint ``k``,
    with the score differences certified against the trajectory's error bound
    (:meth:`Trajectory.score_radius`); undecided rows are reported, never guessed."""
    from verify.graph import (
        boolean_limit,
        boolean_limit_rank,
        clusters,
        hardmax_graph,
        leaders,
        undecided_nodes,
    )

    radius = traj.score_radius(k)
    if np.isscalar(radius) and not np.isfinite(radius):
        return {"decided": False, "reason": "no error estimate: " + _why_no_estimate(traj.status)}
    G = hardmax_graph(traj.scaled_scores[k], radius)
    undecided = sorted(undecided_nodes(G))
    reading = {"time": float(traj.times[k]), "leaders": sorted(leaders(G)),
               "undecided": undecided, "decided": not undecided}
    if not undecided:
        reading["clusters"] = sorted(sorted(c) for c in clusters(G))
        reading["boolean_limit"] = boolean_limit(G).tolist()
        reading["boolean_rank"] = boolean_limit_rank(G)
    return reading


def simulation_summary(loaded: InstanceFile, traj: Trajectory, tolerance: float) -> dict:
    """Plain data for ``verify simulate``: run facts, spectral class, final tokens, clusters,
    attention, leaders and the Boolean limit."""
    final = traj.z[-1] if traj.z is not None else traj.state[-1]
    summary = {
        "instance": loaded.instance.name,
        "source": loaded.source,
        "n": traj.n,
        "d": traj.d,
        "model": traj.model,
        "run": traj.summary(),
        "final_time": float(traj.times[-1]),
        "final_tokens": {"variable": "z" if traj.z is not None else "x", "values": final.tolist()},
        "clusters": {"tolerance": tolerance, "groups": position_clusters(final, tolerance)},
        "final_attention": traj.attention[-1].tolist(),
        "agreeing_digits": None if traj.digits is None else traj.digits.tolist(),
        "spectral_class": spectral_reading(loaded),
        "hardmax": attention_reading(traj),
    }
    return summary


def _stats_text(stats: dict) -> str:
    solver = stats.get("solver", "layers")
    if "layers" in stats:
        return f"{stats['layers']} layers"
    rejected = f", {stats['rejected']} rejected" if "rejected" in stats else ""
    text = (f"{solver}: {stats.get('accepted', stats.get('steps'))} steps{rejected}, "
            f"{stats.get('rhs_evals')} field evaluations")
    continuation = stats.get("continuation") or {}
    legs = continuation.get("legs") or []
    if legs and legs[0].get("kind") == "cap":
        text += (f"; certified consensus from t={legs[0]['t0']:.4g}: every token in a cap of "
                 f"chord {legs[0]['bound']:.1e}, invariant for V = cI on the sphere, so the "
                 "state is kept (the chord and twice the state error are added to the error "
                 "estimate)")
    elif continuation.get("t_switch") is not None:
        text += (f"; certified hardmax in closed form from t={continuation['t_switch']:.4g} "
                 f"({len(legs)} leg{'s' if len(legs) > 1 else ''}, "
                 f"{len(continuation['fallbacks'])} fallback(s) to integration)")
    return text


def _matrix_text(rows: list[list[float]], fmt: str = "{:>10.4g}",
                 max_cols: int | None = None) -> list[str]:
    cut = max_cols is not None and rows and len(rows[0]) > max_cols
    return ["  " + " ".join(fmt.format(v) for v in (row[:max_cols] if cut else row))
            + (" …" if cut else "") for row in rows]


def _first(items: list[str], count: int, sep: str = " ") -> str:
    """The first ``count`` items joined, and how many more there are (``--json`` has all)."""
    more = f"{sep}… {len(items) - count} more (use --json)" if len(items) > count else ""
    return sep.join(items[:count]) + more


def format_summary(summary: dict, max_rows: int = 12, max_cols: int = 8) -> str:
    """Human-readable text of :func:`simulation_summary` (long matrices are cut)."""
    run = summary["run"]
    lines = [
        f"instance {summary['instance']!r}  (n={summary['n']}, d={summary['d']}, "
        f"form={summary['model']['form']}, attention={summary['model']['attention']})",
        f"status: {run['status']} — {run['message']}",
        f"precision: {run['precision']['backend']} ({run['precision']['bits']} bits), "
        f"rtol={run['tolerances']['rtol']:.1e}; {_stats_text(run['stats'])}",
    ]
    if run["reference"]:
        ref = run["reference"]
        lines.append(
            f"error estimate: max |run − reference| = {run['error_estimate']:.2e}; agreeing digits "
            f"≥ {run['min_agreeing_digits']:.1f} normwise, ≥ "
            f"{run.get('min_digits_per_entry') or 0:.1f} per entry (reference: {ref['backend']} "
            f"{ref['bits']} bits, rtol={ref['rtol']:.1e})" if run["error_estimate"] is not None
            else f"error estimate: reference run failed ({ref.get('message', '')})")
        if ref.get("field_roundoff"):
            check = ref["field_roundoff"]
            lines.append(
                f"field round-off (float64 vs arb at t = "
                f"{', '.join(f'{t:.3g}' for t in check['times'])}): relative "
                f"{max(check['relative']):.1e}, accumulated to t={check['until']:.3g}: "
                f"{check['accumulated']:.1e} (added to the error estimate: a float64 reference "
                "cannot see it)")
    else:
        lines.append(f"error estimate: not computed ({_why_no_estimate(run['status'])})")
    if run["symmetry"]:
        sym = run["symmetry"]
        lines.append(f"symmetry: {sym['description']}; kept exactly on the fixed subspace: "
                     f"{sym['stayed_on_fixed_subspace']}")
    if summary["spectral_class"]:
        lines.append(f"spectral class: {summary['spectral_class']}")
    tokens = summary["final_tokens"]
    lines.append(f"final {tokens['variable']} at t={summary['final_time']:g}:")
    lines += _matrix_text(tokens["values"][:max_rows], "{:>14.8g}", max_cols)
    more = [f"{len(tokens['values']) - max_rows} more tokens"] * (len(tokens["values"]) > max_rows)
    if summary["d"] > max_cols:
        more.append(f"the first {max_cols} of {summary['d']} coordinates shown")
    if more:
        lines.append(f"  … {'; '.join(more)} (use --json)")
    groups = summary["clusters"]["groups"]
    lines.append(f"clusters of final {tokens['variable']} at tolerance "
                 f"{summary['clusters']['tolerance']:g} (tokens numbered from 1): {len(groups)} — "
                 + _first([_one_based(g) for g in groups], 2 * max_rows))
    attention = summary["final_attention"]
    if len(attention) <= max_rows:
        lines.append(f"attention matrix at t={summary['final_time']:g}:")
        lines += _matrix_text(attention, "{:>7.3f}")
    else:
        lines.append(f"attention at t={summary['final_time']:g} (largest weight per token; "
                     "--json for the whole matrix):")
        lines.append("  " + _first([f"{i + 1}→{int(np.argmax(row)) + 1} ({max(row):.3f})"
                                    for i, row in enumerate(attention)], 2 * max_rows, "  "))
    lines += _hardmax_lines(summary["hardmax"])
    return "\n".join(lines)


def _one_based(tokens: list[int]) -> str:
    """Token indices as a person reads them, from 1 as in the paper (``--json`` keeps the
    0-based positions)."""
    return "{" + ",".join(str(i + 1) for i in tokens) + "}"


def _hardmax_lines(reading: dict) -> list[str]:
    if "reason" in reading:
        return [f"hardmax reading: not certified ({reading['reason']})"]
    lines = [f"leaders at t={reading['time']:g} (tokens whose largest score is their own, "
             f"certified against the error estimate): {_one_based(reading['leaders'])}"]
    if reading["undecided"]:
        lines.append(f"undecided (score margin within the error): tokens "
                     f"{_one_based(reading['undecided'])}"
                     " — no Boolean limit is claimed")
        return lines
    lines.append("clusters by leader: " + " ".join(_one_based(c) for c in reading["clusters"]))
    lines.append(f"Boolean limit of P (rows: token → its leader), exact rank "
                 f"{reading['boolean_rank']}:")
    boolean = reading["boolean_limit"]
    if len(boolean) <= 20:
        lines += ["  " + "".join(str(v) for v in row) for row in boolean]
    return lines
