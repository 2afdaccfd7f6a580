r"""Shared pieces of the figures: Agg figures, colours, clusters for colouring, PNG export.

Figures are built with the object-oriented API on :class:`matplotlib.figure.Figure` attached
to the non-interactive Agg canvas: no ``pyplot`` state, no window, nothing to close (a figure
is freed with its last reference), and the global backend of the caller is left untouched.

Colours are consistent across figures: a token gets the colour of its *cluster*, the
``k``-th cluster (clusters ordered by the index of their leader) the ``k``-th colour of
:func:`palette`. When the clusters cannot be read from the final attention matrix (see
:func:`colour_clusters`) every token gets its own colour instead.
"""

from __future__ import annotations

import base64
import functools
import io
import os
import threading
from typing import Any

import matplotlib
import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.mathtext import MathTextParser
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from verify.errors import InvalidArgument

__all__ = [
    "new_figure", "inches_box", "beside_legend", "title_room", "palette", "colour_clusters",
    "token_colours", "figure_to_png_bytes", "figure_to_data_uri", "describe", "float_array",
    "latex_float", "PNG_SIGNATURE", "DEFAULT_DPI",
]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DEFAULT_DPI = 100
PNG_COMPRESS_LEVEL = 1  # zlib's fastest: RGB at level 1 is as small as RGBA at level 6
UNASSIGNED = (0.55, 0.55, 0.55, 1.0)


def describe(value: Any) -> str:
    """A short description of ``value`` for error messages: shape and dtype, or the type."""
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape}, dtype {value.dtype}"
    return type(value).__name__


