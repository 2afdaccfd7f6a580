"""What ``verify simulate`` reports about a trajectory, as plain data and as text.

Examples
--------
>>> import numpy as np
>>> position_clusters(np.array([[0.0, 0.0], [1e-9, 0.0], [1.0, 1.0]]), tolerance=1e-6)
[[0, 1], [2]]
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from verify.analysis.end_certificates import leader_map_at
from verify.analysis.graph import clusters, undecided_nodes
from verify.analysis.leader_map import hardmax_at
from verify.exact import exact_rank
from verify.flow.trajectory import Trajectory
from verify.model.instance_file import InstanceFile
from verify.numerics import KINKED_FIELD_COVERAGE

__all__ = ["position_clusters", "simulation_summary", "format_summary", "spectral_reading",
           "spectral_reading_aside", "final_attention"]


def position_clusters(points: np.ndarray, tolerance: float) -> list[list[int]]:
    """Groups of tokens linked by chains of distances ``|x_i − x_j| ≤ tolerance`` (single
    linkage cut at ``tolerance``: the connected components of the graph of close pairs), sorted.

    The same groups as SciPy's ``fcluster(linkage(points, "single"), tolerance, "distance")``
    without its import (``scipy.cluster`` pulls in ``scipy.special``, ``sparse`` and
    ``spatial``: ~0.25 CPU s of start-up for an arb run, which imports no SciPy otherwise): a
    breadth-first search that measures each reached token's distances to the tokens not yet
    reached, ``O(n²d)`` time and ``O(n)`` memory (a graph of every close pair would hold
    ``n²/2`` edges once the tokens have collapsed).
    """
    points = np.asarray(points, dtype=float)
    unreached = np.ones(len(points), dtype=bool)
    groups = []
    for start in range(len(points)):
        if not unreached[start]:
            continue
        unreached[start] = False
        group, frontier = [start], [start]
        while frontier:
            i = frontier.pop()
            near = np.flatnonzero(unreached & (np.linalg.norm(points - points[i], axis=1)
                                               <= tolerance))
            unreached[near] = False
            group += near.tolist()
            frontier += near.tolist()
        groups.append(sorted(group))
    return sorted(groups)


def spectral_reading(loaded: InstanceFile) -> str | None:
    """The spectral class of ``V`` (and ``QᵀK``) in one line, or ``None`` with several heads."""
    # start-up: computed in the worker of spectral_reading_aside, which imports it (and SymPy)
    from verify.exact.spectral import spectral_summary

    model = loaded.instance.model
    if not model.single_head:
        return None
    return spectral_summary(model.beta * model.Q, model.K, model.V)


def _reading_worker(loaded: InstanceFile, conn) -> None:
    """The worker of :func:`spectral_reading_aside`: a Ctrl-C is the parent's to handle (the
    terminal sends it to the whole process group), and the parent's terminate() stops it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        line = spectral_reading(loaded)
    except Exception:  # the parent computes it again and reports the error as it would
        return
    conn.send(line)


@contextmanager
def spectral_reading_aside(loaded: InstanceFile) -> Iterator[Callable[[], str | None]]:
    """:func:`spectral_reading` computed beside the run: a worker process is forked on entry,
    the function yielded waits for its line, and the worker is stopped on exit.

    The exact class of a large ``V`` costs seconds (``d = 128``: a characteristic polynomial of
    degree 128 factored over ℚ and its roots isolated, ~4 CPU s; SymPy's import for exact roots
    of small factors, ~0.5 s), and ``verify simulate`` needs it only once the run is over: on a
    second core it is done by then. A fork imports nothing again and pickles nothing but the
    line. Where no fork is safe (no ``fork`` start method, or other threads running, whose locks
    a fork would copy held) or the worker fails, the line is computed in this process when asked
    for: the same line, later.

    Examples
    --------
    >>> from verify.model import Instance, Model
    >>> from verify.model.instance_file import InstanceFile
    >>> loaded = InstanceFile(Instance(Model(V=[[1, 0], [0, 1]]), [[1, 0]]), {}, "example")
    >>> with spectral_reading_aside(loaded) as reading:
    ...     pass  # the run
    >>> reading()
    'V = I'
    """
    process = conn = None
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        conn, child = multiprocessing.Pipe(duplex=False)
        process = multiprocessing.get_context("fork").Process(
            target=_reading_worker, args=(loaded, child), daemon=True)
        try:
            process.start()
        except OSError:  # no process to be had (a limit on processes, no memory): inline
            process = None
        child.close()
    done: list = []

    def reading() -> str | None:
        if not done:
            line = None
            if process is not None:
                try:
                    line = (conn.recv(),)
                except (EOFError, OSError):  # the worker died (killed, out of memory) or failed
                    pass
            done.append(line[0] if line else spectral_reading(loaded))
        return done[0]

    try:
        yield reading
    finally:
        if process is not None:
            if process.is_alive():
                process.terminate()
            process.join()
            conn.close()


