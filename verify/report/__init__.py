"""Reports of a run: JSON, Markdown, HTML and the figures (:mod:`verify.report.figures`)."""

from verify.report.figures import (
    Predicted,
    attention_rank,
    figure_to_data_uri,
    figure_to_png_bytes,
    plot_attention_graph,
    plot_attention_heatmaps,
    plot_convergence,
    plot_dependency_graph,
    plot_doubly_exponential,
    plot_trajectories,
)

__all__ = [
    "plot_trajectories", "Predicted", "plot_attention_heatmaps", "attention_rank",
    "plot_convergence", "plot_doubly_exponential", "plot_attention_graph",
    "plot_dependency_graph", "figure_to_png_bytes", "figure_to_data_uri",
]
