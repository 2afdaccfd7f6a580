#!/usr/bin/env python
r"""Benchmark: the ``arb`` reference runs of the error estimate, this tree against a baseline
revision's code path, measured in the same process (CPU seconds, minimum over ``--repeat``
rounds, the two routes alternating).

The baseline's versions of the modules the reference runs through (``verify/flow/fields.py``,
``verify/flow/exponential.py``, ``verify/exact/symmetry_group.py``,
``verify/numerics/_extrapolation.py``) are read with ``git show REV:PATH`` and loaded beside
this tree's; while the baseline is measured they replace this tree's where the reference run
reads them (``simulate``'s ``VectorField``, the solver's ``integrate_extrapolation``,
``SymmetryGroup.project``). Everything else is this tree's code, shared by both routes.

``field`` — one reference field evaluation (``y ↦ π(f(π(y)))`` with the symmetry projection
``π`` where the run is kept on a fixed subspace), at 100 of the states the instance's ``arb``
reference evaluated its field at (recorded while ``simulate`` ran it, each at its step's bits);
µs per evaluation, and whether the two routes give the same balls (midpoints and radii).

``suite`` — the claims given (default: the five whose ``arb`` references cost the most
without proofs) run as ``verify run --proof-seconds 0`` does, in this process (no workers):
per instance with an ``arb`` reference, the CPU seconds of that reference run on both routes,
its evaluations, and the largest difference of the two references' states at the checkpoints
in units of the reference's tolerance (``atol + rtol·|y|``).

No wall-clock assertion; run from the repository root:
``nice python benchmarks/arb_reference.py [field|suite|all] [--baseline main] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from flint import ctx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import verify.flow.simulate as simulate_module  # noqa: E402
import verify.flow.solvers as solvers_module  # noqa: E402
from verify.claim import load_claims  # noqa: E402
from verify.exact.precision import working_precision  # noqa: E402
from verify.exact.symmetry_group import SymmetryGroup  # noqa: E402
from verify.flow.fields import VectorField  # noqa: E402
from verify.flow.simulate import _ReducedField, _symmetry_group, simulate  # noqa: E402
from verify.numerics import Arb, integrate_extrapolation  # noqa: E402
from verify.run import run_claims  # noqa: E402
from verify.run._budget import Budget  # noqa: E402
from verify.run._runner import InlineExecutor  # noqa: E402

MODULES = {"fields": "verify/flow/fields.py", "exponential": "verify/flow/exponential.py",
           "symmetry_group": "verify/exact/symmetry_group.py",
           "extrapolation": "verify/numerics/_extrapolation.py"}
SUITE_CLAIMS = ("generic-qk", "boolean-1d", "higherdim-remark", "codimension",
                "polytope-subspace")
# (claim, family, k): one instance per kind of reference field the suite integrates in arb
FIELD_CASES = (("boolean-1d", "uniform-scalar-positive", 0),   # n = 6, d = 1, QᵀK symmetric
               ("higherdim-remark", "epsilon-three-tenths", 0),  # n = 2, d = 2, on a subspace
               ("generic-qk", "paranormal-3d", 1),                # n = 10, d = 3, by rows
               ("polytope-subspace", "not-block-diagonal", 1),    # n = 12, d = 3
               ("polytope-subspace", "paper-3d", 0))              # n = 20, d = 3


def load_baseline(revision: str, folder: Path) -> dict:
    """The baseline's modules, loaded under their own names (``baseline_fields``, ...); its
    ``fields`` reads the baseline's ``ValueExponential``."""
    loaded = {}
    for name, path in MODULES.items():
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{path}"],
                              check=True, capture_output=True, text=True).stdout
        file = folder / f"baseline_{name}.py"
        file.write_text(text)
        spec = importlib.util.spec_from_file_location(f"baseline_{name}", file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        loaded[name] = module
    loaded["fields"].ValueExponential = loaded["exponential"].ValueExponential
    return loaded


@contextlib.contextmanager
def routed(baseline: dict | None):
    """This tree's reference route (``None``), or the baseline's while inside."""
    if baseline is None:
        yield
        return
    saved = (simulate_module.VectorField, solvers_module.integrate_extrapolation,
             SymmetryGroup.project, SymmetryGroup._project_arb)
    simulate_module.VectorField = baseline["fields"].VectorField
    solvers_module.integrate_extrapolation = baseline["extrapolation"].integrate_extrapolation
    SymmetryGroup.project = baseline["symmetry_group"].SymmetryGroup.project
    SymmetryGroup._project_arb = baseline["symmetry_group"].SymmetryGroup._project_arb
    try:
        yield
    finally:
        (simulate_module.VectorField, solvers_module.integrate_extrapolation,
         SymmetryGroup.project, SymmetryGroup._project_arb) = saved


def same_balls(a, b) -> bool:
    return all(x.mid() == y.mid() and x.rad() == y.rad()
               for x, y in zip(a.entries(), b.entries(), strict=True))


class _Recording(VectorField):
    """:class:`VectorField` that keeps what its ``arb`` evaluations were given (``calls``)."""

    calls: list = []

    def __call__(self, t, state):
        if self.arb:
            _Recording.calls.append((t, state, ctx.prec))
        return super().__call__(t, state)


def field_case(claims: dict, baseline: dict, repeat: int, samples: int = 100) -> None:
    print("field: one reference evaluation, µs (min of rounds), baseline / this tree")
    print(f"{'instance':<42}{'n':>3}{'d':>3}{'bits':>9}{'baseline':>10}{'this':>8}{'ratio':>8}"
          "  same balls")
    for claim, family, k in FIELD_CASES:
        fam = claims[claim].family(family)
        instance = fam.instance(k)
        _Recording.calls = []
        saved, simulate_module.VectorField = simulate_module.VectorField, _Recording
        try:   # the run and its reference, as the claim asks; arb calls recorded
            simulate(instance, fam.horizon, checkpoints=fam.checkpoints, precision=fam.precision)
        finally:
            simulate_module.VectorField = saved
        if not _Recording.calls:
            print(f"{claim}/{family}#{k}: no arb reference")
            continue
        stride = max(1, len(_Recording.calls) // samples)
        calls = _Recording.calls[::stride]
        bits = max(prec for _, _, prec in calls)
        backend = Arb(bits=bits)
        group = _symmetry_group(instance)
        fields = []
        for module in (baseline["fields"], None):
            kind = VectorField if module is None else module.VectorField
            field = kind(instance.model, instance.n, backend)
            if group is not None:  # the baseline's group class, with the same elements
                own = group if module is None else \
                    baseline["symmetry_group"].SymmetryGroup.from_dict(group.to_dict())
                field = _ReducedField(field, lambda y, g=own, b=backend: g.project(y, b))
            fields.append(field)
        # the two routes alternate call by call (a busy machine slows both alike)
        best = [float("inf"), float("inf")]
        for _ in range(repeat):
            spent = [0, 0]
            for t, y, prec in calls:
                with working_precision(prec):
                    for route, field in enumerate(fields):
                        start = time.process_time_ns()
                        field(t, y)
                        spent[route] += time.process_time_ns() - start
            best = [min(b, s / len(calls) / 1e9) for b, s in zip(best, spent, strict=True)]
        same = True
        for t, y, prec in calls:
            with working_precision(prec):
                same = same and same_balls(fields[0](t, y), fields[1](t, y))
        name = f"{claim}/{family}#{k}"
        low = min(prec for _, _, prec in calls)
        print(f"{name:<42}{instance.n:>3}{instance.d:>3}{f'{low}-{bits}':>9}"
              f"{best[0] * 1e6:>10.1f}{best[1] * 1e6:>8.1f}{best[0] / best[1]:>7.2f}×  {same}")


def suite_case(claims: dict, baseline: dict, repeat: int, ids: list[str]) -> None:
    chosen = [claims[i] for i in ids]
    # (claim, instance) -> route -> [CPU s of each round], evaluations, states of the last round
    cpu: dict = defaultdict(lambda: ([], []))
    info, states = {}, defaultdict(dict)
    current = {}

    def measured(instance, times, traj, backend, controller, *args, **kwargs):
        start = time.process_time()
        ref = reference_run(instance, times, traj, backend, controller, *args, **kwargs)
        if backend.name == "arb":
            key = (current["claim"], instance.name, len(times))
            cpu[key][current["route"]].append(time.process_time() - start)
            info[key] = (instance.n, instance.d, backend.bits,
                         (ref.stats or {}).get("rhs_evals", 0), controller.rtol, controller.atol)
            states[key][current["route"]] = np.asarray(ref.state, dtype=float)
        return ref

    reference_run = simulate_module._reference_run
    simulate_module._reference_run = measured
    totals = [[], []]
    try:
        with tempfile.TemporaryDirectory() as out:
            for round_ in range(repeat):
                for route, base in enumerate((baseline, None)):
                    current["route"] = route
                    start = time.process_time()
                    for claim in chosen:
                        current["claim"] = claim.id
                        with routed(base):
                            run_claims([claim], out_dir=Path(out) / f"{round_}-{route}-{claim.id}",
                                       executor=InlineExecutor(), progress=False,
                                       budget=Budget(None, None, 0.0))
                    totals[route].append(time.process_time() - start)
    finally:
        simulate_module._reference_run = reference_run
    print(f"suite: claims {', '.join(ids)} without proofs, in this process; the arb references "
          f"(CPU s, min of {repeat}), baseline / this tree")
    print(f"{'claim/instance':<44}{'n':>3}{'d':>3}{'bits':>6}{'evals':>7}{'baseline':>10}"
          f"{'this':>8}{'ratio':>8}{'max diff/tol':>14}")
    sums = [0.0, 0.0]
    for key in sorted(cpu, key=lambda k: -min(cpu[k][0] or [0])):
        (a, b), (n, d, bits, evals, rtol, atol) = cpu[key], info[key]
        if not a or not b:
            continue
        sums[0], sums[1] = sums[0] + min(a), sums[1] + min(b)
        ya, yb = states[key].get(0), states[key].get(1)
        diff = float(np.max(np.abs(ya - yb) / (atol + rtol * np.abs(ya)))) \
            if ya is not None and yb is not None and ya.shape == yb.shape else float("nan")
        print(f"{key[0] + '/' + key[1]:<44}{n:>3}{d:>3}{bits:>6}{evals:>7}{min(a):>10.2f}"
              f"{min(b):>8.2f}{min(a) / min(b):>7.2f}×{diff:>14.2g}")
    print(f"{'arb references, total':<62}{sums[0]:>10.2f}{sums[1]:>8.2f}"
          f"{sums[0] / max(sums[1], 1e-9):>7.2f}×")
    print(f"{'the claims, all their work':<62}{min(totals[0]):>10.2f}{min(totals[1]):>8.2f}"
          f"{min(totals[0]) / min(totals[1]):>7.2f}×")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", nargs="?", default="all", choices=["field", "suite", "all"])
    parser.add_argument("--baseline", default="main", help="git revision (default: main)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--claims", default=",".join(SUITE_CLAIMS))
    args = parser.parse_args(argv)
    claims = {c.id: c for c in load_claims(ROOT / "claims")}
    with tempfile.TemporaryDirectory() as folder:
        baseline = load_baseline(args.baseline, Path(folder))
        print(f"baseline {args.baseline}; this tree {ROOT}; integrate_extrapolation from "
              f"{integrate_extrapolation.__module__}")
        if args.part in ("field", "all"):
            field_case(claims, baseline, args.repeat)
        if args.part in ("suite", "all"):
            suite_case(claims, baseline, args.repeat, args.claims.split(","))
    return 0


if __name__ == "__main__":
    sys.exit(main())
