r"""Coverage of the error estimate: how far the true error of a run exceeds its estimate.

Every decision of :mod:`verify.judge` compares a margin with an error *estimate*: the distance of
the run to its reference run (:func:`verify.flow.simulate.simulate`, ``Trajectory.error``). An
estimate is not a bound until its coverage is measured. This script measures it on public instances
drawn across the model family and prints, per variant, the distribution of

.. math:: r = \max_{k, i} \frac{|z_i(t_k) - z_i^{\mathrm{true}}(t_k)|_\infty}
                              {e_{k,i} + 4u\,\max_j |z_j(t_k)|_\infty}

(the true error over the estimate, worst checkpoint and token; :math:`u` the unit round-off of the
run's precision, the rounding every quantity's error adds), and the same ratio for the scaled
scores :math:`\tilde S_{ij}` that certify the hardmax graph (their estimate is
``Trajectory.score_error`` plus 4 ulp of the largest score). The truth is an **independent
route**: the same instance integrated at **twice the digits** of the run (32 digits for float64,
twice the working digits for ``arb``), by the extrapolation integrator in ``arb``, without the
hardmax continuation or the symmetry projection.

The safety factor of :data:`verify.numerics.ESTIMATE_SAFETY` is chosen from this table: the worst
ratio observed times a stated margin (:data:`MARGIN`); the script prints both and says whether
the library's value covers them.

Usage::

    python benchmarks/error_coverage.py                # 247 instances (~1 h on 2 idle cores)
    python benchmarks/error_coverage.py --instances 65 --variants sphere,pre-LN   # one family
    python benchmarks/error_coverage.py --quick        # 24 instances (smoke test)
    python benchmarks/error_coverage.py --workers 2 --json coverage.json
    python benchmarks/error_coverage.py --instances 260 --variants consensus --reference arb
    python benchmarks/error_coverage.py --set consensus --instances 24   # runs that freeze
    python benchmarks/error_coverage.py --set consensus --reference-integrated --checkpoints 121

Variants: plain ``z`` and ``x`` forms with ``V`` general, symmetric and ``λI``; tokens on the
sphere with softmax (SA) and unnormalised (USA) attention; pre-LN; causal masks; several ``β``;
``n`` up to 32; float64 runs (with the ``arb`` reference, and with the float64 reference that
systems with ``n²d > 20 000`` get, forced here on small systems) and ``arb`` runs. Float64 runs
with bounded scores (sphere, pre-LN) get the float64 reference too
(:func:`verify.flow.precision_policy.float64_reference_suffices`); two variants probe it where it
could fail: tokens near an unstable antipodal configuration of the sphere (the rounding of the
data amplified ``~10^6`` times before they leave it) and long runs that freeze at a certified
consensus. ``--reference arb`` checks every float64 run against the ``arb`` reference instead
(what runs whose scores grow, or with several heads, get): the same draws, the other route.
Where a run or its reference froze at a certified consensus, the table is followed by the
coverage at the checkpoints after the freeze (``--set consensus`` draws runs that do;
``--reference-integrated`` makes the reference integrate on instead of inheriting the run's
freeze, so that dense ``--checkpoints`` fall where only the run repeats its state).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction

import numpy as np

#: κ = worst observed ratio × MARGIN (the worst case over a finite sample is not the worst case).
MARGIN = 2.0


# --------------------------------------------------------------------------- instances
def _rational(rng, shape, scale=1.0, denominator=64):
    """Entries ``k/denominator`` uniform in ``[-scale, scale]`` (exact inputs, as in claims)."""
    values = np.round(rng.uniform(-scale, scale, size=shape) * denominator).astype(int)
    return [[str(Fraction(int(v), denominator)) for v in row] for row in np.atleast_2d(values)]


def _sphere_tokens(rng, n, d):
    """Points exactly on the unit sphere (rational, by inverse stereographic projection)."""
    from verify.claim._distributions import rational_sphere_point

    return [[str(v) for v in rational_sphere_point(
        [Fraction(int(round(u * 32)), 32) for u in rng.normal(size=d - 1)])] for _ in range(n)]


def _antipodal_tokens(rng, n, d, spread=Fraction(1, 10 ** 6)):
    """Two tight groups of points exactly on the unit sphere, near ``p`` and near ``−p``: the
    groups contract first, then sit near an *unstable* antipodal configuration and escape from
    it after a time ``~ log(1/spread)`` — where the rounding of the initial data to float64 is
    amplified ``~1/spread`` times (no exact symmetry: the offsets are drawn)."""
    from verify.claim._distributions import rational_sphere_point

    centre = [Fraction(int(round(u * 32)), 32) for u in rng.normal(size=d - 1)]
    tokens = []
    for i in range(n):
        offset = [c + spread * Fraction(int(rng.integers(-64, 65)), 64) for c in centre]
        point = rational_sphere_point(offset)
        tokens.append([str(v if i % 2 == 0 else -v) for v in point])
    return tokens


def _matrix(rng, d, kind):
    if kind == "general":
        return _rational(rng, (d, d))
    if kind == "symmetric":
        M = np.array([[Fraction(v) for v in row] for row in _rational(rng, (d, d))])
        return [[str(v) for v in row] for row in (M @ M.T / d)]
    lam = Fraction(int(rng.choice([1, 2, 3])), 2)                                # λ I
    return [[str(lam if a == b else 0) for b in range(d)] for a in range(d)]


def draw(k: int, variants: list | None = None) -> dict:
    """The ``k``-th instance of the benchmark (deterministic): a dict of plain data, from
    :data:`VARIANTS` (default) or another list of them (:data:`GROWTH_VARIANTS`)."""
    rng = np.random.default_rng(20_000 + k)
    variants = VARIANTS if variants is None else variants
    name, spec = variants[k % len(variants)]
    n = int(rng.integers(spec["n"][0], spec["n"][1] + 1))
    d = int(rng.integers(spec["d"][0], spec["d"][1] + 1))
    V = _matrix(rng, d, spec.get("V", ["general", "symmetric", "lambdaI"][k // len(variants) % 3]))
    beta = str(spec.get("beta", [1, 2, "1/2"][k // (3 * len(variants)) % 3]))
    sphere = spec.get("normalisation") in ("sphere", "pre-ln")
    if spec.get("tokens") == "antipodal":
        x0 = _antipodal_tokens(rng, n, d)
    else:
        x0 = _sphere_tokens(rng, n, d) if sphere else _rational(rng, (n, d))
    model = {"V": V, "beta": beta, "form": spec.get("form", "z"),
             "attention": spec.get("attention", "softmax"), "mask": spec.get("mask", "full"),
             "normalisation": spec.get("normalisation", "none")}
    if spec.get("heads"):  # several heads, V_h = c_h I, Q_h and K_h drawn
        model["heads"] = [{"V": _matrix(rng, d, "lambdaI"), "Q": _rational(rng, (d, d)),
                           "K": _rational(rng, (d, d))} for _ in range(spec["heads"])]
        del model["V"]
    if spec.get("mlp"):
        turn = k // len(variants)  # W and the activation cycle over the draws of the variant
        model["mlp"] = {"W": _matrix(rng, d, "general" if turn % 2 else "lambdaI"),
                        "activation": "relu" if turn // 2 % 2 else "tanh"}
    if model["form"] == "z" and model["normalisation"] != "none":
        model["form"] = "x"
    return {"k": k, "variant": name, "n": n, "d": d, "model": model, "x0": x0,
            "horizon": spec["T"], "precision": spec.get("precision", "float64"),
            "float64_reference": spec.get("float64_reference", False)}


#: name -> ranges and variant; V cycles through general / symmetric / λI, β through 1, 2, 1/2
VARIANTS = [
    ("z, float64", {"n": (3, 8), "d": (2, 3), "T": 4}),
    ("z long (continuation), float64", {"n": (3, 6), "d": (2, 3), "T": 8}),
    ("x, float64", {"n": (3, 8), "d": (2, 3), "T": 2, "form": "x"}),
    ("sphere SA, float64", {"n": (3, 8), "d": (2, 3), "T": 6, "normalisation": "sphere",
                            "V": "lambdaI"}),
    ("sphere USA, float64", {"n": (3, 8), "d": (2, 3), "T": 4, "normalisation": "sphere",
                             "attention": "unnormalised"}),
    ("pre-LN, float64", {"n": (3, 8), "d": (2, 3), "T": 3, "normalisation": "pre-ln"}),
    ("causal mask, float64", {"n": (3, 8), "d": (2, 3), "T": 4, "mask": "causal", "form": "x"}),
    ("n up to 32, float64", {"n": (12, 32), "d": (2, 3), "T": 3}),
    ("float64 reference, float64", {"n": (3, 8), "d": (2, 3), "T": 3,
                                    "float64_reference": True}),
    ("sphere near a saddle, float64", {"n": (2, 4), "d": (2, 3), "T": 40,
                                       "normalisation": "sphere", "V": "lambdaI",
                                       "tokens": "antipodal"}),
    ("sphere SA long (consensus), float64", {"n": (3, 8), "d": (2, 3), "T": 60,
                                             "normalisation": "sphere", "V": "lambdaI"}),
    ("z, arb", {"n": (2, 5), "d": (2, 2), "T": 3, "precision": "auto"}),
    ("sphere SA, arb", {"n": (2, 5), "d": (2, 3), "T": 3, "normalisation": "sphere",
                        "precision": "auto"}),
]


#: longer horizons and an MLP after the attention (``--set growth``): the runs whose scores
#: grow most, where a float64 reference could miss a cancellation the ``arb`` one sees
GROWTH_VARIANTS = [
    ("z very long (continuation), float64", {"n": (3, 6), "d": (2, 3), "T": 16}),
    ("z, V = λI, long, float64", {"n": (3, 8), "d": (2, 3), "T": 12, "V": "lambdaI"}),
    ("x long, float64", {"n": (3, 8), "d": (2, 3), "T": 6, "form": "x"}),
    ("MLP after the attention, float64", {"n": (3, 6), "d": (2, 2), "T": 4.5, "mlp": True}),
]


#: runs that end frozen at a certified consensus (``--set consensus``): the sphere with
#: ``V = λI`` and with two heads ``V_h = c_h I`` (any ``Q_h, K_h``), long horizons, where the
#: estimate adds the consensus cap's chord at the checkpoints after a freeze
CONSENSUS_VARIANTS = [
    ("sphere SA longer (consensus), float64", {"n": (3, 12), "d": (2, 4), "T": 150,
                                               "normalisation": "sphere", "V": "lambdaI"}),
    ("sphere 2 heads long (consensus), float64", {"n": (3, 8), "d": (2, 4), "T": 150,
                                                  "normalisation": "sphere", "heads": 2}),
]

#: the same in ``arb`` (``--set consensus-arb``): 20 digits, whose cap fires since its centre is
#: computed in balls (the truth at 40 digits: ~10 CPU s a draw)
CONSENSUS_ARB_VARIANTS = [
    ("sphere SA long (consensus), arb", {"n": (3, 6), "d": (2, 3), "T": 80,
                                         "normalisation": "sphere", "V": "lambdaI",
                                         "precision": "auto"}),
]

SETS = {"paper": VARIANTS, "growth": GROWTH_VARIANTS, "consensus": CONSENSUS_VARIANTS,
        "consensus-arb": CONSENSUS_ARB_VARIANTS}


def build(data: dict):
    from verify.model import Instance, Model

    return Instance(Model(**data["model"]), data["x0"], name=f"coverage#{data['k']}")


# --------------------------------------------------------------------------- one instance
def measure(data: dict, reference: str | tuple[str, ...] = "policy",
            reference_rtols: tuple[float | None, ...] = (None,),
            inherit: bool = True, checkpoints: int = 7) -> list[dict]:
    """Run, reference and truth for one instance; the worst ratios (``None`` when the run or
    the truth failed: the row says why). ``reference``: the reference of float64 runs, one or
    several of ``"policy"`` (the library's choice), ``"arb"`` (the ``arb`` reference whatever
    :func:`~verify.flow.precision_policy.float64_reference_suffices` says) and ``"float64"``
    (the float64 twin reference plus the ``arb`` spot check of the field's round-off, whatever
    it says); ``data["float64_reference"]`` still forces the float64 one. One row per route and
    entry of ``reference_rtols``: the run with
    :data:`~verify.flow.precision_policy.ARB_REFERENCE_RTOL` set to it (``None``: the
    library's), all against one truth. ``inherit=False``: a reference run integrated to the
    horizon even where the run froze at a certified consensus (it may freeze later on its own),
    instead of inheriting the run's freeze (``--reference-integrated``). ``checkpoints``: how
    many, equally spaced from 0 to the horizon."""
    import verify.flow.precision_policy as policy
    import verify.flow.simulate as simulate_module
    from verify.flow.simulate import simulate

    if not inherit:
        simulate_module._reference_run = _integrated_reference

    instance = build(data)
    T, times = data["horizon"], checkpoints
    row = {key: data[key] for key in ("k", "variant", "n", "d", "precision")}
    row["model"] = {key: data["model"][key] for key in ("form", "attention", "mask",
                                                        "normalisation", "beta")}
    row["mu_T"] = round(policy.score_growth_rate(instance.model) * T, 3)
    row["nu_T"] = round(policy.rescaled_growth_rate(instance.model) * T, 3)
    row["policy_route"] = ("float64" if data["precision"] == "float64"
                           and policy.float64_reference_suffices(instance, T) else "arb")
    suffices, library_rtol = policy.float64_reference_suffices, policy.ARB_REFERENCE_RTOL
    routes = (reference,) if isinstance(reference, str) else tuple(reference)
    runs = []
    for route in routes:
        for value in reference_rtols:
            started = time.process_time()
            if data["float64_reference"]:
                policy.ARB_REFERENCE_LIMIT = 0
            elif route in ("arb", "float64"):
                policy.float64_reference_suffices = functools.partial(_forced, route == "float64")
            policy.ARB_REFERENCE_RTOL = library_rtol if value is None else value
            try:
                run = simulate(instance, T, checkpoints=times, precision=data["precision"])
            finally:
                policy.ARB_REFERENCE_LIMIT = 20_000
                policy.float64_reference_suffices = suffices
                policy.ARB_REFERENCE_RTOL = library_rtol
            runs.append((route, value, run, time.process_time() - started))
    rows = [{**row, "route": route, "reference_rtol": value} for route, value, _, _ in runs]
    failed = [f"run: {run.status} {run.message}"[:200] for _, _, run, _ in runs
              if not run.success or run.error is None]
    if failed:
        return [{**r, "skipped": failed[0]} for r in rows]
    run = runs[0][2]
    digits = 16 if run.precision["backend"] == "float64" else run.precision["digits"]
    started = time.process_time()
    truth = simulate(instance, T, checkpoints=times, precision=int(math.ceil(2 * digits)),
                     error_estimate=False, continuation=False, symmetry="off")
    if not truth.success:
        return [{**r, "skipped": f"truth: {truth.status} {truth.message}"[:200]} for r in rows]
    truth_seconds = time.process_time() - started
    return [{**r, **_ratios(run, truth), "reference_evaluations":
             run.reference["stats"].get("rhs_evals"), "cpu_seconds": round(seconds, 3),
             "seconds": round(seconds + truth_seconds, 2)}
            for r, (_, _, run, seconds) in zip(rows, runs, strict=True)]


def _integrated_reference(instance, times, traj, backend, controller, group, continuation,
                          monitor):
    """``simulate``'s reference run without inheriting the run's consensus freeze."""
    from verify.flow.simulate import _run, float64_twin
    from verify.numerics import Float64

    if isinstance(backend, Float64):
        instance = float64_twin(instance)
    return _run(instance, times, backend, controller, group, continuation, monitor)


def _forced(answer: bool, instance, horizon=None) -> bool:
    """``float64_reference_suffices`` replaced by a fixed answer (``--reference arb|float64``)."""
    return answer


def _ratios(run, truth) -> dict:
    """The worst true/estimate ratios of ``run`` (state and scaled scores) against ``truth``."""
    from verify.flow.simulate import entry_differences

    bits = truth.precision["bits"]
    true = entry_differences(run, truth, bits).max(axis=2)                   # (m, n)
    unit = 2.0 ** -(53 if run.precision["backend"] == "float64" else run.precision["bits"])
    scale = np.max(np.abs(run.state), axis=(1, 2))
    estimate = run.error + 4 * unit * scale[:, None]
    state = true[1:] / estimate[1:]
    worst_state = int(np.argmax(np.max(state, axis=1))) + 1
    same_scale = np.allclose(run.log_scale, truth.log_scale, rtol=1e-14, atol=1e-14)
    scores = {"score_ratio": None}
    if same_scale and run.score_error is not None:
        S, S_true = np.asarray(run.scaled_scores), np.asarray(truth.scaled_scores)
        rounding = 4 * np.finfo(float).eps * np.max(np.abs(S), axis=(1, 2))
        score_estimate = run.score_error + rounding[:, None, None]
        ratio = np.abs(S - S_true)[1:] / score_estimate[1:]
        worst = int(np.argmax(np.max(ratio, axis=(1, 2)))) + 1
        scores = {"score_ratio": float(np.max(ratio)), "score_worst_t": float(run.t[worst]),
                  "score_size_at_worst": float(np.max(np.abs(S[worst]))),
                  "score_true_error": float(np.max(np.abs(S - S_true))),
                  "score_estimate": float(np.max(run.score_error))}
        finite = np.isfinite(run.margins) & np.isfinite(truth.margins)
        if run.margin_error is not None and np.any(finite[1:]):
            with np.errstate(invalid="ignore"):
                margin_true = np.where(finite, np.abs(run.margins - truth.margins), 0.0)
            margin_estimate = run.margin_error + 2 * rounding[:, None]
            scores["margin_ratio"] = float(np.max(margin_true[1:] / margin_estimate[1:]))
    return {"state_ratio": float(np.max(state)), "state_worst_t": float(run.t[worst_state]),
            **scores, **_frozen(run, state), "true_error": float(np.max(true)),
            "estimate": float(np.max(run.error)),
            "reference": run.reference["backend"], "truth_bits": bits,
            "continuation": bool((run.continuation or {}).get("legs"))}


def _frozen(run, state_ratio: np.ndarray) -> dict:
    """Where the run or its reference froze at a certified consensus (the ``t0`` of each cap
    leg, and whether the reference inherited the run's), and the worst true/estimate ratio and
    largest estimate over the checkpoints after the first freeze (``state_ratio``: per
    checkpoint from the second, per token)."""
    def cap_t0(continuation) -> float | None:
        legs = [leg for leg in (continuation or {}).get("legs", []) if leg.get("kind") == "cap"]
        return legs[0]["t0"] if legs else None

    ref_legs = ((run.reference or {}).get("stats", {}).get("continuation") or {}).get("legs", [])
    run_t0, ref_t0 = cap_t0(run.continuation), cap_t0({"legs": ref_legs})
    out = {"run_freeze": run_t0, "ref_freeze": ref_t0,
           "ref_inherited": any(leg.get("inherited", False) for leg in ref_legs)}
    first = min((t for t in (run_t0, ref_t0) if t is not None), default=None)
    after = [k for k in range(1, len(run.t)) if first is not None and float(run.t[k]) > first]
    if after:
        out["frozen_checkpoints"] = len(after)
        out["frozen_ratio"] = float(np.max(state_ratio[[k - 1 for k in after]]))
        out["frozen_estimate"] = float(np.max(run.error[after]))
    # where only the run repeats its state (after its freeze, the reference still integrated)
    alone = [k for k in after if run_t0 is not None and float(run.t[k]) > run_t0
             and (ref_t0 is None or float(run.t[k]) <= ref_t0)]
    if alone:
        out["run_alone_checkpoints"] = len(alone)
        out["run_alone_ratio"] = float(np.max(state_ratio[[k - 1 for k in alone]]))
    return out


def frozen_summary(rows: list[dict]) -> str:
    """Per variant: how many draws froze (run, reference, inherited), at which ``t0``, and the
    worst true/estimate ratio and median estimate at the checkpoints after a freeze."""
    measured = [r for r in rows if "skipped" not in r]
    lines = []
    for name in dict.fromkeys(r["variant"] for r in measured):
        mine = [r for r in measured if r["variant"] == name]
        froze = [r for r in mine if r.get("frozen_checkpoints")]
        if not froze:
            continue
        t0 = [r["run_freeze"] for r in mine if r["run_freeze"] is not None]
        ratios = [r["frozen_ratio"] for r in froze]
        lines.append(
            f"{name:34} {len(mine):>3} draws: run froze {len(t0)}, reference froze "
            f"{sum(r['ref_freeze'] is not None for r in mine)} (inherited "
            f"{sum(r['ref_inherited'] for r in mine)}); run t0 min/median/max "
            + (f"{min(t0):.3g}/{np.median(t0):.3g}/{max(t0):.3g}" if t0 else "—")
            + f"; {sum(r['frozen_checkpoints'] for r in froze)} frozen checkpoints: "
            f"true/estimate median {np.median(ratios):.3g}, max {max(ratios):.3g}; "
            f"estimate there median {np.median([r['frozen_estimate'] for r in froze]):.3g}")
        alone = [r for r in mine if r.get("run_alone_checkpoints")]
        if alone:
            lines.append(
                f"{'':34} of which {sum(r['run_alone_checkpoints'] for r in alone)} where only "
                f"the run repeats its state ({len(alone)} draws): true/estimate max "
                f"{max(r['run_alone_ratio'] for r in alone):.3g}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the table
def _quantiles(values: list[float]) -> str:
    if not values:
        return f"{'—':>8} {'—':>8} {'—':>8} {'—':>8}"
    a = np.array(values)
    return " ".join(f"{v:8.3g}" for v in (np.median(a), np.quantile(a, 0.9), np.quantile(a, 0.99),
                                          np.max(a)))


def table(rows: list[dict]) -> tuple[str, float]:
    """The coverage table and the worst ratio over all instances."""
    measured = [r for r in rows if "skipped" not in r]
    lines = [f"{'variant':34} {'runs':>4} | true/estimate (state): {'median':>8} {'90%':>8} "
             f"{'99%':>8} {'max':>8} | scores: {'median':>8} {'90%':>8} {'99%':>8} {'max':>8}"
             f" | margins max"]
    worst = 0.0

    def line(name: str, mine: list[dict]) -> str:
        state = [r["state_ratio"] for r in mine]
        scores = [r["score_ratio"] for r in mine if r["score_ratio"] is not None]
        margins = [r["margin_ratio"] for r in mine if r.get("margin_ratio") is not None]
        return (f"{name:34} {len(mine):>4} | {'':23}{_quantiles(state)} | {'':8}"
                f"{_quantiles(scores)} | " + (f"{max(margins):8.3g}" if margins else "—"))

    for name, _ in VARIANTS + GROWTH_VARIANTS + CONSENSUS_VARIANTS + CONSENSUS_ARB_VARIANTS:
        mine = [r for r in measured if r["variant"] == name]
        if not mine and name not in {r["variant"] for r in rows}:
            continue
        worst = max([worst, *(r["state_ratio"] for r in mine),
                     *(r["score_ratio"] for r in mine if r["score_ratio"] is not None)])
        lines.append(line(name, mine))
    lines.append(line("all", measured))
    skipped = [r for r in rows if "skipped" in r]
    if skipped:
        lines.append(f"skipped {len(skipped)}: " + "; ".join(
            f"#{r['k']} ({r['variant']}): {r['skipped']}" for r in skipped[:5]))
    return "\n".join(lines), worst


def estimates_compared(rows: list[dict], route: str, against: str) -> str:
    """Per draw, the estimate of ``route`` over that of ``against`` (state and scores, largest
    over the run), and the CPU seconds of the two runs with their estimates: is the cheaper
    route's estimate inflated, and by how much is it cheaper?"""
    by_draw = {}
    for r in rows:
        if "skipped" not in r and r["reference_rtol"] is None:
            by_draw.setdefault(r["k"], {})[r["route"]] = r
    pairs = [(d[route], d[against]) for d in by_draw.values() if route in d and against in d]
    if not pairs:
        return ""
    state = [a["estimate"] / b["estimate"] for a, b in pairs if b["estimate"] > 0]
    scores = [a["score_estimate"] / b["score_estimate"] for a, b in pairs
              if a.get("score_estimate") and b.get("score_estimate")]
    cpu = sum(a["cpu_seconds"] for a, _ in pairs), sum(b["cpu_seconds"] for _, b in pairs)
    return (f"estimate {route}/{against} on {len(pairs)} draws: state {_quantiles(state)} | "
            f"scores {_quantiles(scores)} (median 90% 99% max); smallest: state "
            f"{min(state, default=math.nan):.3g}, scores {min(scores, default=math.nan):.3g}"
            f"\nCPU s of run + estimate: {route} {cpu[0]:.1f}, {against} {cpu[1]:.1f} "
            f"(×{cpu[1] / max(cpu[0], 1e-9):.2f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=247,
                        help="number of instances (default 247: 19 per variant)")
    parser.add_argument("--quick", action="store_true", help="24 instances (a smoke test)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", help="write every instance's row to this file")
    parser.add_argument("--reference", default="policy",
                        help="the reference of float64 runs, or several comma-separated, each "
                        "measured against one truth: policy (the library's choice, default), "
                        "arb (the arb reference for every run), float64 (the float64 twin "
                        "reference and the arb spot check for every run)")
    parser.add_argument("--set", choices=sorted(SETS), default="paper",
                        help="the variants: the model family's (default), growth (longer "
                        "horizons, an MLP: GROWTH_VARIANTS), consensus (runs that end frozen "
                        "at a certified consensus: CONSENSUS_VARIANTS) or consensus-arb (the "
                        "same in arb: CONSENSUS_ARB_VARIANTS)")
    parser.add_argument("--variants", help="only the variants whose name contains one of these "
                        "comma-separated words (e.g. 'sphere,pre-LN')")
    parser.add_argument("--reference-rtol", help="comma-separated values of precision_policy."
                        "ARB_REFERENCE_RTOL (the largest tolerance of a float64 run's arb "
                        "reference) to compare on the same draws against one truth, e.g. "
                        "'1e-15,1e-14,1e-13' (default: the library's)")
    parser.add_argument("--reference-integrated", action="store_true",
                        help="the reference run integrated to the horizon where the run froze "
                        "at a certified consensus, instead of inheriting its freeze")
    parser.add_argument("--checkpoints", type=int, default=7,
                        help="checkpoints per run, equally spaced (default 7)")
    args = parser.parse_args(argv)
    count = 24 if args.quick else args.instances
    drawn = [draw(k, SETS[args.set]) for k in range(count)]
    if args.variants:
        words = [w.strip() for w in args.variants.split(",") if w.strip()]
        drawn = [data for data in drawn if any(w in data["variant"] for w in words)]
    routes = tuple(w.strip() for w in args.reference.split(",") if w.strip())
    if not routes or set(routes) - {"policy", "arb", "float64"}:
        parser.error(f"--reference {args.reference!r}: policy, arb or float64")
    rtols = (None,) if not args.reference_rtol else tuple(
        float(v) for v in args.reference_rtol.split(","))
    started = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        rows = []
        for result in pool.map(functools.partial(measure, reference=routes,
                                                 reference_rtols=rtols,
                                                 inherit=not args.reference_integrated,
                                                 checkpoints=args.checkpoints),
                               drawn):
            for row in result:
                rows.append(row)
                scores = row.get("score_ratio")
                label = "" if row["reference_rtol"] is None else f" [{row['reference_rtol']:g}]"
                label += "" if len(routes) == 1 else f" {row['route']}"
                print(f"  #{row['k']:<4} {row['variant']:34}{label} "
                      + (f"state {row['state_ratio']:.3g}  scores "
                         f"{'—' if scores is None else f'{scores:.3g}'}  ({row['seconds']} s)"
                         if "skipped" not in row else row["skipped"]), file=sys.stderr, flush=True)
    from verify.numerics import ESTIMATE_SAFETY

    for route in routes:
        for value in rtols:
            text, worst = table([row for row in rows if row["reference_rtol"] == value
                                 and row["route"] == route])
            if len(routes) > 1:
                print(f"\nreference: {route}")
            if value is not None:
                evaluations = sum(row.get("reference_evaluations") or 0 for row in rows
                                  if row["reference_rtol"] == value and row["route"] == route)
                print(f"\nARB_REFERENCE_RTOL = {value:g} ({evaluations} reference evaluations)")
            print(text)
            frozen = frozen_summary([row for row in rows if row["reference_rtol"] == value
                                     and row["route"] == route])
            if frozen:
                print(f"\nat checkpoints after a certified consensus (run or reference frozen):"
                      f"\n{frozen}")
            print(f"\nworst true/estimate ratio: {worst:.3g}; × margin {MARGIN:g} = "
                  f"{worst * MARGIN:.3g}; the library's safety factor κ = ESTIMATE_SAFETY = "
                  f"{ESTIMATE_SAFETY:g} "
                  + ("covers it." if ESTIMATE_SAFETY >= worst * MARGIN else "does NOT cover it."))
    if {"arb", "float64"} <= set(routes):
        chosen = [row for row in rows if row["reference_rtol"] is None
                  and row["route"] == row["policy_route"]]
        text, worst = table(chosen)
        print(f"\nthe library's choice per draw (float64 where float64_reference_suffices, "
              f"{sum(r['route'] == 'float64' for r in chosen)} of {len(chosen)}; arb elsewhere)"
              f"\n{text}\nworst true/estimate ratio: {worst:.3g}")
        print(estimates_compared([row for row in rows if row["policy_route"] == "float64"],
                                 "float64", "arb"))
    for route in routes[1:]:
        print(estimates_compared(rows, route, routes[0]))
    print(f"({len(rows)} rows in {time.perf_counter() - started:.0f} s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(rows, out, indent=1)
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
