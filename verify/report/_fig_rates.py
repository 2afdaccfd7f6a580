r"""Convergence-rate plots: :math:`\log` distance to a limit, and doubly exponential gaps."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from verify.errors import InvalidArgument
from verify.report._figstyle import (
    beside_legend,
    describe,
    float_array,
    latex_float,
    new_figure,
    palette,
    title_room,
)

__all__ = ["plot_convergence", "plot_doubly_exponential"]


def _short_label(label: str, width: int = 30) -> tuple[str, str]:
    """``(axis label, description)``: a long label such as ``"D(t): every token approaches
    …"`` is split at its colon (the name labels the axis, the sentence goes to the title,
    wrapped); a short one is the axis label as it is.

    >>> _short_label("D(t): every token approaches a union of hyperplanes")
    ('$D(t)$', 'every token approaches a union of hyperplanes')
    """
    import textwrap

    if len(label) <= width:
        return label, ""
    name, colon, rest = label.partition(":")
    if colon and len(name) <= width:
        name = name if "$" in name else f"${name.strip()}$"
        return name, textwrap.fill(rest.strip(), 70)
    return "distance", textwrap.fill(label, 70)


def _times(times: Any) -> np.ndarray:
    t = float_array("times", times, 1)
    if t.size < 2 or np.any(np.diff(t) <= 0):
        raise InvalidArgument(f"times has {t.size} entries; it must hold at least 2 strictly "
                              "increasing checkpoint times.")
    return t


def _exponential_fit(fit: Any, t: np.ndarray, size: np.ndarray, resolved: np.ndarray
                     ) -> tuple[float, float, float, str] | None:
    """``(rate, intercept, t_from, label)`` of ``log size ≈ intercept − rate·t`` or None."""
    if isinstance(fit, tuple | list) and len(fit) == 2:
        rate, intercept = (float(v) for v in fit)
        label = rf"fit $e^{{b - r t}}$, $r = {latex_float(rate, 6)}$, $b = {intercept:.3g}$"
        return rate, intercept, float(t[0]), label
    if not all(hasattr(fit, a) for a in ("rate", "rate_error", "coverage", "tail_start")):
        raise InvalidArgument(
            f"fit=<{describe(fit)}> ({type(fit).__name__}) must be a LimitFit (from "
            "verify.analysis.observed_limits.fit_exponential_convergence) or a pair (rate, "
            "intercept) with "
            "log distance ≈ intercept − rate·t."
        )
    rate = float(fit.rate)
    if not math.isfinite(rate):
        return None
    use = resolved & (t >= float(fit.tail_start))
    if not np.any(use):
        return None
    # The LimitFit carries the rate only: anchor the line (least squares in log) on the
    # resolved distances of the fitted tail.
    intercept = float(np.mean(np.log(size[use]) + rate * t[use]))
    half = float(fit.coverage) * float(fit.rate_error)
    label = (rf"fit $e^{{b - r t}}$, rate $r = {latex_float(rate, 6)} \pm "
             rf"{latex_float(half, 2)}$ ($\kappa\sigma$, $\kappa = {float(fit.coverage):.2g}$)")
    return rate, intercept, float(fit.tail_start), label


def plot_convergence(times: Any, distances: Any, errors: Any = None, *, fit: Any = None,
                     label: str = r"$\|v(t) - v_\infty\|_\infty$",
                     colours: list | None = None) -> Figure:
    r"""Return a plot of the distance to a limit against :math:`t` (log scale), with the fit.

    Points whose distance does not exceed its error estimate are drawn hollow (unresolved);
    the band is distance :math:`\pm` error estimate and the dashed grey curve the error
    estimate itself. The fitted exponential :math:`e^{b - r t}` is drawn over the fitted tail.

    Parameters
    ----------
    times : array_like, shape (m,)
    distances : array_like, shape (m,) or (m, k)
        Distances :math:`\ge 0` (``k`` curves, e.g. one per token; a fit then refers to their
        maximum). Zeros cannot be drawn on a log scale and are left out.
    errors : float or array_like, shape (m,) or like ``distances``, optional
        Absolute error estimates of the distances.
    fit : LimitFit or (rate, intercept), optional
        A :class:`verify.analysis.observed_limits.LimitFit` (its rate with the :math:`\kappa\sigma`
        interval in the legend; the line is anchored by least squares on the resolved tail points)
        or a pair with :math:`\log d(t) \approx \text{intercept} - \text{rate}\cdot t`.
    label : str
        The plotted quantity, mathtext.
    colours : list, optional
        One matplotlib colour per curve (e.g. the token colours of :func:`plot_trajectories`);
        default: ``tab10``/``tab20`` by curve index.

    Returns
    -------
    fig : matplotlib.figure.Figure
        One axes, log-scaled :math:`y`; the fitted line has ``gid="fit"``, the curves
        ``gid="distance-k"``.

    Raises
    ------
    InvalidArgument
        Mismatched shapes, negative or non-finite distances or errors, a malformed ``fit``.

    Examples
    --------
    >>> t = np.linspace(0, 4, 9)
    >>> fig = plot_convergence(t, 2 * np.exp(-t), 1e-12, fit=(1.0, np.log(2)))
    >>> sorted(line.get_gid() for line in fig.axes[0].lines if line.get_gid())
    ['distance-0', 'fit']
    """
    t = _times(times)
    dist = float_array("distances", distances, (1, 2))
    flat = dist.ndim == 1
    dist = dist.reshape(len(dist), -1) if dist.size else dist
    if dist.shape[0] != t.size or dist.shape[1] == 0:
        raise InvalidArgument(f"distances has shape {np.shape(distances)}; it must be (m,) or "
                              f"(m, k) with m = len(times) = {t.size}.")
    if np.any(dist < 0):
        raise InvalidArgument("distances has negative entries; pass distances (≥ 0), e.g. "
                              "norms of differences.")
    if errors is None:
        err = np.zeros_like(dist)
    else:
        e = float_array("errors", errors, (0, 1, 2))
        try:
            err = np.broadcast_to(e.reshape(-1, 1) if e.ndim == 1 else e, dist.shape)
        except ValueError:
            raise InvalidArgument(f"errors has shape {e.shape}; it must be one number, (m,) or "
                                  f"{dist.shape} like distances.") from None
        if np.any(err < 0):
            raise InvalidArgument("errors has negative entries; error estimates are ≥ 0.")
    k = dist.shape[1]
    if colours is None:
        colours = ["C0"] if k == 1 else palette(k)
    elif len(colours) != k:
        raise InvalidArgument(f"colours has {len(colours)} entries; give one colour per curve "
                              f"(k = {k}), or colours=None.")
    fig = new_figure(6.8, 5.0, layout=None)
    ax = fig.add_subplot()
    ax.set_yscale("log")
    for j in range(k):
        d, e = dist[:, j], err[:, j]
        ok = d > 0
        resolved = ok & (d > e)
        ax.plot(t[ok], d[ok], "-", color=colours[j], lw=0.6, alpha=0.5)
        ax.plot(np.where(resolved, t, np.nan), np.where(resolved, d, np.nan), "o-",
                color=colours[j], lw=1.3, ms=3.5, gid=f"distance-{j}")
        ax.plot(t[ok & ~resolved], d[ok & ~resolved], "o", mfc="white", mec=colours[j], ms=4)
        if errors is not None and np.any(resolved):
            ax.fill_between(t, np.where(resolved, d - e, np.nan), d + e, where=resolved,
                            color=colours[j], alpha=0.2, lw=0)
    sample = "0.35" if k > 1 else colours[0]
    handles = [Line2D([], [], color=sample, marker="o", ms=3.5, lw=1.3,
                      label=_short_label(label)[0] + (f" ({k} curves)" if k > 1 else ""))]
    if errors is not None:
        visible = (dist > err) & (err > 1e-3 * dist)
        if np.any(visible):
            handles.append(Patch(color=sample, alpha=0.2, label=r"$\pm$ error estimate"))
        bound = err.max(axis=1)
        positive = dist[dist > 0]
        if np.any(bound > 0) and (not positive.size or bound.max() > 1e-4 * positive.min()):
            ax.plot(t, np.where(bound > 0, bound, np.nan), "--", color="0.5", lw=1.0,
                    gid="error")
            handles.append(Line2D([], [], ls="--", color="0.5", lw=1.0,
                                  label="numerical error estimate" + (" (max)" if k > 1 else "")))
        else:
            handles.append(Line2D([], [], ls="none", label=(
                f"error estimate $\\leq {latex_float(bound.max(), 2)}$ (below the plot)")))
    if np.any((dist > 0) & (dist <= err)):
        handles.append(Line2D([], [], ls="none", marker="o", mfc="white", mec="0.3",
                              label="not resolved ($\\leq$ error estimate)"))
    if fit is not None:
        size = dist.max(axis=1)
        resolved_all = (size > 0) & (size > err.max(axis=1))
        line = _exponential_fit(fit, t, size, resolved_all)
        if line is None:
            reason = getattr(fit, "kind", "no rate")
            handles.append(Line2D([], [], ls="none",
                                  label=f"no exponential rate fitted ({reason})"))
        else:
            rate, intercept, start, fit_label = line
            s = np.linspace(start, t[-1], 50)
            ax.plot(s, np.exp(intercept - rate * s), color="k", lw=1.6, alpha=0.8, gid="fit")
            handles.append(Line2D([], [], color="k", lw=1.6, alpha=0.8, label=fit_label))
    ax.set_xlabel(r"$t$")
    short, what = _short_label(label)
    ax.set_ylabel(short)
    curves = "" if flat or k == 1 else f" ({k} curves)"
    title = f"Distance to the limit against time{curves}" + (f"\n{what}" if what else "")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", lw=0.3, alpha=0.5)
    beside_legend(fig, ax, fig.legend(handles=handles, fontsize=8, ncols=2, frameon=False),
                  left=0.95, bottom=0.5, top=title_room(title), gap=0.25, below=True)
    return fig


def plot_doubly_exponential(times: Any, gaps: Any, fit: Any = None, *, errors: Any = None,
                            log: bool = False,
                            label: str = r"$\log(-\log|P_{ij}(t) - P^*_{ij}|)$") -> Figure:
    r"""Return a plot of :math:`\log(-\log|g(t)|)` against :math:`t` with the fitted line.

    A gap :math:`|g(t)| \le \exp(-c\,e^{a t})` converges doubly exponentially exactly when
    these points lie on or above a line of slope :math:`a`.

    Parameters
    ----------
    times : array_like, shape (m,)
    gaps : array_like, shape (m,)
        :math:`|g(t_k)|` (with ``log=True``: :math:`\log|g(t_k)|`, for gaps that underflow).
        Points with :math:`g = 0` or :math:`|g| \ge 1` have no :math:`\log(-\log|g|)` and are
        left out (the title counts them).
    fit : LineFit or (slope, intercept), optional
        From :func:`verify.analysis.observed_limits.fit_doubly_exponential`, or a pair: the line
        :math:`\log c + a\,t`.
    errors : array_like, shape (m,), optional
        Absolute error estimates of the gaps (of the log-gaps with ``log=True``): error bars.
    log : bool
    label : str

    Returns
    -------
    fig : matplotlib.figure.Figure
        One axes; the points have ``gid="gaps"``, the fitted line ``gid="fit"``.

    Raises
    ------
    InvalidArgument
        Mismatched shapes, negative errors, a malformed ``fit``.

    Examples
    --------
    >>> t = np.linspace(0, 3, 7)
    >>> fig = plot_doubly_exponential(t, np.exp(-2 * np.exp(t)), fit=(1.0, np.log(2)))
    >>> len(fig.axes[0].lines)
    2
    """
    t = _times(times)
    g = float_array("gaps", gaps, 1, allow_nonfinite=True)
    if g.shape != t.shape or np.any(np.isnan(g)):
        raise InvalidArgument(f"gaps has shape {g.shape} and must match times {t.shape}, "
                              "without NaN.")
    e = np.zeros_like(t) if errors is None else float_array("errors", errors, (0, 1))
    try:
        e = np.broadcast_to(e, t.shape)
    except ValueError:
        raise InvalidArgument(f"errors has shape {e.shape}; it must be one number or "
                              f"{t.shape} like times.") from None
    if np.any(e < 0):
        raise InvalidArgument("errors has negative entries; error estimates are ≥ 0.")
    with np.errstate(divide="ignore", invalid="ignore"):
        L = g if log else np.log(np.abs(g))
        y = np.log(-L)
        if log:
            dy = e / np.abs(L)
        else:
            dy = -np.log1p(-np.minimum(e / np.abs(g), 1)) / np.abs(L)
    ok = np.isfinite(L) & (L < 0) & np.isfinite(y)
    fig = new_figure(6.4, 4.4)
    ax = fig.add_subplot()
    if errors is not None:
        bars = np.where(np.isfinite(dy), dy, 0)[ok]
        ax.errorbar(t[ok], y[ok], yerr=bars, fmt="none", ecolor="C0", alpha=0.6, lw=1)
    ax.plot(t[ok], y[ok], "o", color="C0", ms=4, gid="gaps", label=label)
    if fit is not None:
        if isinstance(fit, tuple | list) and len(fit) == 2:
            slope, intercept = (float(v) for v in fit)
            fit_label = (rf"fit $\log c + a\,t$: $a = {latex_float(slope, 4)}$, "
                         rf"$c = {latex_float(math.exp(intercept), 3)}$")
        elif hasattr(fit, "slope") and hasattr(fit, "intercept"):
            slope, intercept = float(fit.slope), float(fit.intercept)
            half = float(getattr(fit, "coverage", math.nan)) * float(
                getattr(fit, "slope_error", math.nan))
            fit_label = (rf"fit $\log c + a\,t$: $a = {latex_float(slope, 4)} \pm "
                         rf"{latex_float(half, 2)}$ ($\kappa\sigma$), "
                         rf"$c = {latex_float(math.exp(intercept), 3)}$")
        else:
            raise InvalidArgument(
                f"fit=<{describe(fit)}> ({type(fit).__name__}) must be a LineFit (from "
                "verify.analysis.observed_limits.fit_doubly_exponential) or a pair (slope, "
                "intercept)."
            )
        if math.isfinite(slope) and math.isfinite(intercept):
            s = np.linspace(*((t[ok][0], t[ok][-1]) if np.sum(ok) > 1 else (t[0], t[-1])), 50)
            ax.plot(s, intercept + slope * s, color="k", lw=1.5, alpha=0.8, gid="fit",
                    label=fit_label)
    dropped = int(np.sum(~ok))
    note = (f"\n{dropped} of {t.size} points left out (gap 0 after underflow, or $|g| \\geq 1$)"
            if dropped else "")
    ax.set_title(f"Doubly exponential convergence{note}", fontsize=10)
    ax.set_xlabel(r"$t$")
    ax.set_ylabel(label)
    ax.grid(True, lw=0.3, alpha=0.5)
    ax.legend(fontsize=8, loc="best")
    return fig