#: What ``verify simulate`` says of the error estimate of a field with kinks
#: (:attr:`verify.model.Model.field_has_kinks`); the claim suite decides nothing on it.
_KINKS_NOTE = ("not a bound here — the field has kinks (an MLP with ReLU), so the estimate's "
               f"coverage is not measured: {KINKED_FIELD_COVERAGE}; `verify run` and `verify "
               "check` decide nothing on it")


def _why_no_estimate(status: str) -> str:
    """Why a trajectory has no error estimate: the re-run is made only after a run reaches T."""
    if status == "success":
        return "run with --no-error-estimate"
    return f"the run stopped before T ({status}); the re-run is made only after a complete run"


def _continuation_leg(traj: Trajectory, k: int) -> dict | None:
    """The hardmax continuation leg of the run that covers checkpoint ``k`` (its 0/1 attention
    certified at every check from ``t0`` to ``t_end``, its assumed state error not contradicted
    by the reference run), or ``None``."""
    t = float(traj.times[k])
    legs = [leg for leg in (traj.continuation or {}).get("legs", [])
            if leg.get("kind") == "hardmax" and leg.get("leader_of") is not None
            and leg["t0"] <= t <= leg["t_end"] and leg.get("state_error_confirmed") is not False]
    return legs[-1] if legs else None


def final_attention(traj: Trajectory) -> tuple[np.ndarray, str | None]:
    """The attention matrix ``P(T)`` at the last checkpoint and what certifies it: the run's,
    or — where a hardmax continuation leg covers ``T`` — its certified 0/1 weights (row ``i``
    on its leader ``l(i)``), with the sentence that says so.

    The continuation certifies that the float64 softmax weights are exactly 0 and 1; recomputed
    from the state rounded to float64 instead, the score gaps (shrinking like ``e^{−λ₁t}``,
    ``~3e-43`` relative at ``t = 15`` on the paper's 128×128 run) are lost, a row's scores tie
    across its cluster and its weight looks spread over it (``~1/64``).
    """
    leg = _continuation_leg(traj, -1)
    if leg is None:
        return np.asarray(traj.attention[-1]), None
    weights = np.zeros((traj.n, traj.n))
    weights[np.arange(traj.n), leg["leader_of"]] = 1.0
    return weights, (f"certified 0/1 by the hardmax continuation on "
                     f"[{leg['t0']:.4g}, {leg['t_end']:.4g}]")


