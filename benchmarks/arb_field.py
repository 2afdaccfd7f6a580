#!/usr/bin/env python
r"""Benchmark: one arbitrary-precision (``arb``) field evaluation, against the route it replaced,
measured in the same run (CPU seconds of this process, minimum over ``--repeat`` rounds).

``rows`` — ``ValueExponential.scaled_rows_arb``, ``Z Ẽ(t)ᵀ`` for ``n = 9`` token rows of a
``32×32`` ``V`` with complex eigenvalues (MiniLM head 3.9 when the weights extra is installed,
else a random ``V`` with short rational entries), at 140 and 280 bits: the real eigen-form (two
real products and a sparse one) against the complex decomposition (two complex products and
``n·d`` Python multiplications, still the fallback). The balls are checked to overlap.

``sphere`` — the post-LN field on the sphere (``n = 16``, ``d = 3``, ``β = 1``, ``Q = K = V = I``,
the tokens of ``benchmarks/anchors.py``), at 99 and 198 bits (the 20-digit run and its
reference): the one-pass kernel (row normalisation and tangent projection together) against the
general path of ``VectorField`` (heads, then normalisation, then projection).

No wall-clock assertion; run from the repository root: ``python benchmarks/arb_field.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from verify.flow.exponential import ValueExponential  # noqa: E402
from verify.flow.fields import VectorField  # noqa: E402
from verify.model import Instance, Model  # noqa: E402
from verify.numerics import Arb  # noqa: E402


def per_call(fn, args: tuple, calls: int, repeat: int) -> float:
    """Minimum over ``repeat`` rounds of the CPU milliseconds per call ``fn(*args)``."""
    best = float("inf")
    fn(*args)
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(calls):
            fn(*args)
        best = min(best, (time.process_time() - start) / calls * 1e3)
    return best


def rows_case(repeat: int) -> None:
    try:
        from verify.cli import _load_claims

        claims = {c.id: c for c in _load_claims(None)}
        instance = claims["real-heads"].family("minilm-fastest-head").instance(0)
        V, Z0, name = (np.asarray(instance.model.heads[0].V, dtype=object),
                       instance.x0_float(), "MiniLM head 3.9")
    except Exception:  # the weights extra is not installed
        rng = np.random.default_rng(0)
        V = np.array([[Fraction(int(v), 64) for v in row]
                      for row in rng.integers(-96, 97, (32, 32))], dtype=object)
        Z0, name = rng.standard_normal((9, 32)), "random 32×32 V"
    E = ValueExponential(V)
    print(f"rows: Z Ẽ(t)ᵀ, n = {len(Z0)}, d = {len(V)} ({name}), t = 37/7")
    print(f"{'bits':>6}{'real form ms':>15}{'complex ms':>13}{'ratio':>8}  balls overlap")
    for bits in (140, 280):
        backend = Arb(bits=bits)
        with backend.working_precision():
            Z = backend.from_float(Z0) * backend.scalar(Fraction(1, 3))  # full mantissas
            t = backend.scalar(Fraction(37, 7))
            real = per_call(E.scaled_rows_arb, (t, Z, bits), 20, repeat)
            complex_ = per_call(E._scaled_rows_complex_arb, (t, Z, bits), 20, repeat)
            a, b = E.scaled_rows_arb(t, Z, bits)[0], E._scaled_rows_complex_arb(t, Z, bits)[0]
            overlap = all(a[i, j].overlaps(b[i, j]) for i in range(a.nrows())
                          for j in range(a.ncols()))
        print(f"{bits:>6}{real:>15.3f}{complex_:>13.3f}{complex_ / real:>7.2f}×  {overlap}")


def sphere_case(repeat: int) -> None:
    g = np.random.default_rng(0).standard_normal((16, 3))
    x0 = g / np.linalg.norm(g, axis=1, keepdims=True)
    instance = Instance(Model(V=np.eye(3, dtype=int).tolist(), form="x",
                              normalisation="sphere"), x0.tolist())
    print("sphere: post-LN field, n = 16, d = 3, β = 1, Q = K = V = I")
    print(f"{'bits':>6}{'one pass µs':>14}{'general µs':>13}{'ratio':>8}  balls overlap")
    for bits in (99, 198):
        backend = Arb(bits=bits)
        with backend.working_precision():
            fused = VectorField(instance.model, 16, backend)
            general = VectorField(instance.model, 16, backend)
            general._sphere_softmax = False
            X = backend.from_exact(instance.x0)
            X = (X + fused(0, X) * backend.scalar(Fraction(1, 7))).mid()  # full mantissas
            one = per_call(fused, (0, X), 200, repeat) * 1e3
            two = per_call(general, (0, X), 200, repeat) * 1e3
            a, b = fused(0, X), general(0, X)
            overlap = all(a[i, j].overlaps(b[i, j]) for i in range(16) for j in range(3))
        print(f"{bits:>6}{one:>14.1f}{two:>13.1f}{two / one:>7.2f}×  {overlap}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", nargs="?", default="all", choices=["rows", "sphere", "all"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if args.part in ("rows", "all"):
        rows_case(args.repeat)
    if args.part in ("sphere", "all"):
        sphere_case(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
