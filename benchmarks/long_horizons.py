#!/usr/bin/env python
r"""Benchmark: long horizons on the sphere, and how the cost grows with n and with T.

Two parts, each timed against a baseline measured in the same run (the ratios are what counts;
the seconds depend on the machine and its load). No wall-clock assertion; this is not a test.

``sphere`` — post-LN (tokens on the unit sphere), ``n = 16``, ``d = 3``, ``β = 1``,
``Q = K = V = I``, tokens uniform on the sphere (seed 0), ``T = 10^4``:

* ``verify.flow.simulate.simulate`` as ``verify simulate`` calls it (float64 DOP853, error estimate
  by an independent arb re-run at a tighter tolerance) and without the error estimate;
* the baseline: a plain SciPy ``solve_ivp(method="DOP853")`` float64 run of the same ODE at the
  same tolerances, no error estimate,

.. math:: \dot x_i = P^\perp_{x_i}\Big(\sum_j P_{ij} V x_j\Big),\qquad
          P_{ij} = \operatorname{softmax}_j\, \beta \langle Q x_i, K x_j\rangle;

and the same three at ``T = 10^2, 10^3, 10^4`` (the cost against ``T``: constant once the
consensus is certified, :mod:`verify.flow.consensus_cap`; linear before, the working precision being
constant on the sphere).

``scaling`` — the paper's high-dimensional recipe at ``d = 32`` (:func:`high_dimension.make_setup`,
seed 0, ``T = 5``) for ``n = 32, 64, 128, 256, 512``: ``simulate`` with and without its error
estimate against the authors' Euler scheme (:mod:`_baseline`), with the field evaluations and
their cost against the flop count ``≈ 4 n² d`` of one evaluation (two ``n×n×d`` products).
``T = 5``: with ``d = 32`` the top eigenvalue is ``≈ 2``, the attention is not yet certified 0/1
there, and float64 later loses the score gaps that decide the leaders (at ``n = 32`` the float64
run to ``T = 15`` never certifies the hardmax and stalls at ``t ≈ 11.6``; ``--precision auto``
is the route there).

Run from the repository root: ``python benchmarks/long_horizons.py [sphere|scaling|all]``
(``--quick``: smaller ``T`` and ``n``, seconds).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")  # see benchmarks/README.md, "BLAS threads"
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

from verify.flow.simulate import simulate  # noqa: E402
from verify.model import Instance, Model  # noqa: E402

RTOL, ATOL = 1e-10, 1e-12  # simulate's float64 defaults, given to the baseline too


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - start, out


def sphere_tokens(n: int, d: int, seed: int) -> np.ndarray:
    """``n`` points uniform on the unit sphere of ``R^d`` (normalised Gaussians)."""
    g = np.random.default_rng(seed).standard_normal((n, d))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def plain_dop853_sphere(x0: np.ndarray, beta: float, horizon: float):
    """The baseline: SciPy DOP853 on the post-LN field with ``Q = K = V = I``, no error
    estimate; returns ``(x(T), field evaluations)``."""
    n, d = x0.shape

    def field(_t, y):
        x = y.reshape(n, d)
        S = beta * (x @ x.T)
        P = np.exp(S - S.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        F = P @ x
        F -= np.sum(F * x, axis=1, keepdims=True) * x  # projection on the tangent space
        return F.ravel()

    sol = solve_ivp(field, (0.0, horizon), x0.ravel(), method="DOP853", rtol=RTOL, atol=ATOL)
    return sol.y[:, -1].reshape(n, d), sol.nfev


def sphere_part(horizons: list[float], n: int = 16, d: int = 3, beta: float = 1.0) -> None:
    x0 = sphere_tokens(n, d, seed=0)
    model = Model(V=np.eye(d, dtype=int).tolist(), form="x", normalisation="sphere", beta=beta)
    inst = Instance(model, x0, name="sphere-long")
    print(f"post-LN sphere: n={n}, d={d}, β={beta}, Q = K = V = I, tokens uniform on the sphere "
          f"(seed 0), rtol={RTOL:g}, atol={ATOL:g}")
    print(f"{'T':>7}{'simulate+est s':>16}{'simulate s':>12}{'DOP853 s':>10}{'×est':>7}"
          f"{'×bare':>7}{'steps':>7}{'ref bits':>9}{'est. error':>12}{'|Δ DOP853|':>12}")
    for T in horizons:
        t_full, traj = timed(simulate, inst, T, checkpoints=11)
        t_bare, bare = timed(simulate, inst, T, checkpoints=11, error_estimate=False)
        t_plain, (x_plain, _) = timed(plain_dop853_sphere, x0, beta, T)
        t_plain2, _ = timed(plain_dop853_sphere, x0, beta, T)
        t_plain = min(t_plain, t_plain2)
        gap = float(np.abs(np.asarray(traj.x[-1], float) - x_plain).max())
        print(f"{T:>7g}{t_full:>16.2f}{t_bare:>12.2f}{t_plain:>10.2f}{t_full / t_plain:>7.1f}"
              f"{t_bare / t_plain:>7.1f}{traj.stats.get('steps', 0):>7d}"
              f"{traj.reference.get('bits', 53):>9}{traj.error_estimate:>12.1e}{gap:>12.1e}")
    print("×est, ×bare: simulate with / without its error estimate against the plain DOP853 run "
          "(goal ×3 with the estimate at T = 10^4; must: under 2 minutes)")


def scaling_part(sizes: list[int], d: int = 32, horizon: float = 5.0) -> None:
    from _baseline import euler_frozen_attention
    from high_dimension import make_setup

    print(f"\nthe paper's high-dimensional recipe at d = {d}, T = {horizon:g} (seed 0), form z, "
          "float64")
    print(f"{'n':>5}{'simulate+est s':>16}{'simulate s':>12}{'Euler s':>9}{'×est':>7}{'×bare':>7}"
          f"{'steps':>7}{'RHS':>7}{'ms/RHS':>8}{'GFlop/s':>9}{'switch t0':>10}{'est. rel':>10}")
    for n in sizes:
        V, x0, _ = make_setup(n, d, seed=0)
        inst = Instance(Model(V=V), x0, name=f"scaling-{n}")
        t_euler, _ = timed(euler_frozen_attention, V, x0, horizon, 0.1)
        t_full, traj = timed(simulate, inst, horizon, checkpoints=16)
        t_bare, bare = timed(simulate, inst, horizon, checkpoints=16,
                                error_estimate=False)
        rhs = bare.stats.get("rhs_evals", 0)
        legs = (bare.continuation or {}).get("legs", [])
        switch = f"{legs[0]['t0']:.2f}" if legs else "—"
        ms = 1e3 * t_bare / max(rhs, 1)
        gflops = 4 * n * n * d / (ms * 1e-3) / 1e9
        scale = float(np.abs(np.asarray(traj.z[-1], float)).max())
        if not traj.success:
            print(f"{n:>5} simulate did not reach T: {traj.message}")
            continue
        print(f"{n:>5}{t_full:>16.2f}{t_bare:>12.2f}{t_euler:>9.2f}{t_full / t_euler:>7.1f}"
              f"{t_bare / t_euler:>7.1f}{bare.stats.get('steps', 0):>7d}{rhs:>7d}{ms:>8.2f}"
              f"{gflops:>9.2f}{switch:>10}{traj.error_estimate / scale:>10.1e}")
    print("ms/RHS: wall time of the run without estimate per field evaluation (everything "
          "included); GFlop/s: 4n²d flops per evaluation over that time")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", nargs="?", choices=("sphere", "scaling", "all"), default="all")
    parser.add_argument("--quick", action="store_true", help="T ≤ 10^3 and n ≤ 64 (seconds)")
    args = parser.parse_args(argv)
    print(f"BLAS threads={os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    if args.part in ("sphere", "all"):
        sphere_part([100.0, 1000.0] if args.quick else [100.0, 1000.0, 10_000.0])
    if args.part in ("scaling", "all"):
        scaling_part([32, 64] if args.quick else [32, 64, 128, 256, 512])
    return 0


if __name__ == "__main__":
    sys.exit(main())