def attention_reading(traj: Trajectory, k: int = -1, mask=None, instance=None) -> dict:
    """Leaders, clusters and the 0/1 attention read from the certified hardmax graph at
    checkpoint ``k`` (``mask``: the model's attention mask), with the score differences
    certified against the trajectory's error bound (:meth:`Trajectory.score_radius`);
    undecided rows are reported, never guessed.

    A reading at a finite time is **the attention at t = T**, not a limit. Two certificates say
    more: a hardmax continuation leg of the run covering ``t_k`` (every row's 0/1 attention
    certified at each check on ``[t0, t_end]``; its leaders are read from it — the scores of a
    long continuation may be beyond what the reference run resolves), and, for the model (1.1)
    in the rescaled form with ``V = λI`` (``instance`` given), the leader-map lemma
    (:func:`verify.analysis.end_certificates.leader_map_at`), which carries the map to every
    ``t ≥ t_k`` on the estimate basis: only then is it called the limit (``"limit": True``).
    """

    time = float(traj.times[k])
    leg = _continuation_leg(traj, k)
    if leg is not None:
        leader_of = list(leg["leader_of"])
        undecided, certified_by = [], (f"the hardmax continuation: every row's 0/1 attention "
                                       f"certified on [{leg['t0']:.4g}, {leg['t_end']:.4g}]")
        targets = {i: {j} for i, j in enumerate(leader_of)}
    else:
        radius = traj.score_radius(k)
        if np.isscalar(radius) and not np.isfinite(radius):
            return {"decided": False,
                    "reason": "no error estimate: " + _why_no_estimate(traj.status)}
        G = hardmax_at(traj, k, mask)
        undecided = sorted(undecided_nodes(G))
        targets = {i: set(G.successors(i)) for i in G if i not in undecided}
        certified_by = None
    found = sorted(i for i, t in targets.items() if t == {i})  # the judges' rule
    reading = {"time": time, "leaders": found, "undecided": undecided,
               "decided": not undecided, "certified_by": certified_by, "limit": False}
    if not undecided:
        matrix = np.zeros((traj.n, traj.n), dtype=np.int64)
        for i, t in targets.items():
            matrix[i, sorted(t)] = 1
        if leg is None:
            reading["clusters"] = sorted(sorted(c) for c in clusters(G))
        else:
            reading["clusters"] = sorted(sorted(i for i in targets if leader_of[i] == ell)
                                         for ell in found)
        reading["boolean_matrix"] = matrix.tolist()
        reading["boolean_rank"] = int(exact_rank(matrix))
        if instance is not None and traj.rescaled:
            cert, _ = leader_map_at(instance, traj, k)
            if cert is not None and cert.kind == "hardmax-leader-map":
                reading["limit"] = True
                reading["certified_by"] = ("the hardmax leader-map lemma (V = λI): the map "
                                           "persists for all t ≥ T (estimate basis)")
    return reading


def simulation_summary(loaded: InstanceFile, traj: Trajectory, tolerance: float,
                       spectral: Callable[[], str | None] | None = None) -> dict:
    """Plain data for ``verify simulate``: run facts, spectral class, final tokens, clusters,
    attention, leaders and the hardmax attention at the horizon (the limit only where a
    certificate says so). ``spectral`` returns the spectral class (default: computed here; see
    :func:`spectral_reading_aside`)."""
    final = traj.z[-1] if traj.z is not None else traj.state[-1]
    attention, certified_by = final_attention(traj)
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
        "final_attention": attention.tolist(),
        "final_attention_certified_by": certified_by,
        "agreeing_digits": None if traj.digits is None else traj.digits.tolist(),
        "spectral_class": spectral() if spectral is not None else spectral_reading(loaded),
        "estimate_coverage": (_KINKS_NOTE if loaded.instance.model.field_has_kinks else None),
        "hardmax": attention_reading(traj, mask=loaded.instance.model.mask_for(traj.n),
                                     instance=loaded.instance),
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
    if summary.get("estimate_coverage"):
        lines.append(f"error estimate: {summary['estimate_coverage']}")
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
    how = summary.get("final_attention_certified_by")
    how = f" ({how})" if how else ""
    if len(attention) <= max_rows:
        lines.append(f"attention matrix at t={summary['final_time']:g}{how}:")
        lines += _matrix_text(attention, "{:>7.3f}")
    else:
        lines.append(f"attention at t={summary['final_time']:g}{how} (largest weight per "
                     "token; --json for the whole matrix):")
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
    t = f"t = {reading['time']:g}"
    how = reading.get("certified_by") or ("certified hardmax graph: score differences against "
                                          "κ times their error estimate")
    lines = [f"leaders at {t} (tokens whose largest score is their own; {how}): "
             f"{_one_based(reading['leaders'])}"]
    if reading["undecided"]:
        lines.append(f"undecided at {t} (score margin within the error): tokens "
                     f"{_one_based(reading['undecided'])}")
        return lines
    lines.append("clusters by leader: " + " ".join(_one_based(c) for c in reading["clusters"]))
    what = ("Boolean limit of P" if reading.get("limit") else
            f"attention at {t}, rounded to its hardmax (a finite-time reading, not a limit)")
    lines.append(f"{what} (rows: token → its leader), rank {reading['boolean_rank']}:")
    boolean = reading["boolean_matrix"]
    if len(boolean) <= 20:
        lines += ["  " + "".join(str(v) for v in row) for row in boolean]
    return lines
