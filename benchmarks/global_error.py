#!/usr/bin/env python
r"""Benchmark (a measured prototype): the linearised global error estimate
(:mod:`verify.flow.global_error`) against the reference-run estimate, on the 128×128 run.

The run: ``claims/examples/high-dimension.toml`` (``n = d = 128``), :class:`DOP853` of
:mod:`verify.flow.solvers` in eigen-coordinates at the library's default ``rtol = 1e-10``,
``atol = 1e-12``, from ``t = 0`` to the time of its certified hardmax switch (read from
``simulate``'s run to ``T = 4``; after it the continuation's certificate carries the state, and
the steps before it are the same for ``T = 4`` and ``T = 15``). In one process it times (CPU
seconds of this process, the minimum of ``--repeat``):

* the run alone;
* the run with the linearised estimate propagated alongside (``heun`` and ``rk4``): its cost
  is the difference;
* the reference run of today's estimate (float64 DOP853 at ``rtol·1e-3``, ``atol`` the same,
  as ``precision_policy.reference_settings`` gives it, here from the same start: no twin);

and the truth: DOP853 at ``rtol = 3e-14``, ``atol = 1e-16`` evaluated at the run's step ends.
It prints, at a selection of step ends, the true error ``max|w − w_true|`` and each estimate,
and the worst coverage ratio ``true / (estimate + 4u·max|w|)`` over all step ends (the ratio of
``benchmarks/error_coverage.py``; κ = 4 needs it below ~2).

Run from the repository root: ``nice python benchmarks/global_error.py [--repeat 2]``.
No wall-clock assertion; this is not a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = ROOT / "claims" / "examples" / "high-dimension.toml"
if __name__ == "__main__":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")  # see benchmarks/README.md, "BLAS threads"
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

from verify.flow.fields import EigenRescaledField  # noqa: E402
from verify.flow.global_error import EigenLinearisation, LinearisedGlobalError  # noqa: E402
from verify.flow.simulate import simulate  # noqa: E402
from verify.flow.solvers import DOP853, StepController  # noqa: E402
from verify.model.instance_file import load_instance_file  # noqa: E402

RTOL, ATOL = 1e-10, 1e-12
U = 2.0 ** -53


def switch_time(inst, T: float) -> float:
    """When ``simulate``'s run to ``T`` hands over to its certified hardmax leg."""
    traj = simulate(inst, T, checkpoints=int(T) + 1, error_estimate=False)
    legs = (traj.stats.get("continuation") or {}).get("legs", [])
    if not legs:
        raise SystemExit("no hardmax switch in the run: nothing to compare before it")
    return float(legs[0]["t0"])


class Steps:
    """An observer that only records the step ends (the run's mesh and states)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.states: list[np.ndarray] = []

    def __call__(self, t0, y0, t1, y1, f0, f1, local_error) -> None:
        self.times.append(float(t1))
        self.states.append(y1.copy())


def cpu(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.process_time()
        out = fn()
        best = min(best, time.process_time() - start)
    return best, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--T", type=float, default=4.0)
    args = parser.parse_args(argv)

    inst = load_instance_file(INSTANCE).instance
    t_switch = switch_time(inst, args.T)
    field = EigenRescaledField(inst.model, inst.n)
    w0 = field.to_w(np.asarray(inst.x0, dtype=float))
    times = [0.0, t_switch]
    controller = StepController(RTOL, ATOL)

    def run(observer=None):
        DOP853(observer=observer).segment(field, None, times, 1, 0.0, w0, controller)
        return observer

    load = os.getloadavg()[0]
    run_s, _ = cpu(run, args.repeat)
    mesh = run(Steps())
    estimates, costs = {}, {}
    for method in ("heun", "rk4"):
        costs[method], estimates[method] = cpu(
            lambda m=method: run(LinearisedGlobalError(EigenLinearisation(field), m)),
            args.repeat)
    t_eval = np.array(mesh.times)
    shape = w0.shape

    def f(t, y):
        return field(t, y.reshape(shape)).ravel()

    def reference(rtol, atol):
        return solve_ivp(f, (0.0, t_switch), w0.ravel(), method="DOP853", rtol=rtol,
                         atol=atol, t_eval=t_eval)

    ref_rtol = RTOL * 1e-3
    ref_s, ref = cpu(lambda: reference(ref_rtol, min(ATOL, ref_rtol)), args.repeat)
    truth = reference(3e-14, 1e-16)
    load = max(load, os.getloadavg()[0])

    run_states = np.array(mesh.states)
    true = np.abs(run_states - truth.y.T.reshape(run_states.shape)).max(axis=(1, 2))
    floor = 4 * U * np.abs(run_states).max(axis=(1, 2))
    columns = {"reference rtol·1e-3":
               np.abs(run_states - ref.y.T.reshape(run_states.shape)).max(axis=(1, 2)),
               **{f"linearised {m}": np.array(estimates[m].norms) for m in estimates}}
    print(f"hd 128×128, run to its hardmax switch at t = {t_switch:.4g}: {len(t_eval)} steps "
          f"(truth: DOP853 rtol 3e-14, {truth.nfev} evaluations); load {load:.1f}")
    print(f"CPU s (min of {args.repeat}): run {run_s:.2f}; with the linearised estimate: heun "
          f"{costs['heun']:.2f} (estimate ×{(costs['heun'] - run_s) / run_s:.2f} the run), rk4 "
          f"{costs['rk4']:.2f} (×{(costs['rk4'] - run_s) / run_s:.2f}); the reference run at "
          f"rtol {ref_rtol:g} {ref_s:.2f} (×{ref_s / run_s:.2f}, {ref.nfev} evaluations)")
    picks = sorted(set(np.linspace(0, len(t_eval) - 1, 12).astype(int))
                   | set(np.flatnonzero((t_eval > 0.79) & (t_eval < 0.83))[::3]))
    print(f"{'t':>8}{'true':>10}" + "".join(f"{name:>22}" for name in columns)
          + "   (true / estimate)")
    for k in picks:
        print(f"{t_eval[k]:8.4f}{true[k]:10.2e}" + "".join(
            f"{col[k]:10.2e} ({true[k] / (col[k] + floor[k]):6.2f})" + " " * 3
            for col in columns.values()))
    for name, col in columns.items():
        ratio = true / (col + floor)
        late = t_eval > 0.1
        print(f"  {name}: worst true/estimate {ratio.max():.2f} (at t = "
              f"{t_eval[ratio.argmax()]:.3f}); for t > 0.1 min {ratio[late].min():.3g}, max "
              f"{ratio[late].max():.2f}; at the switch {ratio[-1]:.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
