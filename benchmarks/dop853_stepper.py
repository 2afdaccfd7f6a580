#!/usr/bin/env python
r"""Benchmark: the lean DOP853 stepper (:mod:`verify.flow.dop853`) against SciPy's DOP853, in one
process, on the runs users wait for.

``simulate`` is timed twice in the same process and load: as it is (the lean
:class:`~verify.flow.dop853.DOP853Stepper`) and with SciPy's ``scipy.integrate.DOP853`` put back
in its place (:class:`SciPyStepper`, an adapter with the stepper's interface that calls SciPy as
``verify`` did before: the field wrapped in ``reshape``/``ravel``, SciPy's ``dense_output``).
Both take the same steps up to round-off; the CPU seconds (this process's, minimum of
``--repeat``) and their ratio are printed, with the steps, evaluations and — for the 128×128
run — the part of the CPU spent in the field and the achieved error against a run at
``rtol = 3e-14``.

``hd`` — the paper's 128×128 run (``claims/examples/high-dimension.toml``) to ``T = 4``, with and
without its error estimate (whose reference is a float64 DOP853 run at ``rtol = 1e-13``: the
stepper serves both runs).

``small`` — the float64 runs of claim-suite instances (``n ≤ 20``, ``d ≤ 3``; ``simulate`` with
``error_estimate=False``, each family's horizon and checkpoints).

``accuracy`` — not speed: the true error of each stepper's run of the float64 draws of
``benchmarks/error_coverage.py`` (``--set paper|growth``; ``simulate`` with
``error_estimate=False`` at its default tolerances) against one truth at 32 digits, per
variant: how many draws take the same number of steps, and the stepper's error over SciPy's.
The two part by round-off in the step control; where the steps then fall differently the
accuracy moves either way (sharp attention switches, ReLU kinks; benchmarks/README.md).

Run from the repository root: ``python benchmarks/dop853_stepper.py [hd|small|all]``, or
``python benchmarks/dop853_stepper.py accuracy --set growth --instances 120 --workers 2``
(~9 CPU min). No wall-clock assertion; this is not a test.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")  # see benchmarks/README.md, "BLAS threads"
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy.integrate import DOP853 as SciPyDOP853  # noqa: E402

import verify.flow.solvers as solvers  # noqa: E402
from verify.claim import load_claim  # noqa: E402
from verify.flow.dop853 import DOP853Stepper  # noqa: E402
from verify.flow.fields import EigenRescaledField, VectorField  # noqa: E402
from verify.flow.simulate import entry_differences, simulate  # noqa: E402
from verify.model.instance_file import load_instance_file  # noqa: E402

HD_INSTANCE = ROOT / "claims" / "examples" / "high-dimension.toml"
SMALL = ["hyperplanes/paper-3d-negative-pair#0", "hyperplanes/paper-2d#0",
         "polytope-subspace/paper-3d#0", "polytope/paper-uniform-2d#0",
         "collapse-negative-identity/uniform-2d#0", "generic-qk/paranormal-3d#1",
         "generic-qk/identity-v-2d#0", "codimension/random-3d#1", "complex-leading/rotation-2d#0",
         "mlp/relu-identity#1"]


class SciPyStepper:
    """SciPy's DOP853 behind :class:`~verify.flow.dop853.DOP853Stepper`'s interface (what
    ``verify`` called before the stepper): the baseline of this benchmark."""

    def __init__(self, fun, t0, y0, t_bound, rtol, atol) -> None:
        self.shape = y0.shape
        self._solver = SciPyDOP853(lambda t, y: fun(t, y.reshape(self.shape)).ravel(), t0,
                                   y0.ravel(), t_bound, rtol=rtol, atol=atol)

    t = property(lambda self: self._solver.t)
    t_old = property(lambda self: self._solver.t_old)
    status = property(lambda self: self._solver.status)
    nfev = property(lambda self: self._solver.nfev)
    y = property(lambda self: self._solver.y.reshape(self.shape))

    def step(self):
        return self._solver.step()

    def interpolant(self):
        dense = self._solver.dense_output()
        return lambda t: dense(t).reshape(self.shape)


STEPPERS = {"SciPy DOP853": SciPyStepper, "lean DOP853Stepper": DOP853Stepper}


class _FieldClock:
    """CPU seconds spent in the float64 fields' ``__call__`` while it is on."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._saved = {cls: cls.__call__ for cls in (EigenRescaledField, VectorField)}

    def __enter__(self):
        for cls, call in self._saved.items():
            def timed(field, t, y, _call=call):
                cpu = time.process_time()
                try:
                    return _call(field, t, y)
                finally:
                    self.seconds += time.process_time() - cpu
            cls.__call__ = timed
        return self

    def __exit__(self, *exc) -> None:
        for cls, call in self._saved.items():
            cls.__call__ = call


