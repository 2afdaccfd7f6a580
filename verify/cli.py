"""The ``verify`` command (thin over the library).

    verify --version
    verify simulate FILE [--horizon T] [--precision P] [--checkpoints N] [--json] [--save PATH]

Exit codes: 0 success, 1 the simulation failed, 2 bad usage or a malformed file.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

# Small matrices (d ≤ a few hundred) on a few cores: a multithreaded BLAS costs more in
# synchronisation than it gains, badly so on a loaded 2-core machine (measured 0.16 ms vs 31 ms
# for a 128×128 product). Set before NumPy is imported; an explicit setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from verify import __version__
from verify.errors import VerifyError

__all__ = ["main", "build_parser"]


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
    sim.add_argument("file", help="instance file, e.g. claims/examples/polytope-2d.toml")
    sim.add_argument("--horizon", help="final time T (overrides the file)")
    sim.add_argument("--checkpoints", type=int, help="number of checkpoints on [0, T]")
    sim.add_argument("--precision", type=_precision,
                     help="'float64' (default), 'auto' (arbitrary precision chosen from T and "
                          "the spectrum of V) or a number of decimal digits")
    sim.add_argument("--rtol", type=float, help="relative tolerance of the integrator")
    sim.add_argument("--cluster-tolerance", type=float,
                     help="distance under which final tokens count as one cluster (default 1e-3)")
    sim.add_argument("--no-error-estimate", action="store_true",
                     help="skip the re-run that measures the error (faster, less trustworthy)")
    sim.add_argument("--save", metavar="PATH", help="also save the trajectory (.npz)")
    sim.add_argument("--json", action="store_true", help="print JSON instead of text")
    return parser


def _simulate(args: argparse.Namespace) -> int:
    from verify.instance_file import load_instance_file
    from verify.simulate import simulate
    from verify.summary import format_summary, simulation_summary

    loaded = load_instance_file(args.file)
    settings = dict(loaded.simulation)
    for key in ("horizon", "checkpoints", "precision", "rtol"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    if args.no_error_estimate:
        settings["error_estimate"] = False
    tolerance = args.cluster_tolerance or settings.pop("cluster_tolerance", 1e-3)
    settings.pop("cluster_tolerance", None)
    horizon = settings.pop("horizon", 10)
    traj = simulate(loaded.instance, horizon, **settings)
    if args.save:
        traj.save(args.save)
    summary = simulation_summary(loaded, traj, tolerance)
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0 if traj.success else 1


def main(argv: list[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE"):  # `verify ... | head` ends quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return _simulate(args)
    except VerifyError as exc:
        print(f"verify: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
