"""Shared test set-up."""

import os

# One BLAS thread: the tests multiply small matrices, where threads only add contention
# (the same default as the `verify` command).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
# No proofs unless a test asks for one (verify.proof.proof_budget, Budget(proof=...)): the
# paper-suite and search tests judge by estimates, as before; tests/test_proof.py,
# tests/test_certificates.py and tests/test_enclosure.py exercise the proofs.
os.environ.setdefault("VERIFY_PROOF_SECONDS", "0")
