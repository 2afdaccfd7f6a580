"""Shared test set-up."""

import os

# One BLAS thread: the tests multiply small matrices, where threads only add contention
# (the same default as the `verify` command).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
