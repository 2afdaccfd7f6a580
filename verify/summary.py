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


def simulation_summary(loaded: InstanceFile, traj: Trajectory, tolerance: float) -> dict:
    """Plain data for ``verify simulate``: run facts, final tokens, clusters, attention."""
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
    }
    return summary


def _matrix_text(rows: list[list[float]], fmt: str = "{:>10.4g}") -> list[str]:
    return ["  " + " ".join(fmt.format(v) for v in row) for row in rows]


def format_summary(summary: dict, max_rows: int = 12) -> str:
    """Human-readable text of :func:`simulation_summary` (long matrices are cut)."""
    run = summary["run"]
    lines = [
        f"instance {summary['instance']!r}  (n={summary['n']}, d={summary['d']}, "
        f"form={summary['model']['form']}, attention={summary['model']['attention']})",
        f"status: {run['status']} — {run['message']}",
        f"precision: {run['precision']['backend']} ({run['precision']['bits']} bits), "
        f"rtol={run['tolerances']['rtol']:.1e}, steps: {run['stats']}",
    ]
    if run["reference"]:
        ref = run["reference"]
        lines.append(
            f"error estimate: max |run − reference| = {run['error_estimate']:.2e}; agreeing digits "
            f"≥ {run['min_agreeing_digits']:.1f} (reference: {ref['backend']} {ref['bits']} bits, "
            f"rtol={ref['rtol']:.1e})" if run["error_estimate"] is not None
            else f"error estimate: reference run failed ({ref.get('message', '')})")
    else:
        lines.append("error estimate: not computed (--no-error-estimate)")
    if run["symmetry"]:
        sym = run["symmetry"]
        lines.append(f"symmetry: {sym['description']}; kept exactly on the fixed subspace: "
                     f"{sym['stayed_on_fixed_subspace']}")
    for extra in summary.get("extra_lines", []):
        lines.append(extra)
    tokens = summary["final_tokens"]
    lines.append(f"final {tokens['variable']} at t={summary['final_time']:g}:")
    lines += _matrix_text(tokens["values"][:max_rows], "{:>14.8g}")
    if len(tokens["values"]) > max_rows:
        lines.append(f"  … {len(tokens['values']) - max_rows} more tokens (use --json)")
    groups = summary["clusters"]["groups"]
    lines.append(f"clusters of final {tokens['variable']} at tolerance "
                 f"{summary['clusters']['tolerance']:g}: {len(groups)} — "
                 + " ".join("{" + ",".join(map(str, g)) + "}" for g in groups))
    lines.append(f"attention matrix at t={summary['final_time']:g}:")
    attention = summary["final_attention"]
    lines += _matrix_text([row[:max_rows] for row in attention[:max_rows]], "{:>7.3f}")
    if len(attention) > max_rows:
        lines.append(f"  … ({len(attention)}×{len(attention)}, use --json)")
    return "\n".join(lines)
