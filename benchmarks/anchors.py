#!/usr/bin/env python
r"""Benchmark: ``verify`` side by side with SciPy, diffrax (JAX) and heyoka, at equal target
accuracy, on the two runs users wait for.

Every tool gets the same tolerances (``rtol = 1e-10``, ``atol = 1e-12``, heyoka ``tol = 1e-10``)
and its *achieved* error is printed next to its time, measured against an independent reference
computed in the same run; the times are the minimum of ``--repeat`` runs (compilation, for JAX
and heyoka, is timed separately: it is paid once per process). No wall-clock assertion; this is
not a test, and the ratios, not the seconds, are what carries over to another machine.

``hd`` — the paper's high-dimensional run (``claims/examples/high-dimension.toml``: ``n = d =
128``, symmetric ``V``, ``Q = K = I``) to ``T = 4`` and to ``T = 15``. The other tools integrate
the same ODE in eigen-coordinates ``w = z Φ`` (``V = Φ Λ Φᵀ``: ``ẇ = (P w − w) Λ`` with scores
``(s∘w_i)·(s∘w_j)``, ``s = e^{(λ−μ)t}``, ``L = 2 μ t``), their best form; ``verify`` is timed as
``simulate`` with and without its error estimate. Reference: ``simulate`` at ``rtol = 3e-14``
(its hardmax continuation certifies the leader map after ``t ≈ 1``); error = ``max|z − z_ref| /
max|z_ref|`` at ``T``.

``sphere`` — post-LN, ``n = 16``, ``d = 3``, ``β = 1``, ``Q = K = V = I``, tokens uniform on the
sphere (seed 0), ``T = 10^4``; also ``verify`` at 20 digits (``precision="auto"``) against
plain float64 DOP853. Reference: ``simulate`` at 30 digits (arb), error = ``max|x − x_ref|``.

``cli`` — ``verify simulate FILE --json`` against a script that makes the library call it
makes (``load_instance_file`` + ``simulate``), each in a fresh process with ``simulate`` timed
from inside: the overhead is the difference of their times *outside* ``simulate`` (on the
README's examples, the sphere and the ``hd`` instance to ``T = 4``).

Optional dependencies (``pip install jax diffrax heyoka``, see ``benchmarks/README.md``): a tool
that is not installed is skipped and says so. JAX runs with one thread (``XLA_FLAGS``), as
NumPy's BLAS does here: every tool gets one core. heyoka on the 128×128 system needs ~10 GB and
minutes of compilation, so it only runs with ``--heyoka-hd``.

Run from the repository root: ``python benchmarks/anchors.py [hd|sphere|cli|all]``.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HD_INSTANCE = ROOT / "claims" / "examples" / "high-dimension.toml"
if __name__ == "__main__":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")  # see benchmarks/README.md, "BLAS threads"
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                       "intra_op_parallelism_threads=1")
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from verify.exact.inputs import as_float_array  # noqa: E402
from verify.flow.simulate import entry_differences, simulate  # noqa: E402
from verify.model import Instance, Model  # noqa: E402
from verify.model.instance_file import instance_to_toml, load_instance_file  # noqa: E402

RTOL, ATOL = 1e-10, 1e-12
ROW = "{:<50}{:>9}{:>10}{:>8}{:>8}{:>11}{:>11}"


CPU: dict = {}  # fn -> minimum CPU seconds of its calls in best_of (this process's own CPU)


def best_of(repeat: int, fn, name: str | None = None):
    """``(minimum wall seconds over repeat calls, last result)``; the minimum CPU seconds of
    this process over the same calls is left in ``CPU[name or fn]`` (on a loaded machine the
    wall time also counts the other jobs' share of the cores, the CPU time much less so)."""
    times, cpus, out = [], [], None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    CPU[fn if name is None else name] = min(cpus)
    return min(times), out


def row(name, seconds, extra="", steps="", reached="", error=None, second=None):
    err = "" if error is None else f"{error:.1e}"
    err2 = "" if second is None else f"{second:.1e}"
    print(ROW.format(name, f"{seconds:.3f}" if seconds is not None else "—", extra, steps,
                     reached, err, err2))


def optional(module: str):
    try:
        return __import__(module)
    except ImportError:
        print(f"  ({module} is not installed: skipped; pip install {module})")
        return None


# --------------------------------------------------------------------------- the baselines
def eigen_form(inst: Instance):
    """``(λ, Φ, w0, μ)`` of the rescaled field in eigen-coordinates."""
    lam, Phi = np.linalg.eigh(as_float_array(inst.model.V))
    return lam, Phi, as_float_array(inst.x0) @ Phi, float(lam.max())


def scipy_eigen(lam, w0, mu, T, max_steps=20_000, seconds=120.0):
    """SciPy DOP853 on ``ẇ = (P w − w)Λ``: ``(w at the last time reached, t, steps)``."""
    from scipy.integrate import DOP853

    shape = w0.shape

    def f(t, y):
        w = y.reshape(shape)
        Y = w * np.exp((lam - mu) * t)
        S = Y @ Y.T
        with np.errstate(over="ignore", under="ignore"):
            E = np.exp(np.exp(2 * mu * t) * (S - S.max(axis=1, keepdims=True)))
        return ((E @ w) / E.sum(axis=1, keepdims=True) - w).ravel() * np.tile(lam, shape[0])

    solver = DOP853(f, 0.0, w0.ravel(), T, rtol=RTOL, atol=ATOL)
    start, steps = time.perf_counter(), 0
    while solver.status == "running" and steps < max_steps \
            and time.perf_counter() - start < seconds:
        solver.step()
        steps += 1
    return solver.y.reshape(shape), solver.t, steps


def diffrax_eigen(lam, w0, mu, T, solver_name, max_steps=20_000, tolerances=None, target=None,
                  error=None):
    """diffrax on the same field: ``(compile+run s, run s, w(T) or None, steps)``.

    With ``tolerances`` (a list of ``rtol``, ``atol = rtol/100``, tightest last), ``target`` and
    ``error`` (``w(T) ↦`` its error): the first of them whose achieved error is at most
    ``target`` (equal *achieved* accuracy), one compilation for all; then also returns that
    ``rtol`` (``None`` if none reaches ``target``) and its error."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    lam_j = jnp.asarray(lam)

    def f(t, w, args):
        Y = w * jnp.exp((lam_j - mu) * t)
        S = Y @ Y.T
        E = jnp.exp(jnp.exp(2 * mu * t) * (S - S.max(axis=1, keepdims=True)))
        return ((E @ w) / E.sum(axis=1, keepdims=True) - w) * lam_j

    if tolerances is None:
        compiled, run, w, steps, ok = diffrax_solve(f, jnp.asarray(w0), T, solver_name,
                                                    max_steps)
        return compiled, run, w if ok else None, steps
    solve = diffrax_solver(f, T, solver_name, max_steps)
    compiled = None
    for rtol in tolerances:
        args = (jnp.asarray(w0), rtol, rtol / 100)
        if compiled is None:
            start = time.perf_counter()
            solve(*args)[0].block_until_ready()
            compiled = time.perf_counter() - start
        run, (w, steps, ok) = best_of(2, lambda a=args: [v.block_until_ready()
                                                          for v in solve(*a)],
                                      name=f"diffrax {solver_name} matched")
        w = np.asarray(w) if bool(ok) else None
        achieved = error(w) if w is not None else None
        if achieved is not None and achieved <= target:
            return compiled - run, run, w, int(steps), rtol, achieved
    return compiled - run, run, w, int(steps), None, achieved


def diffrax_solver(f, T, solver_name, max_steps):
    """The jitted ``(y0, rtol, atol) ↦ (y(T), steps, success)`` of ``diffeqsolve`` of ``f``
    from 0 to ``T`` (PID controller; the tolerances are traced: one compilation for all)."""
    import diffrax
    import jax

    solver = getattr(diffrax, solver_name)()

    @jax.jit
    def solve(y, rtol, atol):
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(f), solver, t0=0.0, t1=float(T), dt0=None, y0=y,
            stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
            saveat=diffrax.SaveAt(t1=True), max_steps=max_steps, throw=False)
        return sol.ys[-1], sol.stats["num_steps"], sol.result == diffrax.RESULTS.successful

    return solve


def diffrax_solve(f, y0, T, solver_name, max_steps, repeat=2):
    """``diffeqsolve`` of ``f`` from 0 to ``T`` (PID controller at RTOL, ATOL), jitted:
    ``(compile + first run s, best run s, y(T), steps, success)``."""
    solve = diffrax_solver(f, T, solver_name, max_steps)
    start = time.perf_counter()
    solve(y0, RTOL, ATOL)[0].block_until_ready()
    compiled = time.perf_counter() - start
    run, (y, steps, ok) = best_of(repeat, lambda: [v.block_until_ready()
                                                   for v in solve(y0, RTOL, ATOL)],
                                  name=f"diffrax {solver_name}")
    return compiled, run, np.asarray(y), int(steps), bool(ok)


# --------------------------------------------------------------------------- hd
def hd_linearised_case(repeat: int) -> None:
    """The must-show ratio with the linearised estimate of ``benchmarks/global_error.py`` in
    place of the reference run (a prototype, not wired into ``simulate``): in one process,
    alternating, the CPU of diffrax Tsit5 (same ``rtol``), of ``simulate`` to ``T = 4`` without
    its estimate, of the DOP853 run to its hardmax switch without and with the linearised
    estimate alongside (Heun, float32 products, DOP853's ``δ_k`` added entry by entry: the
    estimate's cost is the difference), and of the field round-off spot check (which the
    wiring would keep): their sum over Tsit5."""
    from global_error import switch_time

    from verify.flow.fields import EigenRescaledField
    from verify.flow.global_error import EigenLinearisation, LinearisedGlobalError
    from verify.flow.solvers import DOP853, StepController

    inst = load_instance_file(HD_INSTANCE).instance
    lam, _, w0, mu = eigen_form(inst)
    t_switch = switch_time(inst, 4.0)
    field = EigenRescaledField(inst.model, inst.n)
    w_start = field.to_w(np.asarray(inst.x0, dtype=float))

    def to_switch(observer=None):
        DOP853(observer=observer).segment(field, None, [0.0, t_switch], 1, 0.0, w_start,
                                          StepController(RTOL, ATOL))

    def with_estimate():
        estimate = LinearisedGlobalError(EigenLinearisation(field, np.float32), "heun")
        to_switch(lambda *step: estimate(*step, "entrywise"))

    parts = {"Tsit5": [], "run T = 4": [], "to the switch": [], "with the estimate": [],
             "spot check": []}
    for _ in range(repeat):
        diffrax_eigen(lam, w0, mu, 4.0, "Tsit5")
        parts["Tsit5"].append(CPU["diffrax Tsit5"])
        for name, fn in (("run T = 4", lambda: simulate(inst, 4.0, checkpoints=5,
                                                         error_estimate=False)),
                         ("to the switch", to_switch), ("with the estimate", with_estimate)):
            best_of(1, fn, name=name)
            parts[name].append(CPU[name])
        spot = estimate_parts(inst, 4.0, 5).split("field round-off spot check ")[1]
        parts["spot check"].append(float(spot.split(",")[0]))
    best = {name: min(values) for name, values in parts.items()}
    extra = best["with the estimate"] - best["to the switch"]
    total = best["run T = 4"] + extra + best["spot check"]
    print(f"\nhd-linearised (T = 4, CPU s, min of {repeat} alternating rounds, load "
          f"{os.getloadavg()[0]:.1f}): " + ", ".join(f"{k} {v:.2f}" for k, v in best.items()))
    print(f"  the linearised estimate ×{extra / best['to the switch']:.2f} the run to the "
          f"switch; run + estimate + spot check {total:.2f} = ×{total / best['Tsit5']:.2f} "
          f"diffrax Tsit5 (the run alone ×{best['run T = 4'] / best['Tsit5']:.2f})")


def hd_defect_case(repeat: int) -> None:
    """The must-show ratio with the defect-based estimate of ``benchmarks/global_error.py
    --defect`` in place of the reference run (a prototype, not wired into ``simulate``): in one
    process, alternating, the CPU of diffrax Tsit5 at the same ``rtol`` and at verify's achieved
    error (``rtol`` tightened through :data:`MATCH_RTOLS` in the first round, then that one), of
    ``simulate`` to ``T = 4`` without its estimate, of the DOP853 stepper to its hardmax switch
    without and with the estimate alongside (Heun propagation, float32 products; the defect's
    ``δ_k`` by Gauss 5 with the ``J²`` term: signed; "checked", step doubling where the
    expansion's last term exceeds 1/4 of the sum; its parts' absolute values added entry by
    entry, "triangle"; and by Gauss–Lobatto 6, signed), and of the field round-off spot check
    (which the wiring would keep): run + estimate + spot check over Tsit5. The error at
    ``T = 4`` is ``max|z − z_ref| / max|z_ref|`` against ``simulate`` at ``rtol = 3e-14``."""
    from global_error import switch_time

    from verify.flow.defect import DefectLocalError
    from verify.flow.dop853 import DOP853Stepper
    from verify.flow.fields import EigenRescaledField
    from verify.flow.global_error import EigenLinearisation, LinearisedGlobalError

    inst = load_instance_file(HD_INSTANCE).instance
    lam, Phi, w0, mu = eigen_form(inst)
    t_switch = switch_time(inst, 4.0)
    field = EigenRescaledField(inst.model, inst.n)
    w_start = field.to_w(np.asarray(inst.x0, dtype=float))
    z_ref = simulate(inst, 4.0, checkpoints=5, rtol=3e-14, atol=1e-16,
                     error_estimate=False).z[-1]
    scale = float(np.abs(z_ref).max())

    def rel(z):
        return float(np.abs(z - z_ref).max()) / scale

    def to_switch(observer=None):
        stepper = DOP853Stepper(field, 0.0, w_start, t_switch, RTOL, ATOL)
        while stepper.status == "running":
            stepper.step()
            if observer is not None:
                observer(stepper)

    def with_defect(variant: str):
        estimate = LinearisedGlobalError(EigenLinearisation(field, np.float32), "heun")
        rule, points = ("lobatto", 6) if variant == "lobatto6" else ("gauss", 5)
        defect = DefectLocalError(field, estimate.linearisation, rule, points, terms=2,
                                  converged=0.25 if variant == "checked" else None)

        def observe(stepper):
            delta = (sum(np.abs(p) for p in defect.parts(stepper)) if variant == "triangle"
                     else defect.local_error(stepper))
            K = stepper.K
            estimate(stepper.t_old, stepper.y_old, stepper.t, stepper.y, K[0].reshape(w0.shape),
                     K[-1].reshape(w0.shape), delta,
                     "entrywise" if variant == "triangle" else "signed")
        to_switch(observe)
        return defect

    variants = ("signed", "checked", "lobatto6", "triangle")
    parts = {"Tsit5": [], "Tsit5 matched": [], "run T = 4": [], "to the switch": [],
             **{f"with the defect, {variant}": [] for variant in variants}, "spot check": []}
    matched, errors = MATCH_RTOLS, {}
    for _ in range(repeat):
        diffrax_eigen(lam, w0, mu, 4.0, "Tsit5")
        parts["Tsit5"].append(CPU["diffrax Tsit5"])
        bare = simulate(inst, 4.0, checkpoints=5, error_estimate=False)
        errors["verify"] = rel(bare.z[-1])
        _, _, _, _, rtol, errors["Tsit5 matched"] = diffrax_eigen(
            lam, w0, mu, 4.0, "Tsit5", tolerances=matched, target=errors["verify"],
            error=lambda w: rel(w @ Phi.T))
        if rtol is not None:
            matched = (rtol,)
            parts["Tsit5 matched"].append(CPU["diffrax Tsit5 matched"])
        for name, fn in (("run T = 4", lambda: simulate(inst, 4.0, checkpoints=5,
                                                         error_estimate=False)),
                         ("to the switch", to_switch),
                         *((f"with the defect, {variant}", lambda v=variant: with_defect(v))
                           for variant in variants)):
            _, out = best_of(1, fn, name=name)
            parts[name].append(CPU[name])
            if name == "with the defect, checked":
                doubled = sum(out.fell_back)
        spot = estimate_parts(inst, 4.0, 5).split("field round-off spot check ")[1]
        parts["spot check"].append(float(spot.split(",")[0]))
    best = {name: min(values) for name, values in parts.items() if values}
    print(f"\nhd-defect (T = 4, CPU s, min of {repeat} alternating rounds, load "
          f"{os.getloadavg()[0]:.1f}): " + ", ".join(f"{k} {v:.2f}" for k, v in best.items()))
    print(f"  error at T = 4: verify {errors['verify']:.2g}; Tsit5 at rtol {matched[0]:g}: "
          f"{errors['Tsit5 matched']:.2g}" if len(matched) == 1 else
          "  Tsit5 reached verify's error at none of the rtols tried")
    print(f"  checked: {doubled} steps doubled (the expansion's last term > 1/4 of the sum)")
    for variant in variants:
        extra = best[f"with the defect, {variant}"] - best["to the switch"]
        total = best["run T = 4"] + extra + best["spot check"]
        equal = (f", ×{total / best['Tsit5 matched']:.2f} Tsit5 at equal achieved error"
                 if "Tsit5 matched" in best else "")
        print(f"  the defect estimate ({variant}) ×{extra / best['to the switch']:.2f} the run "
              f"to the switch; run + estimate + spot check {total:.2f} = "
              f"×{total / best['Tsit5']:.2f} diffrax Tsit5 at the same rtol{equal}")


#: Tsit5's tolerances tried, loosest first, to reach verify's achieved error at T = 4
MATCH_RTOLS = (1e-10, 5e-11, 2e-11, 1e-11, 5e-12, 2e-12, 1e-12)


def compiled_field_available() -> bool:
    """Is the compiled float64 field (verify.flow.compiled, the ``compiled`` extra) there?"""
    try:
        from verify.flow import compiled
    except ImportError:  # a tree from before the compiled field
        return False
    return compiled.available()


def _with_numpy_field(fn):
    """``fn()`` with the compiled field turned off (``VERIFY_COMPILED=0``)."""
    saved = os.environ.get("VERIFY_COMPILED")
    os.environ["VERIFY_COMPILED"] = "0"
    try:
        return fn()
    finally:
        if saved is None:
            del os.environ["VERIFY_COMPILED"]
        else:
            os.environ["VERIFY_COMPILED"] = saved


def _switch_record(traj) -> str:
    """How the hardmax switch of ``traj`` was confirmed against its reference run."""
    rejected = traj.stats.get("continuation_rejected")
    if rejected:
        return f"switch at t = {rejected['t_switch']:.3g} rejected, run again without it"
    legs = [leg for leg in (traj.continuation or {}).get("legs", []) if "state_error_seen" in leg]
    if not legs:
        return "no hardmax switch"
    leg, root = legs[0], math.sqrt(traj.d)  # per entry (the legs record 2-norms per row)
    tolerated = leg.get("state_error_tolerated")
    return (f"switch at t = {leg['t0']:.3g}: state error per entry assumed "
            f"{leg['state_error_assumed'] / root:.1e}, seen {leg['state_error_seen']:.1e}"
            + (f", tolerated {tolerated / root:.1e}" if tolerated is not None else ""))


#: the parts of a run's error estimate that estimate_parts times (functions of
#: verify.flow.simulate, wrapped for one call)
ESTIMATE_PARTS = {"reference run": "_reference_run",
                  "field round-off spot check": "_add_field_roundoff"}


def estimate_parts(inst: Instance, T: float, checkpoints: int) -> str:
    """Where the CPU of one more run with its error estimate goes: the reference run and the
    field round-off spot check timed from inside (CPU seconds of this process), the rest being
    the run itself and the estimate's bookkeeping."""
    import verify.flow.simulate as module

    spent = dict.fromkeys(ESTIMATE_PARTS, 0.0)
    saved = {part: getattr(module, name) for part, name in ESTIMATE_PARTS.items()}

    def timed(part):
        def call(*args, **kwargs):
            cpu = time.process_time()
            try:
                return saved[part](*args, **kwargs)
            finally:
                spent[part] += time.process_time() - cpu
        return call

    for part, name in ESTIMATE_PARTS.items():
        setattr(module, name, timed(part))
    try:
        cpu = time.process_time()
        traj = module.simulate(inst, T, checkpoints=checkpoints)
        total = time.process_time() - cpu
    finally:
        for part, name in ESTIMATE_PARTS.items():
            setattr(module, name, saved[part])
    ref = traj.reference["stats"]
    switch = (ref.get("continuation") or {}).get("t_switch")
    parts = ", ".join(f"{part} {seconds:.2f}" for part, seconds in spent.items())
    return (f"one more run with its estimate, CPU s: {total:.2f} = {parts}, the run and the "
            f"rest {total - sum(spent.values()):.2f}; the reference {ref['steps']} steps, "
            f"{ref['rhs_evals']} evaluations, its own switch to a certified leg at t = "
            + (f"{switch:.3g}" if switch is not None else "(none)"))


def hd_case(T: float, repeat: int, heyoka_hd: bool) -> None:
    CPU.pop("diffrax Tsit5 matched", None)  # only this case's own match (T = 15 has none)
    inst = load_instance_file(HD_INSTANCE).instance
    lam, Phi, w0, mu = eigen_form(inst)
    checkpoints = int(T) + 1
    ref = simulate(inst, T, checkpoints=checkpoints, rtol=3e-14, atol=1e-16,
                   error_estimate=False)
    z_ref = ref.z[-1]
    scale = float(np.abs(z_ref).max())
    # max|z| is dominated by the coordinates along negative eigen-directions, which diverge
    # (~1e13 at T = 15) and hide O(1) errors of the clustering directions: the error is also
    # taken on the positive eigen-directions alone (where the leaders decide the limits)
    up = lam > 0
    w_ref = (z_ref @ Phi)[:, up]
    up_scale = float(np.abs(w_ref).max())

    def rel(z):
        return float(np.abs(z - z_ref).max()) / scale

    def rel_up(z):
        return float(np.abs((z @ Phi)[:, up] - w_ref).max()) / up_scale

    print(f"\nhd: n = d = 128, T = {T:g} (reference: simulate rtol 3e-14, "
          f"{ref.stats['steps']} steps)")
    print(ROW.format("method", "wall s", "compile s", "steps", "t", "rel err", "on λ > 0"))
    full_s, full = best_of(repeat, lambda: simulate(inst, T, checkpoints=checkpoints),
                           name="hd+est")
    bare_s, bare = best_of(repeat, lambda: simulate(inst, T, checkpoints=checkpoints,
                                                    error_estimate=False), name="hd")
    row("verify simulate, with its error estimate", full_s, "", full.stats["steps"],
        f"{float(full.t[-1]):g}", rel(full.z[-1]), rel_up(full.z[-1]))
    row("verify simulate, no error estimate", bare_s, "", bare.stats["steps"],
        f"{float(bare.t[-1]):g}", rel(bare.z[-1]), rel_up(bare.z[-1]))
    print(f"  (verify's own estimate: {full.error_estimate / scale:.1e} relative; "
          f"{_switch_record(full)})")
    print(f"  ({estimate_parts(inst, T, checkpoints)})")
    times = {"verify+est": full_s, "verify": bare_s}
    if compiled_field_available():  # the same two runs with the NumPy field (VERIFY_COMPILED=0)
        numpy_s, numpy_full = _with_numpy_field(lambda: best_of(repeat, lambda: simulate(
            inst, T, checkpoints=checkpoints), name="hd+est numpy"))
        numpy_bare_s, numpy_bare = _with_numpy_field(lambda: best_of(repeat, lambda: simulate(
            inst, T, checkpoints=checkpoints, error_estimate=False), name="hd numpy"))
        row("verify simulate, with its estimate, NumPy field", numpy_s, "",
            numpy_full.stats["steps"], f"{float(numpy_full.t[-1]):g}", rel(numpy_full.z[-1]),
            rel_up(numpy_full.z[-1]))
        row("verify simulate, no estimate, NumPy field", numpy_bare_s, "",
            numpy_bare.stats["steps"], f"{float(numpy_bare.t[-1]):g}", rel(numpy_bare.z[-1]),
            rel_up(numpy_bare.z[-1]))
        print(f"  (NumPy field: estimate {numpy_full.error_estimate / scale:.1e} relative; "
              f"{_switch_record(numpy_full)}; compiled / NumPy field ×"
              f"{CPU['hd+est'] / CPU['hd+est numpy']:.2f} CPU with the estimate, ×"
              f"{CPU['hd'] / CPU['hd numpy']:.2f} without)")
    sp_s, (w, reached, steps) = best_of(1 if T > 5 else repeat,
                                        lambda: scipy_eigen(lam, w0, mu, T))
    ok = reached >= T
    row("SciPy DOP853, eigen-coordinates", sp_s, "", steps, f"{reached:.3g}",
        rel(w @ Phi.T) if ok else None, rel_up(w @ Phi.T) if ok else None)
    times["scipy"] = sp_s
    if optional("diffrax") is not None:
        for name in ("Tsit5", "Dopri8"):
            compiled, run, w, steps = diffrax_eigen(lam, w0, mu, T, name)
            row(f"diffrax {name}, eigen-coordinates", run, f"{compiled - run:.2f}", steps,
                f"{T:g}" if w is not None else "failed",
                rel(w @ Phi.T) if w is not None else None,
                rel_up(w @ Phi.T) if w is not None else None)
            times[name] = run
        if T <= 5:  # Tsit5 held to verify's achieved error (its error at RTOL is larger)
            target = rel(full.z[-1])
            compiled, run, w, steps, matched, achieved = diffrax_eigen(
                lam, w0, mu, T, "Tsit5", tolerances=MATCH_RTOLS, target=target,
                error=lambda w: rel(w @ Phi.T))
            label = f"rtol {matched:g}" if matched is not None else "none of the rtols"
            row(f"diffrax Tsit5 at verify's error ({label})", run, f"{compiled:.2f}", steps,
                f"{T:g}" if w is not None else "failed", achieved,
                rel_up(w @ Phi.T) if w is not None else None)
    if heyoka_hd and optional("heyoka") is not None:
        compiled, run, z = heyoka_hd_run(lam, w0, mu, T, Phi)
        row("heyoka Taylor, eigen-coordinates (compact mode)", run, f"{compiled:.1f}", "",
            f"{T:g}", rel(z), rel_up(z))
    if "Tsit5" in times:
        tsit5 = CPU["diffrax Tsit5"]
        print(f"  verify with its estimate / diffrax Tsit5: ×{full_s / times['Tsit5']:.2f} wall, "
              f"×{CPU['hd+est'] / tsit5:.2f} CPU; without: ×{bare_s / times['Tsit5']:.2f} wall, "
              f"×{CPU['hd'] / tsit5:.2f} CPU; / SciPy DOP853: ×{full_s / sp_s:.2f}")
        if "diffrax Tsit5 matched" in CPU:
            matched = CPU["diffrax Tsit5 matched"]
            print(f"  at equal achieved error (Tsit5 tightened to verify's): with its estimate "
                  f"×{CPU['hd+est'] / matched:.2f} CPU, without ×{CPU['hd'] / matched:.2f} CPU")
    print(f"  verify's estimate: reference {full.reference['backend']} at rtol "
          f"{full.reference['rtol']:g}, {full.reference['stats']['steps']} steps (the run "
          f"{full.stats['steps']}); with / without the estimate ×{CPU['hd+est'] / CPU['hd']:.2f} "
          "CPU")


def heyoka_hd_run(lam, w0, mu, T, Phi):
    """heyoka on the eigen-coordinate field (compact mode; minutes and ~10 GB)."""
    import heyoka as hy

    n, d = w0.shape
    w = [[hy.make_vars(f"w_{i}_{k}") for k in range(d)] for i in range(n)]
    t = hy.time
    s = [hy.exp(float(lam[k] - mu) * t) for k in range(d)]
    scale = hy.exp(2 * mu * t)
    S = [[hy.sum([w[i][k] * w[j][k] * s[k] * s[k] for k in range(d)]) for j in range(n)]
         for i in range(n)]
    system = []
    for i in range(n):
        E = [hy.exp(scale * (S[i][j] - S[i][i])) for j in range(n)]
        total = hy.sum(E)
        for k in range(d):
            system.append((w[i][k], float(lam[k]) * (hy.sum([E[j] * w[j][k] for j in range(n)])
                                                     / total - w[i][k])))
    start = time.perf_counter()
    ta = hy.taylor_adaptive(system, w0.ravel().tolist(), tol=RTOL, compact_mode=True)
    compiled = time.perf_counter() - start
    start = time.perf_counter()
    ta.propagate_until(float(T))
    return compiled, time.perf_counter() - start, ta.state.reshape(n, d) @ Phi.T


# --------------------------------------------------------------------------- sphere
def sphere_instance(n=16, d=3, seed=0) -> Instance:
    g = np.random.default_rng(seed).standard_normal((n, d))
    x0 = g / np.linalg.norm(g, axis=1, keepdims=True)
    return Instance(Model(V=np.eye(d, dtype=int).tolist(), form="x", normalisation="sphere"),
                    x0.tolist(), name="sphere")


def sphere_field_numpy(n, d):
    def f(t, y):
        x = y.reshape(n, d)
        S = x @ x.T
        E = np.exp(S - S.max(axis=1, keepdims=True))
        m = (E @ x) / E.sum(axis=1, keepdims=True)
        return (m - np.sum(m * x, axis=1, keepdims=True) / np.sum(x * x, axis=1,
                                                                  keepdims=True) * x).ravel()
    return f


def diffrax_sphere(x0, T, solver_name):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def f(t, x, args):
        S = x @ x.T
        E = jnp.exp(S - S.max(axis=1, keepdims=True))
        m = (E @ x) / E.sum(axis=1, keepdims=True)
        return m - jnp.sum(m * x, axis=1, keepdims=True) / jnp.sum(x * x, axis=1,
                                                                  keepdims=True) * x

    compiled, run, x, steps, _ = diffrax_solve(f, jnp.asarray(x0), T, solver_name, 1_000_000,
                                               repeat=3)
    return compiled, run, x, steps


def heyoka_sphere(x0, T, compact: bool = False):
    """heyoka's Taylor integrator on the sphere's field: ``(compile s, best run s, x(T),
    steps)``. ``compact``: heyoka's compact mode (the expression evaluated in loops rather
    than unrolled: compiles in a fraction of the time, each step costs more)."""
    import heyoka as hy

    n, d = x0.shape
    x = [[hy.make_vars(f"x_{i}_{a}") for a in range(d)] for i in range(n)]
    system = []
    for i in range(n):
        E = [hy.exp(hy.sum([x[i][a] * x[j][a] for a in range(d)])) for j in range(n)]
        total = hy.sum(E)
        m = [hy.sum([E[j] * x[j][a] for j in range(n)]) / total for a in range(d)]
        radial = hy.sum([m[a] * x[i][a] for a in range(d)]) / hy.sum(
            [x[i][a] * x[i][a] for a in range(d)])
        system += [(x[i][a], m[a] - radial * x[i][a]) for a in range(d)]
    start = time.perf_counter()
    ta = hy.taylor_adaptive(system, x0.ravel().tolist(), tol=RTOL, compact_mode=compact)
    compiled = time.perf_counter() - start
    state0 = x0.ravel().copy()

    def run():
        ta.time, ta.state[:] = 0.0, state0
        return ta.propagate_until(float(T))

    seconds, outcome = best_of(3, run, name="heyoka")
    return compiled, seconds, ta.state.reshape(n, d).copy(), int(outcome[3])


def sphere_case(repeat: int, heyoka: bool = True, heyoka_compact: bool = False) -> None:
    from scipy.integrate import solve_ivp

    inst = sphere_instance()
    x0 = as_float_array(inst.x0)
    n, d = x0.shape
    T = 10_000
    ref = simulate(inst, T, precision=30, error_estimate=False, checkpoints=11)
    x_ref = ref.state[-1]

    def err(x):
        return float(np.abs(np.asarray(x) - x_ref).max())

    print(f"\nsphere: n = 16, d = 3, β = 1, Q = K = V = I, T = 10^4 (reference: simulate at "
          f"30 digits, frozen at consensus t = {ref.continuation['t_switch']:.3g})")
    print(ROW.format("method", "wall s", "compile s", "steps", "t", "abs err", ""))
    full_s, full = best_of(repeat, lambda: simulate(inst, T, checkpoints=11), name="sphere+est")
    bare_s, bare = best_of(repeat, lambda: simulate(inst, T, checkpoints=11,
                                                    error_estimate=False))
    row("verify simulate, with its error estimate", full_s, "", full.stats["steps"], "1e4",
        err(full.state[-1]))
    row("verify simulate, no error estimate", bare_s, "", bare.stats["steps"], "1e4",
        err(bare.state[-1]))
    print(f"  (verify's own estimate: {full.error_estimate:.1e}; reference "
          f"{full.reference['backend']} at rtol {full.reference['rtol']:g}, "
          f"{full.reference['stats'].get('rhs_evals')} evaluations)")
    f = sphere_field_numpy(n, d)
    sp_s, sol = best_of(repeat, lambda: solve_ivp(f, (0, T), x0.ravel(), method="DOP853",
                                                  rtol=RTOL, atol=ATOL))
    row("SciPy solve_ivp DOP853", sp_s, "", sol.t.size - 1, "1e4",
        err(sol.y[:, -1].reshape(n, d)))
    times = {}
    if optional("diffrax") is not None:
        for name in ("Tsit5", "Dopri8"):
            compiled, run, x, steps = diffrax_sphere(x0, T, name)
            row(f"diffrax {name}", run, f"{compiled - run:.2f}", steps, "1e4", err(x))
            times[name] = run
    if not heyoka:
        print("  (heyoka skipped: --no-heyoka)")
    elif optional("heyoka") is not None:
        compiled, run, x, steps = heyoka_sphere(x0, T, compact=heyoka_compact)
        row(f"heyoka Taylor (tol 1e-10{', compact mode' * heyoka_compact})", run,
            f"{compiled:.2f}", steps, "1e4", err(x))
        print(f"  (heyoka's run: {CPU['heyoka']:.3f} CPU s, verify with its estimate "
              f"×{CPU['sphere+est'] / CPU['heyoka']:.1f} that; its compilation is paid once "
              "per process)")
    if times:
        fastest = min(times, key=times.get)
        print(f"  verify with its estimate / diffrax {fastest}: "
              f"×{full_s / times[fastest]:.2f} wall, "
              f"×{CPU['sphere+est'] / CPU['diffrax ' + fastest]:.2f} CPU; / SciPy DOP853: "
              f"×{full_s / sp_s:.2f}")
    def plain():
        return solve_ivp(f, (0, T), x0.ravel(), method="DOP853", rtol=RTOL, atol=ATOL)

    def digits20():
        return simulate(inst, T, precision="auto", checkpoints=11)

    sp_s, _ = best_of(repeat, plain)  # again, next to the 20-digit run (the load moves)
    auto_s, auto = best_of(repeat, digits20)
    # its error beyond float64: the difference to the 30-digit reference at the reference's bits
    deep = float(entry_differences(auto, ref, ref.precision["bits"])[-1].max())
    row("verify simulate, 20 digits (auto), with estimate", auto_s, "", auto.stats["steps"],
        "1e4", deep)
    print(f"  20 digits with the estimate / plain float64 DOP853: ×{auto_s / sp_s:.1f} wall, "
          f"×{CPU[digits20] / CPU[plain]:.1f} CPU ({CPU[digits20]:.2f} / {CPU[plain]:.2f} s; "
          f"its own estimate {auto.error_estimate:.1e}; the reference has 30 digits)")
    ref_stats, cap = auto.reference["stats"], (auto.continuation or {}).get("t_switch")
    print(f"  (the 20-digit run: {auto.stats['rhs_evals']} evaluations at "
          f"{auto.precision['bits']} bits; its estimate's reference: {ref_stats['rhs_evals']} at "
          f"{auto.reference['bits']} bits, rtol {auto.reference['rtol']:.1e}; both frozen at the "
          f"certified consensus t = {cap if cap is None else f'{cap:.3g}'})")


# --------------------------------------------------------------------------- cli
# Both processes below run with `simulate` wrapped in a timer, so each says how much of its own
# time was spent inside the library call and how much outside it (interpreter, imports, input
# checks, the summary, the output, waiting for the spectral worker). The overhead of the command
# line is the difference of the two *outside* times: it does not subtract two runs of the
# integration itself, whose own spread on a loaded machine is larger than a second.
_TIMED = r"""
import atexit, os, resource, sys, time
import verify.flow.simulate as _module
_inner, _spent = _module.simulate, [0.0, 0.0]
def _timed(*args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        return _inner(*args, **kwargs)
    finally:
        _spent[0] += time.perf_counter() - wall
        _spent[1] += time.process_time() - cpu
_module.simulate = _timed
def _report():
    own = resource.getrusage(resource.RUSAGE_SELF)
    worker = resource.getrusage(resource.RUSAGE_CHILDREN)
    os.write(2, ("\n@timing %r %r %r %r\n" % (
        _spent[0], _spent[1], own.ru_utime + own.ru_stime,
        worker.ru_utime + worker.ru_stime)).encode())
atexit.register(_report)
"""
_CLI = _TIMED + r"""
from verify.cli import main
sys.exit(main(["simulate"] + sys.argv[1:]))
"""
_LIBRARY = _TIMED + r"""
from verify.model.instance_file import load_instance_file
loaded = load_instance_file(sys.argv[1])
settings = {k: v for k, v in loaded.simulation.items() if k in ("checkpoints", "precision", "rtol")}
_module.simulate(loaded.instance, sys.argv[3], **settings)
"""


def timed_process(code: str, args: list[str]) -> dict:
    """Run ``python -c code args`` (``code`` is :data:`_CLI` or :data:`_LIBRARY`): its wall
    seconds, the wall and CPU seconds spent inside ``simulate``, its own CPU seconds and its
    children's (the spectral worker's)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    wall = time.perf_counter() - start
    lines = [line for line in done.stderr.splitlines() if line.startswith("@timing ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{args[0]}: rc {done.returncode}: {done.stderr[-400:]}")
    call_wall, call_cpu, own_cpu, worker_cpu = map(float, lines[-1].split()[1:])
    return {"wall": wall, "call_wall": call_wall, "call_cpu": call_cpu,
            "outside_wall": wall - call_wall, "outside_cpu": own_cpu - call_cpu,
            "worker_cpu": worker_cpu}


def cli_instances(tmp: Path) -> list[tuple[Path, str]]:
    """The README's examples at their horizons, the ``hd`` run to ``T = 4`` and the sphere."""
    sphere = tmp / "sphere.toml"
    sphere.write_text(instance_to_toml(sphere_instance(), {"horizon": "10000"}))
    examples = ROOT / "claims" / "examples"
    return ([(path, str(load_instance_file(path).simulation.get("horizon", 10)))
             for path in sorted(examples.glob("*.toml")) if path != HD_INSTANCE]
            + [(sphere, "10000"), (HD_INSTANCE, "4")])


def cli_case(repeat: int) -> None:
    print("\ncli: `verify simulate FILE --json` against a script making the library call it "
          "makes (load_instance_file + simulate), each in a fresh process; seconds *outside* "
          "simulate in each, minimum of --repeat")
    print(f"{'instance':<34}{'simulate s':>11}{'script':>9}{'verify':>9}{'overhead':>10}"
          f"{'script':>9}{'verify':>9}{'overhead':>10}{'worker':>8}")
    print(f"{'':<34}{'(wall)':>11}{'outside, wall s':>28}{'outside, CPU s':>28}{'CPU s':>8}")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for path, horizon in cli_instances(Path(tmp)):
            cli = [timed_process(_CLI, [str(path), "--json", "--horizon", horizon])
                   for _ in range(repeat)]
            lib = [timed_process(_LIBRARY, [str(path), "--horizon", horizon])
                   for _ in range(repeat)]

            def best(runs, key):
                return min(run[key] for run in runs)

            wall = best(cli, "outside_wall") - best(lib, "outside_wall")
            cpu = best(cli, "outside_cpu") - best(lib, "outside_cpu")
            worst = max(worst, wall)
            print(f"{path.name + ' (T = ' + horizon + ')':<34}{best(cli, 'call_wall'):>11.2f}"
                  f"{best(lib, 'outside_wall'):>9.2f}{best(cli, 'outside_wall'):>9.2f}"
                  f"{wall:>10.2f}{best(lib, 'outside_cpu'):>9.2f}{best(cli, 'outside_cpu'):>9.2f}"
                  f"{cpu:>10.2f}{best(cli, 'worker_cpu'):>8.2f}")
    print(f"  largest overhead (wall): {worst:.2f} s; load average now "
          f"{os.getloadavg()[0]:.1f}. `outside` is the process's time less the time inside "
          "simulate: interpreter, imports, input checks, the summary, the output and any wait "
          "for the worker that computes the summary's exact spectral class beside the run.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", nargs="?", default="all", choices=["hd", "sphere", "cli", "all",
                                                                "hd-linearised", "hd-defect"])
    parser.add_argument("--repeat", type=int, default=3, help="timed repeats (minimum kept)")
    parser.add_argument("--heyoka-hd", action="store_true",
                        help="also run heyoka on the 128×128 system (~10 GB, minutes)")
    parser.add_argument("--no-heyoka", action="store_true",
                        help="skip heyoka on the sphere too (its compilation of the 16-token "
                             "system takes minutes, far more on a loaded machine)")
    parser.add_argument("--heyoka-compact", action="store_true",
                        help="heyoka's compact mode on the sphere (compiles in seconds instead "
                             "of CPU minutes; each step costs more)")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"rtol {RTOL:g}, atol {ATOL:g}")
    if args.part in ("hd", "all"):
        hd_case(4.0, args.repeat, args.heyoka_hd)
        hd_case(15.0, 1, False)
    if args.part == "hd-linearised":
        hd_linearised_case(args.repeat)
    if args.part == "hd-defect":
        hd_defect_case(args.repeat)
    if args.part in ("sphere", "all"):
        sphere_case(args.repeat, heyoka=not args.no_heyoka, heyoka_compact=args.heyoka_compact)
    if args.part in ("cli", "all"):
        cli_case(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