def timed(stepper, fn, repeat: int):
    """``(minimum CPU seconds, field CPU seconds of that call, last result)`` of ``fn()`` with
    ``stepper`` in :mod:`verify.flow.solvers`."""
    solvers.DOP853Stepper = stepper
    best = None
    try:
        for _ in range(repeat):
            with _FieldClock() as clock:
                cpu = time.process_time()
                out = fn()
                spent = time.process_time() - cpu
            if best is None or spent < best[0]:
                best = (spent, clock.seconds, out)
    finally:
        solvers.DOP853Stepper = DOP853Stepper
    return best


def hd_case(repeat: int, T: float = 4.0) -> None:
    inst = load_instance_file(HD_INSTANCE).instance
    checkpoints = int(T) + 1
    reference = simulate(inst, T, checkpoints=checkpoints, rtol=3e-14, atol=1e-16,
                         error_estimate=False)
    z_ref = reference.z[-1]
    scale = float(np.abs(z_ref).max())
    print(f"\nhd: n = d = 128, T = {T:g}, rtol 1e-10 (reference: simulate rtol 3e-14, "
          f"{reference.stats['steps']} steps)")
    print(f"{'':44}{'CPU s':>8}{'field':>8}{'steps':>7}{'evals':>7}{'rel err':>10}"
          f"{'estimate':>10}")
    cpu = {}
    for estimate in (False, True):
        for name, stepper in STEPPERS.items():
            spent, field, traj = timed(stepper, lambda e=estimate: simulate(
                inst, T, checkpoints=checkpoints, error_estimate=e), repeat)
            cpu[name, estimate] = spent
            error = float(np.abs(traj.z[-1] - z_ref).max()) / scale
            est = "" if traj.error_estimate is None else f"{traj.error_estimate / scale:.1e}"
            label = f"{name}, {'with' if estimate else 'no'} error estimate"
            print(f"{label:44}{spent:8.3f}{field:8.3f}{traj.stats['steps']:7d}"
                  f"{traj.stats['rhs_evals']:7d}{error:10.1e}{est:>10}")
    base, lean = STEPPERS
    print(f"  lean / SciPy: ×{cpu[lean, False] / cpu[base, False]:.3f} CPU without the "
          f"estimate, ×{cpu[lean, True] / cpu[base, True]:.3f} with it (the 'field' column: "
          "CPU inside the field's calls, the same work for both)")


def small_instances(keys: list[str]):
    out = []
    for key in keys:
        claim_id, rest = key.split("/")
        family_name, k = rest.split("#")
        family = load_claim(ROOT / "claims" / f"{claim_id}.toml").family(family_name)
        out.append((key, family.instance(int(k), None), Fraction(family.horizon),
                    family.checkpoints))
    return out


def small_case(repeat: int, keys: list[str] = SMALL) -> None:
    cases = small_instances(keys)
    print("\nsmall: the float64 runs of claim-suite instances (simulate, no error estimate)")
    print(f"{'instance':44}{'n':>4}{'d':>3}{'steps':>7}{'evals':>7}{'SciPy s':>9}{'lean s':>9}"
          f"{'ratio':>7}")
    totals = dict.fromkeys(STEPPERS, 0.0)
    fields = dict.fromkeys(STEPPERS, 0.0)
    for key, inst, T, checkpoints in cases:
        row = {}
        for name, stepper in STEPPERS.items():
            spent, field, traj = timed(stepper, lambda i=inst, T=T, c=checkpoints: simulate(
                i, T, checkpoints=c, error_estimate=False, precision="float64"), repeat)
            row[name] = spent
            totals[name] += spent
            fields[name] += field
        base, lean = row.values()
        print(f"{key:44}{inst.n:4d}{inst.d:3d}{traj.stats.get('steps', 0):7d}"
              f"{traj.stats.get('rhs_evals', 0):7d}{base:9.4f}{lean:9.4f}{lean / base:7.3f}")
    base, lean = totals.values()
    print(f"{'all':44}{'':21}{base:9.4f}{lean:9.4f}{lean / base:7.3f}")
    print(f"  CPU inside the fields' calls: SciPy {fields['SciPy DOP853']:.3f}, lean "
          f"{fields['lean DOP853Stepper']:.3f} s; the rest of simulate (stepping, hardmax "
          f"certifier, records): SciPy {base - fields['SciPy DOP853']:.3f}, lean "
          f"{lean - fields['lean DOP853Stepper']:.3f} s")


