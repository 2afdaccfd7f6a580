r"""Figures for the reports: matplotlib figures readable by mathematicians.

Every ``plot_*`` function returns a :class:`matplotlib.figure.Figure` on the non-interactive
Agg canvas (no ``pyplot`` state, no window, nothing to close); export it with
:func:`figure_to_png_bytes` or, for a self-contained offline HTML report, with
:func:`figure_to_data_uri`. Colours are consistent across figures: a token has the colour of its
cluster at the final checkpoint (the ``k``-th cluster, ordered by leader index, the ``k``-th
colour), or its own colour when no clusters are read.

* :func:`plot_trajectories`: token paths, with a :class:`Predicted` object drawn in
  (polytope :math:`\mathcal{K}`, hyperplanes :math:`\{\varphi_1^* = c\}`, points, subspaces);
* :func:`plot_attention_heatmaps`: :math:`P(t)` heat maps and its numerical rank over time;
* :func:`plot_convergence`: distance to a limit (log scale) with the fitted exponential rate;
* :func:`plot_doubly_exponential`: :math:`\log(-\log|P - P^*|)` with the fitted line;
* :func:`plot_attention_graph`: the attention graph with its leaders marked;
* :func:`plot_dependency_graph`: the claims and the claims they use, coloured by verdict;
* :func:`weights_spectra_figure`, :func:`sentence_paths_figure`: real heads (``verify weights``).

Examples
--------
>>> import numpy as np
>>> fig = plot_convergence(np.arange(5.0), np.exp(-np.arange(5.0)), fit=(1.0, 0.0))
>>> figure_to_png_bytes(fig, dpi=40)[:4]
b'\x89PNG'
"""

from verify.report._fig_attention import RANK_RTOL, attention_rank, plot_attention_heatmaps
from verify.report._fig_graphs import (
    VERDICT_COLOURS,
    plot_attention_graph,
    plot_dependency_graph,
    verdict_colour,
)
from verify.report._fig_rates import plot_convergence, plot_doubly_exponential
from verify.report._fig_tokens import Predicted, plot_trajectories
from verify.report._fig_weights import sentence_paths_figure, weights_spectra_figure
from verify.report._figstyle import (
    PNG_SIGNATURE,
    colour_clusters,
    figure_to_data_uri,
    figure_to_png_bytes,
    figure_to_svg,
    palette,
    token_colours,
)

__all__ = [
    "plot_trajectories", "Predicted", "plot_attention_heatmaps", "attention_rank",
    "RANK_RTOL", "plot_convergence", "plot_doubly_exponential", "plot_attention_graph",
    "plot_dependency_graph", "verdict_colour", "VERDICT_COLOURS", "figure_to_png_bytes",
    "figure_to_data_uri", "figure_to_svg", "PNG_SIGNATURE", "palette", "colour_clusters",
    "token_colours", "weights_spectra_figure", "sentence_paths_figure",
]
