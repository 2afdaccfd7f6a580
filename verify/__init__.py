"""verify: a symbolic-numeric theorem verifier for self-attention dynamics.

The model (Geshkovski–Letrouit–Polyanskiy–Rigollet, arXiv 2305.05465, eq. (1.1)) is

    dx_i/dt = sum_j P_ij(t) V x_j,   P_ij = softmax_j <Q x_i, K x_j>,

and its relatives (rescaled tokens, discrete layers, masks, hardmax, layer norms, heads, MLP).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("selfattention-verify")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
