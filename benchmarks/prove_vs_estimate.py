r"""Proving against estimating: the cost of *proved on this instance* on the paper suite.

For every in-scope instance with ``n <= 8`` and ``d <= 3`` of the claims the theory's trapping
lemmas cover (Theorem 3.1, Theorem 4.2, Theorem 2.1 and its lemmas), this script measures in
one run, on one process:

* **estimate** — the estimate-based verdict: the judging engine on the instance
  (:func:`verify.judge.judge_request`: the run with its error estimate, the re-check at
  ``3T/2``, horizon extensions);
* **prove** — :func:`verify.proof.prove_result`: the rigorous enclosure up to ``t1``, the lemma
  at ``t1``, the facts and the independent checker;
* **check** — re-checking the certificate from its file text alone (``verify certificate``).

It prints one line per instance and, per claim and overall, the share proved and the ratio
``prove / estimate`` (over all the instances, and over the proved ones only) of the summed CPU
times of this process (``time.process_time``: on a shared machine the wall clock mostly
measures the other processes; the wall times are printed too, and the load average at the
start and the end). Each line also says where the proof's float64 look-ahead first saw the lemma
hold (``t*``; ``none``: no enclosure was computed) and the ``t1`` it was proved at, and after a
good-triple proof the CPU of lemma ``hyperplane-drift`` tried beside it (counted in **prove**:
it tells what the followers do, which the verdict does not need).
The issue aims at a ratio <= 3. Certificates are written to ``--out`` (default
``benchmarks/certificates``, not committed) and every one is re-checked.

    python benchmarks/prove_vs_estimate.py                     # all listed claims
    python benchmarks/prove_vs_estimate.py polytope --budget 300   # CPU s per proof
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from fractions import Fraction
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = ("polytope", "hyperplanes", "boolean-1d", "escape-threshold", "order-preserved",
          "one-bounded-token")


def main(argv: list[str] | None = None) -> int:
    from verify.claim import CheckRequest, judge_scope, load_claim
    from verify.judge import judge_request
    from verify.lemmas import check_file
    from verify.proof import PROOF_SECONDS, proof_budget, prove_result

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("claims", nargs="*", default=list(CLAIMS))
    parser.add_argument("--budget", type=float, default=PROOF_SECONDS,
                        help="CPU seconds a proof may take per instance (default: verify "
                             f"run's, {PROOF_SECONDS:g})")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "certificates"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    totals: dict[str, list] = {}
    print("load average at the start: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()), flush=True)
    for cid in args.claims:
        claim = load_claim(ROOT / "claims" / f"{cid}.toml")
        for family in claim.families:
            for k in range(family.count if family.kind == "random" else 1):
                instance = family.instance(k)
                if instance.n > 8 or instance.d > 3:
                    continue
                if judge_scope(claim.hypotheses, instance, family=family.name) is not None:
                    continue
                request = CheckRequest(claim, family, instance, family.seed_of(k),
                                       Fraction(family.horizon), family.checkpoints,
                                       family.precision, dict(claim.parameters))
                wall, start = time.perf_counter(), time.process_time()
                estimate = judge_request(request)
                t_estimate = time.process_time() - start
                w_estimate, wall = time.perf_counter() - wall, time.perf_counter()
                start = time.process_time()
                with proof_budget(args.budget):
                    proved = prove_result(request, estimate)
                t_prove = time.process_time() - start
                w_prove = time.perf_counter() - wall
                ok, t_check = proved.basis is not None and proved.basis.rigorous, 0.0
                if ok:
                    path = out / f"{cid}-{family.name}-{k}.json"
                    path.write_text(json.dumps(proved.certificate["document"]),
                                    encoding="utf-8")
                    start = time.process_time()
                    ok = check_file(path).valid
                    t_check = time.process_time() - start
                proof = proved.evidence.get("proof", {})
                ahead = (proof.get("look_ahead") or {}).get("first", "-") or "none"
                why = "" if ok else f"  ({proof.get('reason', '')[:90]})"
                t_drift = (proof.get("drift") or {}).get("cpu_seconds", 0.0)
                drift = f"  drift beside cpu {t_drift:5.2f}s" if "drift" in proof else ""
                print(f"{cid:18s} {instance.name:28s} n={instance.n} d={instance.d} "
                      f"estimate {estimate.verdict.value:12s} cpu {t_estimate:7.2f}s "
                      f"(wall {w_estimate:6.1f}s)  {'PROVED' if ok else 'not proved':10s} "
                      f"cpu {t_prove:7.2f}s (wall {w_prove:6.1f}s)  "
                      f"t*={ahead:>5s} t1={proof.get('t1', '-'):>5s}  check cpu {t_check:5.2f}s"
                      f"{drift}{why}", flush=True)
                totals.setdefault(cid, []).append((ok, t_estimate, t_prove, t_check, t_drift))
    print()
    every = [row for rows in totals.values() for row in rows]
    for name, rows in [*totals.items(), ("all", every)]:
        proved = sum(r[0] for r in rows)
        est, prv, chk, dft = (sum(r[i] for r in rows) for i in (1, 2, 3, 4))
        ok = [r for r in rows if r[0]]
        on_proved = (sum(r[2] for r in ok) / sum(r[1] for r in ok)) if ok else math.nan
        print(f"{name:18s} proved {proved:2d}/{len(rows):2d} ({100 * proved / len(rows):5.1f}%)"
              f"  CPU: estimate {est:8.1f}s  prove {prv:8.1f}s  ratio prove/estimate "
              f"{prv / est:5.2f} (on the proved ones {on_proved:5.2f})  check {chk:5.2f}s"
              f"  (of the proofs' CPU, the drift beside them {dft:.1f}s)")
    print("load average at the end: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