def draw_errors(k: int, growth: bool) -> dict | None:
    """Draw ``k`` of error_coverage.py's set: each stepper's steps and largest true error over
    the checkpoints (``|z − z_true|``, the truth at 32 digits without continuation); ``None``
    for an arb draw."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import error_coverage

    data = error_coverage.draw(k, error_coverage.GROWTH_VARIANTS if growth else None)
    if data["precision"] != "float64":
        return None
    inst, T = error_coverage.build(data), data["horizon"]
    row, runs = {"k": k, "variant": data["variant"]}, {}
    for name, stepper in STEPPERS.items():
        solvers.DOP853Stepper = stepper
        try:
            runs[name] = simulate(inst, T, checkpoints=7, precision="float64",
                                  error_estimate=False)
        finally:
            solvers.DOP853Stepper = DOP853Stepper
        if not runs[name].success:
            return {**row, "skipped": f"{name}: {runs[name].status}"}
    truth = simulate(inst, T, checkpoints=7, precision=32, error_estimate=False,
                     continuation=False, symmetry="off")
    if not truth.success:
        return {**row, "skipped": f"truth: {truth.status}"}
    for name, run in runs.items():
        row[name] = (run.stats["steps"],
                     float(entry_differences(run, truth, truth.precision["bits"]).max()))
    return row


def accuracy_case(growth: bool, instances: int, workers: int) -> None:
    with ProcessPoolExecutor(workers) as pool:
        rows = [row for row in pool.map(functools.partial(draw_errors, growth=growth),
                                        range(instances)) if row is not None]
    base, lean = STEPPERS
    print(f"\naccuracy: error_coverage.py's {'growth' if growth else 'paper'} draws 0–"
          f"{instances - 1} (float64 ones), true error against 32 digits, lean / SciPy")
    print(f"{'variant':38}{'draws':>6}{'same steps':>11}{'min':>8}{'median':>8}{'max':>8}  "
          "draws outside ×0.95–1.05")
    by_variant: dict[str, list[dict]] = {}
    for row in rows:
        if "skipped" in row:
            print(f"  #{row['k']} skipped: {row['skipped']}")
        else:
            by_variant.setdefault(row["variant"], []).append(row)
    for variant, group in by_variant.items():
        ratios = [row[lean][1] / row[base][1] if row[base][1] > 0 else math.nan
                  for row in group]
        same = sum(row[lean][0] == row[base][0] for row in group)
        moved = ", ".join(f"#{row['k']} ×{r:.3g}" for row, r in zip(group, ratios, strict=True)
                          if not 0.95 <= r <= 1.05)
        print(f"{variant[:37]:38}{len(group):6d}{same:11d}{np.nanmin(ratios):8.3g}"
              f"{np.nanmedian(ratios):8.3g}{np.nanmax(ratios):8.3g}  {moved}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", nargs="?", default="all",
                        choices=["hd", "small", "all", "accuracy"])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the minimum CPU "
                        "seconds is printed (default 3)")
    parser.add_argument("--set", choices=["paper", "growth"], default="growth",
                        help="accuracy: error_coverage.py's draws (default growth)")
    parser.add_argument("--instances", type=int, default=120,
                        help="accuracy: draws 0 … N−1 (default 120)")
    parser.add_argument("--workers", type=int, default=2, help="accuracy: processes")
    args = parser.parse_args(argv)
    if args.case == "accuracy":
        print(f"load average at the start: {os.getloadavg()[0]:.2f}")
        accuracy_case(args.set == "growth", args.instances, args.workers)
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
        return 0
    print(f"load average at the start: {os.getloadavg()[0]:.2f}; VERIFY_COMPILED="
          f"{os.environ.get('VERIFY_COMPILED', '(unset)')}")
    if args.case in ("small", "all"):
        small_case(args.repeat)
    if args.case in ("hd", "all"):
        hd_case(args.repeat)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