def float_array(name: str, value: Any, ndim: int | tuple[int, ...], *,
                allow_nonfinite: bool = False) -> np.ndarray:
    """``value`` as a float64 array with ``ndim`` dimensions, or :class:`InvalidArgument`."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidArgument(
            f"{name}=<{describe(value)}> ({type(value).__name__}) is not an array of real "
            f"numbers; pass a numeric array."
        ) from None
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if array.ndim not in allowed:
        raise InvalidArgument(
            f"{name} has shape {array.shape} ({array.ndim} dimensions), but it must have "
            f"{' or '.join(map(str, allowed))} dimensions; reshape it."
        )
    if not allow_nonfinite and array.size and not np.all(np.isfinite(array)):
        raise InvalidArgument(
            f"{name} has NaN or infinite entries; every entry must be finite; drop or "
            "recompute them."
        )
    return array


def latex_float(x: float, digits: int = 3) -> str:
    r"""``x`` to ``digits`` significant digits as mathtext (no ``$``): ``1.5 \cdot 10^{-7}``.

    >>> latex_float(1.5e-07), latex_float(0.25), latex_float(1e-4), latex_float(2e20)
    ('1.5 \\cdot 10^{-7}', '0.25', '10^{-4}', '2 \\cdot 10^{20}')
    """
    x = float(x)
    text = f"{x:.{digits - 1}e}" if 0 < abs(x) < 1e-3 else f"{x:.{digits}g}"
    if "e" in text:  # drop trailing zeros of the mantissa
        mantissa, exponent = text.split("e")
        text = (mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa) + "e" + exponent
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = f"10^{{{int(exponent)}}}"
    return power if mantissa == "1" else f"{mantissa} \\cdot {power}"


_PARSERS: dict[tuple[int, int], MathTextParser] = {}  # by (process id, thread id)


def mathtext_parser() -> MathTextParser:
    """The mathtext parser every figure of this process and thread renders its formulas with.

    Agg parses the formulas of a figure (``$t$``, ``token $j$``, log-scale tick labels) with a
    parser of its renderer, one per figure, whose cache (of the parsed formulas, keyed by the
    formula, its font properties and the dpi) then starts empty; one parser lets every figure
    reuse the formulas the previous ones parsed: the same pixels, ~15 % less CPU per figure.

    A parsed formula holds the FreeType fonts it was set in, and a font must not be used by two
    processes (a forked child shares the font file's offset with its parent: reading glyphs at
    the same time garbles them, "FT_Load_Glyph ... invalid outline") nor by two threads: so one
    parser per process and thread, the parent's forgotten in a child, as matplotlib's own font
    cache does.

    >>> mathtext_parser() is mathtext_parser()
    True
    """
    key = (os.getpid(), threading.get_ident())
    parser = _PARSERS.get(key)
    if parser is None:
        for stale in [k for k in _PARSERS if k[0] != key[0]]:  # a parent's, before a fork
            del _PARSERS[stale]
        parser = _PARSERS[key] = _Parser(_agg_output())
    return parser


@functools.cache
def _agg_output() -> str:
    """The output type of the parser :class:`RendererAgg` makes for itself, which its text
    drawing unpacks: ``"path"`` from matplotlib 3.11, ``"agg"`` (raster glyphs) before. A
    parser of the other type breaks every figure with a formula ("not enough values to unpack").

    >>> _agg_output() in ("path", "agg")
    True
    """
    output = getattr(RendererAgg(1, 1, 72).mathtext_parser, "_output_type", "vector")
    return "agg" if output == "raster" else "path"  # its name for MathTextParser(...)


_PARSE = getattr(MathTextParser, "_parse_cached", None)  # matplotlib's cached parse (private)


class _Parser(MathTextParser):
    """matplotlib's parser with room for a report's formulas: its cache keeps 50, and a suite's
    figures set about 120 distinct ones (titles, labels, tick labels); a matplotlib without
    that cache gets its own parser unchanged."""

    if _PARSE is not None:
        _parse_cached = functools.lru_cache(1024)(getattr(_PARSE, "__wrapped__", _PARSE))


class _Canvas(FigureCanvasAgg):
    """The Agg canvas, whose renderers parse formulas with :func:`mathtext_parser`."""

    def get_renderer(self):  # noqa: D102 - FigureCanvasAgg's
        renderer = super().get_renderer()
        renderer.mathtext_parser = mathtext_parser()
        return renderer


def new_figure(width: float, height: float, *, layout: str | None = "constrained") -> Figure:
    """A :class:`Figure` of ``width × height`` inches on the Agg canvas.

    ``layout="constrained"`` (default) lets matplotlib place the axes around their labels when
    the figure is saved; ``layout=None`` is for a figure that places its axes itself (a fixed
    layout, in inches: :func:`inches_box`). Constrained layout measures every text of the
    figure in two passes and makes ``savefig`` draw the figure once more before rendering it:
    about a third of the CPU of rendering a figure with many tick labels such as the
    :math:`P(t)` heat maps.

    >>> fixed = new_figure(2, 1, layout=None)
    >>> new_figure(2, 1).get_layout_engine() is not None, fixed.get_layout_engine()
    (True, None)
    """
    fig = Figure(figsize=(width, height), layout=layout)
    _Canvas(fig)
    return fig


def inches_box(fig: Figure, left: float, bottom: float, width: float,
               height: float) -> list[float]:
    """``[left, bottom, width, height]`` in figure fractions of a box given in inches from the
    figure's lower left corner (for :meth:`Figure.add_axes` in a fixed layout).

    >>> inches_box(new_figure(4, 2, layout=None), 1, 0.5, 2, 1)
    [0.25, 0.25, 0.5, 0.5]
    """
    w, h = (float(v) for v in fig.get_size_inches())
    return [left / w, bottom / h, width / w, height / h]


def beside_legend(fig: Figure, ax: Any, legend: Any, *, left: float = 0.8,
                  bottom: float = 0.55, top: float = 0.6, gap: float = 0.15,
                  below: bool = False) -> None:
    """Place ``ax`` beside ``legend`` (a figure legend): ``ax`` from ``left`` to the right edge
    less the legend's width and ``gap``, from ``bottom`` to the height less ``top`` (inches),
    the legend in the upper right corner; with ``below=True`` the legend at the bottom centre
    and ``ax`` from the legend's height, ``gap`` and ``bottom`` up, to the right edge less
    ``gap``. A fixed layout for one axes and a legend, which measures only the legend's texts
    (:func:`new_figure` with ``layout=None``).

    >>> fig = new_figure(4, 3, layout=None)
    >>> ax = fig.add_subplot()
    >>> beside_legend(fig, ax, fig.legend(handles=ax.plot([0, 1], label="a line")))
    >>> bool(0 < ax.get_position().x1 < 1 - 0.15 / 4)
    True
    """
    width, height = (float(v) for v in fig.get_size_inches())
    pad = 0.05  # the legend's distance to the figure's edge, inches
    legend.set_loc("lower center" if below else "upper right")
    anchor = (0.5, pad / height) if below else (1 - pad / width, 1 - pad / height)
    legend.set_bbox_to_anchor(anchor, transform=fig.transFigure)
    box = legend.get_window_extent(fig.canvas.get_renderer())
    if below:
        bottom += box.height / fig.dpi + pad
        right = width - gap
    else:
        right = max(width - box.width / fig.dpi - pad - gap, left + 0.5 * width)
    ax.set_position(inches_box(fig, left, bottom, right - left, height - bottom - top))


def title_room(title: str, fontsize: float = 10) -> float:
    """Inches above an axes for its ``title`` of one or more lines at ``fontsize`` points.

    >>> round(title_room("one line"), 3), round(title_room("two\\nlines"), 3)
    (0.344, 0.539)
    """
    return 0.15 + 1.4 * fontsize / 72 * (title.count("\n") + 1)


def palette(k: int) -> list[tuple[float, float, float, float]]:
    """``k`` distinguishable RGBA colours: ``tab10`` up to 10, ``tab20`` up to 20, then
    evenly spaced hues of ``turbo``.

    >>> len(palette(3)), palette(1)[0] == palette(3)[0]
    (3, True)
    """
    if k <= 10:
        return [tuple(colormaps["tab10"](i)) for i in range(k)]
    if k <= 20:
        return [tuple(colormaps["tab20"](i)) for i in range(k)]
    return [tuple(colormaps["turbo"](x)) for x in np.linspace(0.05, 0.95, k)]


def colour_clusters(P: Any) -> np.ndarray | None:
    r"""The cluster leader of each token read from an attention matrix, for colouring only.

    Token ``i`` points to ``j = argmax_j P_ij`` when that entry is dominant (``P_ij > 1/2``);
    following the pointers from ``i`` must end at a token that points to itself, its leader.
    Returns ``None`` when some token has no dominant entry or ends in a cycle: then no clusters
    are shown. This is a float reading of ``P`` for colours and ordering; certified leaders come
    from :func:`verify.analysis.graph.leaders`.

    >>> colour_clusters([[0.9, 0.1, 0], [0.8, 0.2, 0], [0, 0.3, 0.7]]).tolist()
    [0, 0, 2]
    >>> colour_clusters([[0.5, 0.5], [0.5, 0.5]]) is None
    True
    """
    P = float_array("P", P, 2)
    n = P.shape[0]
    target = np.argmax(P, axis=1)
    if np.any(P[np.arange(n), target] <= 0.5):
        return None
    leader = np.empty(n, dtype=int)
    for i in range(n):
        j, seen = i, set()
        while target[j] != j:
            if j in seen:
                return None
            seen.add(j)
            j = int(target[j])
        leader[i] = j
    return leader


def token_colours(n: int, leader: np.ndarray | None = None) -> list[tuple]:
    """Colour of each of ``n`` tokens: by cluster when ``leader`` (from
    :func:`colour_clusters`) is given, else one colour per token.

    >>> token_colours(3, np.array([2, 2, 2]))[0] == token_colours(3, np.array([2, 2, 2]))[1]
    True
    """
    if leader is None:
        return palette(n)
    heads = sorted(set(int(v) for v in leader))
    colours = palette(len(heads))
    rank = {h: k for k, h in enumerate(heads)}
    return [colours[rank[int(v)]] for v in leader]


def figure_to_png_bytes(fig: Figure, dpi: float = DEFAULT_DPI) -> bytes:
    """Render ``fig`` to PNG bytes (Agg) at ``dpi``; the image is ``figsize · dpi`` pixels.

    The pixels are Agg's, as ``fig.savefig(format="png")`` has them; an opaque figure is
    encoded as RGB (its alpha is 255 everywhere) with zlib level
    :data:`PNG_COMPRESS_LEVEL`: a third less CPU than matplotlib's RGBA at level 6, for files
    of the same size (a report's 54 figures: 2.99 MB against 3.01 MB).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    dpi : float
        Dots per inch, positive.

    Returns
    -------
    png : bytes
        Starts with the PNG signature ``b"\\x89PNG\\r\\n\\x1a\\n"``.

    Raises
    ------
    InvalidArgument
        If ``fig`` is not a Figure or ``dpi`` is not a positive number.

    Examples
    --------
    >>> fig = new_figure(2, 1)
    >>> figure_to_png_bytes(fig, dpi=50)[:8] == PNG_SIGNATURE
    True
    """
    if not isinstance(fig, Figure):
        raise InvalidArgument(
            f"fig=<{describe(fig)}> ({type(fig).__name__}) is not a matplotlib Figure; pass "
            "the Figure returned by one of the plot_* functions."
        )
    if isinstance(dpi, bool) or not isinstance(dpi, int | float) or not dpi > 0:
        raise InvalidArgument(f"dpi={dpi!r} ({type(dpi).__name__}) must be a positive number, "
                              "e.g. dpi=100.")
    if not isinstance(fig.canvas, FigureCanvasAgg):
        _Canvas(fig)
    pixels = io.BytesIO()
    fig.savefig(pixels, format="rgba", dpi=dpi)  # the Agg pixels that format="png" encodes
    size = (int(fig.canvas.renderer.width), int(fig.canvas.renderer.height))
    image = Image.frombuffer("RGBA", size, pixels.getbuffer(), "raw", "RGBA", 0, 1)
    if image.getextrema()[3][0] == 255:  # opaque (a figure's face is): no alpha to encode
        image = image.convert("RGB")
    info = PngInfo()
    info.add_text("Software", f"Matplotlib version{matplotlib.__version__}, "
                  "https://matplotlib.org/")  # what savefig(format="png") writes
    out = io.BytesIO()
    image.save(out, format="png", compress_level=PNG_COMPRESS_LEVEL, dpi=(dpi, dpi),
               pnginfo=info)
    return out.getvalue()


def figure_to_data_uri(fig: Figure, dpi: float = DEFAULT_DPI) -> str:
    """``fig`` as a ``data:image/png;base64,...`` URI, for a self-contained offline HTML report
    (``<img src="...">`` needs no file and no network).

    Examples
    --------
    >>> figure_to_data_uri(new_figure(1, 1), dpi=20).startswith("data:image/png;base64,iVBOR")
    True
    """
    return "data:image/png;base64," + base64.b64encode(figure_to_png_bytes(fig, dpi)).decode(
        "ascii")


def figure_to_svg(fig: Figure) -> str:
    """``fig`` as an inline ``<svg>`` element (text kept as text, so it stays sharp and
    searchable at any zoom), for a diagram in a self-contained HTML report.

    Examples
    --------
    >>> figure_to_svg(new_figure(1, 1)).startswith("<svg")
    True
    """
    from matplotlib import rc_context

    if not isinstance(fig, Figure):
        raise InvalidArgument(f"fig=<{describe(fig)}> ({type(fig).__name__}) is not a "
                              "matplotlib Figure; pass the Figure of a plot_* function.")
    buffer = io.StringIO()
    with rc_context({"svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg")
    text = buffer.getvalue()
    return text[text.index("<svg"):]
