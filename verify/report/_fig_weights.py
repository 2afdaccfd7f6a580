r"""Figures of real Transformer heads: spectra per layer and a sentence's token paths.

* :func:`weights_spectra_figure`: the non-zero eigenvalues of every head's value map, one panel
  per layer, in the complex plane (like the paper's ALBERT figure); the leading eigenvalue of a
  certified good triple is starred.  The model reading adds $d_{model} - d_{head}$ zeros per
  head, not drawn.
* :func:`sentence_paths_figure`: $t \mapsto \varphi_1^*(z_i(t))$ for every token of a sentence
  (the coordinate Theorem 4.2 is about), the hyperplane offsets $a, 0, b$ dashed, each path
  labelled by its word, the leaders in bold.

Examples
--------
>>> fig = weights_spectra_figure([{"layer": 0, "head": 0, "good_triple": True,
...                               "eigenvalues": [[2.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]}])
>>> len(fig.axes)
1
"""

from __future__ import annotations

import numpy as np

from verify.report._figstyle import new_figure, palette

__all__ = ["weights_spectra_figure", "sentence_paths_figure"]


def weights_spectra_figure(classes: list):
    """One panel per layer: every head's non-zero spectrum (see the module docstring).

    ``classes``: :class:`~verify.weights.HeadClass` objects or their ``to_json()`` dicts.
    """
    from types import SimpleNamespace

    classes = [SimpleNamespace(**c) if isinstance(c, dict) else c for c in classes]
    layers = sorted({c.layer for c in classes})
    cols = min(3, len(layers))
    rows = -(-len(layers) // cols)
    fig = new_figure(4.2 * cols, 3.8 * rows)
    heads = sorted({c.head for c in classes})
    colours = dict(zip(heads, palette(len(heads)), strict=True))
    for i, layer in enumerate(layers):
        ax = fig.add_subplot(rows, cols, i + 1)
        for c in (c for c in classes if c.layer == layer):
            ev = np.array(c.eigenvalues, dtype=float).reshape(-1, 3)
            ax.scatter(ev[:, 0], ev[:, 1], s=9, color=colours[c.head], label=f"h{c.head}")
            if c.good_triple:
                top = ev[np.argmax(np.hypot(ev[:, 0], ev[:, 1]))]
                ax.scatter([top[0]], [top[1]], s=120, marker="*", facecolor="none",
                           edgecolor="black", linewidth=1.0)
        ax.axhline(0, color="0.7", linewidth=0.6)
        ax.axvline(0, color="0.7", linewidth=0.6)
        ax.set_title(f"layer {layer}", fontsize=10)
        ax.set_xlabel("Re λ", fontsize=8)
        ax.set_ylabel("Im λ", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.axes[0].legend(fontsize=6, ncol=2, loc="upper left", markerscale=1.2)
    fig.suptitle("Non-zero eigenvalues of V per head (★: λ_1 of a certified good triple)",
                 fontsize=11)
    return fig


def sentence_paths_figure(times, values, words: list[str], leaders: list[int],
                          offsets: list[float] | None = None, title: str = ""):
    r"""Paths $t \mapsto$ ``values[:, i]`` (e.g. $\varphi_1^*(z_i(t))$), labelled by ``words``.

    ``values`` has shape ``(len(times), n)``; ``leaders`` are 0-based token indices; ``offsets``
    are drawn as dashed horizontal lines.
    """
    times, values = np.asarray(times, dtype=float), np.asarray(values, dtype=float)
    fig = new_figure(7.5, 4.5)
    ax = fig.add_subplot(1, 1, 1)
    colours = palette(values.shape[1])
    for c in offsets or []:
        ax.axhline(c, color="0.5", linestyle="--", linewidth=0.8)
    for i, word in enumerate(words):
        lead = i in leaders
        ax.plot(times, values[:, i], color=colours[i], linewidth=2.0 if lead else 1.0)
        # words at t = 0, where the tokens are still apart; the leaders again at the end
        ax.annotate(word, (times[0], values[0, i]), xytext=(-4, 0), textcoords="offset points",
                    fontsize=8, va="center", ha="right", color=colours[i],
                    fontweight="bold" if lead else "normal")
        if lead:
            ax.annotate(f"“{word}” (leader)", (times[-1], values[-1, i]), xytext=(4, 0),
                        textcoords="offset points", fontsize=8, va="center",
                        color=colours[i], fontweight="bold")
    ax.set_xlabel("t")
    ax.set_ylabel(r"$\varphi_1^*(z_i(t))$")
    span = times[-1] - times[0]
    ax.set_xlim(times[0] - 0.18 * span, times[-1] + 0.25 * span)
    ax.set_title(title, fontsize=10)
    return fig
