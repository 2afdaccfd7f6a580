r"""The violated quantity of a refutation over time, from its saved counterexample.

A refuted claim's section shows what was violated, on the data of the counterexample file (the
re-check at higher precision and a longer horizon, which the re-judging command replays):

* a remainder bound :math:`|r_j(t)| \le C e^{t(\lambda + |\lambda_2|)}` (``boundrj-step``):
  :math:`|r_j(t)|\,e^{-t(\lambda + |\lambda_2|)}` with its rigorous enclosure (from the
  re-check's evidence), which the bound keeps below a constant, and the exact :math:`r_j` when
  the check derived it;
* a number of clusters (``at_most``/``equal``): the clusters read from :math:`P(t)` at every
  checkpoint of the counterexample's re-simulation (a float reading, for the picture; the
  verdict rests on the certificate), against the number allowed.

Other refutations get the token paths and :math:`P(t)` only.

Examples
--------
>>> import numpy as np
>>> fig = plot_remainder(np.linspace(0, 4, 9), -np.exp(2 * np.linspace(0, 4, 9)) / 4,
...                      np.full(9, 1e-30), bound_rate=1.0)
>>> [line.get_gid() for line in fig.axes[0].lines if line.get_gid()]
['scaled-remainder']
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from verify.report._figstyle import colour_clusters, latex_float, new_figure

__all__ = ["violation_figures", "plot_remainder", "plot_cluster_count"]


def plot_remainder(t, r, radius, *, bound_rate: float, exact: str | None = None) -> Figure:
    r"""``|r_j(t)| e^{-t·bound_rate}`` on a log scale (with the enclosure's radius as a band)
    and, when given, the exact ``r_j`` (a SymPy expression in ``t``) the same way."""
    t, r, radius = (np.asarray(v, dtype=float) for v in (t, r, radius))
    scale = np.exp(-bound_rate * t)
    fig = new_figure(7.0, 4.6)
    ax = fig.add_subplot()
    ax.set_yscale("log")
    shown = np.abs(r) > radius
    values = np.abs(r) * scale
    ax.fill_between(t, np.where(shown, (np.abs(r) - radius) * scale, np.nan),
                    (np.abs(r) + radius) * scale, color="C3", alpha=0.25, lw=0)
    ax.plot(t[shown], values[shown], "o-", color="C3", ms=3.5, lw=1.3, gid="scaled-remainder",
            label=r"$|r_j(t)|\,e^{-t(\lambda + |\lambda_2|)}$, enclosed in arb balls")
    if exact:
        import sympy

        symbol = sympy.Symbol("t")
        curve = sympy.lambdify(symbol, sympy.sympify(exact), "numpy")
        s = np.linspace(t[0], t[-1], 200)
        ax.plot(s, np.abs(np.broadcast_to(curve(s), s.shape)) * np.exp(-bound_rate * s), "k--",
                lw=1.0, label=rf"exact: $r_j(t) = {sympy.latex(sympy.sympify(exact))}$")
    ax.set_xlabel(r"$t$")
    ax.set_ylabel(r"$|r_j(t)|\,e^{-t(\lambda + |\lambda_2|)}$")
    ax.set_title(rf"The bound needs this bounded by a constant $C$ "
                 rf"($\lambda + |\lambda_2| = {latex_float(bound_rate, 4)}$): it grows",
                 fontsize=10)
    ax.grid(True, lw=0.3, alpha=0.5)
    ax.legend(fontsize=8, loc="upper left")
    return fig


def plot_cluster_count(t, counts, *, allowed: int, relation: str = "at most") -> Figure:
    """Clusters read from ``P(t)`` at each checkpoint (``None``: no clean reading) against the
    number the claim allows."""
    t = np.asarray(t, dtype=float)
    read = np.array([np.nan if c is None else c for c in counts], dtype=float)
    fig = new_figure(6.4, 3.8)
    ax = fig.add_subplot()
    ax.step(t, read, where="post", color="C3", lw=1.5, gid="clusters",
            label="clusters read from $P(t)$ (each token's dominant entry)")
    ax.axhline(allowed, color="k", ls="--", lw=1.0, label=f"the claim: {relation} {allowed}")
    top = np.nanmax(read) if np.any(np.isfinite(read)) else allowed
    ax.set_ylim(0, max(top, allowed) + 1)
    ax.set_xlabel(r"$t$")
    ax.set_ylabel("number of clusters")
    ax.set_title("Clusters over time (float reading of $P(t)$; the verdict rests on the "
                 "certificate)", fontsize=9)
    ax.grid(True, lw=0.3, alpha=0.5)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def _cluster_rule(claim: dict) -> tuple[int, str] | None:
    for c in claim.get("conclusion") or []:
        if c.get("type") == "clusters":
            for key, words in (("at_most", "at most"), ("equal", "exactly")):
                if isinstance(c.get(key), int):
                    return c[key], words
    return None


def violation_figures(record: dict, claim: dict, traj) -> list:
    """``(caption, figure)`` pairs of the violated quantity over time (see the module
    docstring); ``traj`` is the float64 re-simulation of the counterexample file."""
    rechecked = record.get("rechecked") or {}
    ev = rechecked.get("evidence") or {}
    where = (f"the counterexample file (re-check at precision {rechecked.get('precision')}, "
             f"horizon {rechecked.get('horizon')})")
    series = ev.get("r_j along the trajectory")
    if isinstance(series, dict) and series.get("t"):
        exact = (ev.get("exact") or {}).get("r_j(t) at the initial tokens")
        rate = float(ev.get("bound_rate") or (ev.get("exact") or {}).get("bound_rate") or 0)
        return [(f"{record['instance']}: the remainder $r_j(t)$ scaled by the bound's growth "
                 f"$e^{{t(\\lambda + |\\lambda_2|)}}$, on {where}; the claim needs it bounded.",
                 plot_remainder(series["t"], series["r"], series["radius"], bound_rate=rate,
                                exact=exact))]
    rule = _cluster_rule(claim)
    if rule is not None and traj.attention.shape[-1] == traj.n:
        counts = []
        for P in traj.attention:
            leader = colour_clusters(P)
            counts.append(None if leader is None else len(set(leader.tolist())))
        return [(f"{record['instance']}: the number of clusters over time on the float64 "
                 f"re-simulation of the counterexample file, against the claim's bound.",
                 plot_cluster_count(traj.t, counts, allowed=rule[0], relation=rule[1]))]
    return []
