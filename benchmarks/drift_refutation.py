r"""Refuting by the hyperplane drift against estimating: the CPU cost of the certificate.

On draws of the conjecture ``good-triple-tokens-converge`` (``V = diag(1, -1/2)``, ``Q = K =
I``, ``n`` tokens uniform in ``[-1, 1]^2``) this script measures in one run, on one process
(``time.process_time``; the wall clock on a shared machine mostly measures the others):

* **estimate** — the judging engine on the instance (:func:`verify.judge.judge_request`: the run
  with its error estimate, the re-check at ``3T/2``, horizon extensions): its verdict on
  "every rescaled token converges" can only be inconclusive;
* **refute** — :func:`verify.proof.certify_drift`: the rigorous enclosure up to ``t1``, lemma
  ``hyperplane-drift`` at ``t1`` and the independent checker;

and prints one line per draw, then the share refuted and the ratio ``refute / estimate`` of the
summed CPU times (over all draws, and over the refuted ones).

    python benchmarks/drift_refutation.py --draws 12
"""

from __future__ import annotations

import argparse
import os
import time
from fractions import Fraction
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from verify.judge import judge_request  # noqa: E402
from verify.judge._request import CheckRequest  # noqa: E402
from verify.model import Instance, Model  # noqa: E402
from verify.proof import certify_drift  # noqa: E402
from verify.run import load_conjecture  # noqa: E402

CONJECTURE = Path(__file__).resolve().parent.parent / "claims" / "conjectures" / \
    "good-triple-tokens-converge.toml"


def _draw(rng: np.random.Generator) -> list:
    n = int(rng.integers(2, 5))
    return [[Fraction(int(v), 1024) for v in row] for row in rng.integers(-1024, 1025, (n, 2))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    claim = load_conjecture(CONJECTURE).claim
    family = type("Family", (), {"name": "bench"})()
    rng = np.random.default_rng(args.seed)
    rows, totals = [], {"estimate": 0.0, "refute": 0.0, "est_ok": 0.0, "ref_ok": 0.0}
    for k in range(args.draws):
        instance = Instance(Model(V=[[1, 0], [0, Fraction(-1, 2)]]), _draw(rng),
                            name=f"bench#{k}")
        request = CheckRequest(claim, family, instance, k, Fraction(5), 11, "float64",
                               dict(claim.parameters))
        start = time.process_time()
        estimate = judge_request(request)
        middle = time.process_time()
        refuted = certify_drift(request, estimate)
        end = time.process_time()
        ok = refuted.basis is not None and refuted.basis.value == "certificate"
        t1 = refuted.certificate["t1"] if ok else "-"
        why = "" if ok else refuted.evidence.get("drift", {}).get("reason", "")[:70]
        rows.append((k, instance.n, estimate.verdict.value, refuted.verdict.value, t1,
                     middle - start, end - middle, why))
        totals["estimate"] += middle - start
        totals["refute"] += end - middle
        if ok:
            totals["est_ok"] += middle - start
            totals["ref_ok"] += end - middle
        print(f"draw {k:2d}  n={instance.n}  estimate: {estimate.verdict.value:12s} "
              f"{middle - start:6.2f} CPU s   refute: {refuted.verdict.value:12s} t1={t1:4s} "
              f"{end - middle:6.2f} CPU s  {why}", flush=True)
    count = sum(1 for r in rows if r[3] == "violated")
    print(f"\nrefuted on the certificate basis: {count}/{len(rows)}")
    print(f"CPU: estimate {totals['estimate']:.2f} s, refute {totals['refute']:.2f} s, ratio "
          f"refute/estimate {totals['refute'] / totals['estimate']:.3f} over all draws"
          + (f", {totals['ref_ok'] / totals['est_ok']:.3f} over the refuted ones"
             if totals["est_ok"] else ""))


if __name__ == "__main__":
    main()
