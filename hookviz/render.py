"""Arrays -> pictures: channel mosaics, heat strips, histograms and the monitor's charts, as PNG bytes.

Third stage of the hookviz data flow (capture -> summary -> **render** -> widget). Everything here
takes numpy arrays (or summaries of them) and returns PNG bytes or a matplotlib ``Figure``; nothing
imports ipywidgets, and nothing touches torch autograd.

Speed matters because a widget redraws on every click:

* feature maps become **one** mosaic array, coloured through a 256-entry colour table and encoded
  straight to PNG by Pillow (no matplotlib figure at all, a few milliseconds);
* a histogram is drawn straight into pixels with Pillow (:func:`histogram_png`, about a millisecond);
* the slower matplotlib charts (the training monitor, the hook timeline) redraw into one persistent
  ``Figure`` and are reduced to a 256-colour PNG (:func:`figure_png`), a few times smaller.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from PIL import Image, ImageDraw, ImageFont

from hookviz.summarize import Histogram

__all__ = [
    "BAD_COLOR",
    "colorize",
    "figure_png",
    "heat_strip",
    "histogram_png",
    "mosaic",
    "mosaic_png",
    "finite_range",
    "monitor_figure",
    "png_bytes",
    "strip_png",
    "timeline_figure",
    "upscale",
]

BAD_COLOR = (255, 0, 255)  # NaN / Inf pixels are magenta: impossible to mistake for a real value


def _lut(cmap: str) -> np.ndarray:
    table = matplotlib.colormaps[cmap](np.linspace(0.0, 1.0, 256))[:, :3]
    return (table * 255).round().astype(np.uint8)


_LUTS: dict[str, np.ndarray] = {}


def colorize(
    array: np.ndarray, vmin: float | None = None, vmax: float | None = None, cmap: str = "viridis"
) -> np.ndarray:
    """Map an array of any shape to RGB ``uint8`` (one more axis of 3) through ``cmap``.

    NaN and Inf become :data:`BAD_COLOR`. ``vmin``/``vmax`` default to the finite minimum and
    maximum; a constant array (all zeros, say) is drawn in the colour map's lowest colour instead of
    dividing by zero.
    """
    a = np.asarray(array, dtype=np.float32)
    finite = np.isfinite(a)
    if vmin is None or vmax is None:
        lo, hi = finite_range(a)
        vmin = lo if vmin is None else vmin
        vmax = hi if vmax is None else vmax
    span = float(vmax) - float(vmin)
    if span <= 0:
        idx = np.zeros(a.shape, dtype=np.uint8)
    else:
        scaled = (np.where(finite, a, vmin) - vmin) * (255.0 / span)
        idx = np.clip(scaled, 0, 255).astype(np.uint8)
    lut = _LUTS.get(cmap)
    if lut is None:
        lut = _LUTS[cmap] = _lut(cmap)
    rgb = lut[idx]
    if not finite.all():
        rgb[~finite] = BAD_COLOR
    return rgb


def finite_range(a: np.ndarray) -> tuple[float, float]:
    """``(min, max)`` of the finite values of ``a``; ``(0, 1)`` when there are none."""
    a = np.asarray(a)
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        return 0.0, 1.0
    return float(finite.min()), float(finite.max())


def mosaic(tiles: np.ndarray, cols: int | None = None, pad: int = 1, fill: float | int = np.nan) -> np.ndarray:
    """Tile ``K`` maps of shape ``(K, H, W)`` (or coloured ``(K, H, W, 3)``) into one image.

    ``cols`` defaults to about ``sqrt(K)``; tiles are separated by ``pad`` pixels of ``fill``.
    """
    m = np.asarray(tiles)
    if m.ndim not in (3, 4):
        raise ValueError(f"mosaic needs (K, H, W) or (K, H, W, 3) tiles, got shape {m.shape}")
    k, h, w = m.shape[:3]
    if k == 0:
        raise ValueError("mosaic needs at least one tile")
    cols = max(1, min(k, cols or math.ceil(math.sqrt(k))))
    rows = math.ceil(k / cols)
    out = np.full((rows * (h + pad) - pad, cols * (w + pad) - pad, *m.shape[3:]), fill, dtype=m.dtype)
    for i in range(k):
        r, c = divmod(i, cols)
        out[r * (h + pad) : r * (h + pad) + h, c * (w + pad) : c * (w + pad) + w] = m[i]
    return out


def heat_strip(values: np.ndarray, width: int = 32) -> np.ndarray:
    """Lay a 1-D vector (a ``Linear`` layer's output for one sample) out as rows of ``width`` cells.

    The last row is padded with NaN. A vector of 10 logits becomes a 1 x 10 strip.
    """
    v = np.asarray(values, dtype=np.float32).reshape(-1)
    width = max(1, min(width, v.size))
    rows = math.ceil(v.size / width)
    out = np.full(rows * width, np.nan, dtype=np.float32)
    out[: v.size] = v
    return out.reshape(rows, width)


def upscale(rgb: np.ndarray, min_width: int = 256, max_scale: int = 32) -> np.ndarray:
    """Enlarge an image by an integer factor (nearest neighbour) so that it is at least ``min_width`` wide."""
    h, w = rgb.shape[:2]
    scale = int(max(1, min(max_scale, math.ceil(min_width / max(w, 1)))))
    if scale == 1:
        return rgb
    return np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1)


def png_bytes(rgb: np.ndarray) -> bytes:
    """Encode an ``(H, W, 3)`` uint8 image as PNG (fast compression: these are redrawn on every click)."""
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8)).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def mosaic_png(
    maps: np.ndarray,
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "viridis",
    cols: int | None = None,
    min_width: int = 256,
    pad_color: tuple[int, int, int] = (255, 255, 255),
) -> bytes:
    """Feature maps ``(K, H, W)`` as one PNG: colour all maps on one shared scale, tile, enlarge, encode.

    One colour scale for all tiles keeps channels comparable (a dim channel looks dim). NaN/Inf
    pixels are magenta; the separators between tiles are ``pad_color``.
    """
    rgb = colorize(maps, vmin, vmax, cmap)
    h, w = rgb.shape[1:3]
    scale = int(max(1, min(32, math.ceil(min_width / max(w * (cols or math.ceil(math.sqrt(len(rgb)))), 1)))))
    if scale > 1:
        rgb = np.repeat(np.repeat(rgb, scale, axis=1), scale, axis=2)
    tiled = mosaic(rgb, cols=cols, pad=max(1, scale // 3), fill=0)
    if pad_color != (0, 0, 0):
        pad = mosaic(np.zeros(rgb.shape[:3], dtype=bool), cols=cols, pad=max(1, scale // 3), fill=True)
        tiled[pad] = pad_color
    return png_bytes(tiled)


def strip_png(
    values: np.ndarray,
    width: int = 32,
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "viridis",
    min_width: int = 256,
) -> bytes:
    """A 1-D vector as a heat strip PNG (rows of ``width`` cells); padding after the last value is white."""
    v = np.asarray(values, dtype=np.float32).reshape(-1)
    strip = heat_strip(v, width)
    rgb = colorize(strip, *(finite_range(v) if vmin is None or vmax is None else (vmin, vmax)), cmap)
    flat = rgb.reshape(-1, 3)
    flat[v.size :] = (255, 255, 255)
    return png_bytes(upscale(rgb, min_width))


def figure_png(fig: Figure, dpi: int = 72, palette: bool = True) -> bytes:
    """Render a matplotlib ``Figure`` to PNG bytes (Agg canvas; no pyplot state involved).

    With ``palette`` the picture is reduced to at most 256 colours first: charts lose nothing visible
    and the PNG is several times smaller (it travels to the browser and into the saved notebook).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    fig.set_dpi(dpi)
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    img = Image.fromarray(rgba[:, :, :3].copy())
    if palette:
        img = img.quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def histogram_png(
    hist: Histogram,
    title: str = "",
    log: bool = False,
    size: tuple[int, int] = (320, 170),
    color: tuple[int, int, int] = (230, 120, 30),
) -> bytes:
    """Draw a histogram straight into pixels with Pillow and return PNG bytes (about 1 ms, no matplotlib).

    Bars over the finite range, a grey line at x = 0 when it is inside the range, the range printed
    under the axis, the largest count on the left, and a title line with the NaN/Inf counts (red when
    any). ``log`` scales bar heights by ``log10(1 + count)`` so that small tails stay visible.
    """
    width, height = size
    left, right, top, bottom = 46, 10, 34, 22
    img = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(img)
    font = _font()
    counts = np.asarray(hist.counts, dtype=np.float64)
    heights = np.log10(1.0 + counts) if log else counts
    peak = float(heights.max()) if heights.size and heights.max() > 0 else 1.0
    plot_w, plot_h = width - left - right, height - top - bottom
    lo, hi = float(hist.edges[0]), float(hist.edges[-1])
    span = hi - lo if hi > lo else 1.0
    xs = left + (np.asarray(hist.edges, dtype=np.float64) - lo) / span * plot_w
    for i, h in enumerate(heights):
        if h <= 0:
            continue
        y0 = top + plot_h * (1.0 - h / peak)
        draw.rectangle([float(xs[i]), float(y0), max(float(xs[i]), float(xs[i + 1]) - 1), top + plot_h], fill=color)
    if lo < 0 < hi:
        x0 = left + (0 - lo) / span * plot_w
        draw.line([(x0, top), (x0, top + plot_h)], fill=(150, 150, 150))
    draw.line([(left, top + plot_h), (left + plot_w, top + plot_h)], fill=(0, 0, 0))
    draw.line([(left, top), (left, top + plot_h)], fill=(0, 0, 0))
    draw.text((left, top + plot_h + 4), f"{lo:.3g}", fill=(0, 0, 0), font=font)
    hi_text = f"{hi:.3g}"
    draw.text(
        (left + plot_w - draw.textlength(hi_text, font=font), top + plot_h + 4), hi_text, fill=(0, 0, 0), font=font
    )
    peak_count = int(counts.max()) if counts.size else 0
    draw.text((4, top), f"{peak_count}", fill=(0, 0, 0), font=font)
    draw.text((4, top + 12), "log" if log else "count", fill=(110, 110, 110), font=font)
    draw.text((4, 3), title, fill=(0, 0, 0), font=font)
    bad = hist.nan or hist.inf
    draw.text(
        (4, 17),
        f"NaN {hist.nan} | Inf {hist.inf} | {hist.total} values",
        fill=(200, 0, 0) if bad else (0, 0, 0),
        font=font,
    )
    return png_bytes(np.asarray(img))


_FONT: list[ImageFont.ImageFont | ImageFont.FreeTypeFont] = []


def _font() -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    if not _FONT:
        _FONT.append(ImageFont.load_default(size=11))
    return _FONT[0]


def monitor_figure(
    fig: Figure,
    steps: np.ndarray,
    loss: np.ndarray,
    layer_names: Sequence[str],
    act_mean: np.ndarray,
    act_std: np.ndarray,
    colorful: np.ndarray,
    colorful_limit: float,
    grad_hist: np.ndarray,
    grad_edges: np.ndarray,
    grad_by_depth: np.ndarray,
    selected: str,
) -> Figure:
    """Draw the training monitor's six panels into ``fig`` (cleared first) and return it.

    Panels: loss; activation mean and std per layer over steps; the "colorful dimension" image
    (histogram of |activation| of ``selected`` per step, log colour); the latest histogram of
    log10|gradient| of ``selected``; mean |gradient| by depth (log scale).
    """
    fig.clear()
    axes = fig.subplots(2, 3)
    fig.subplots_adjust(left=0.06, right=0.98, top=0.94, bottom=0.1, wspace=0.28, hspace=0.42)
    small = {"fontsize": 9}
    ax = axes[0, 0]
    ax.plot(steps, loss, lw=1, color="black")
    ax.set_title("loss", **small)
    for j, name in enumerate(layer_names):
        axes[0, 1].plot(steps, act_mean[:, j], lw=1, label=name)
        axes[0, 2].plot(steps, act_std[:, j], lw=1, label=name)
    axes[0, 1].set_title("activation mean", **small)
    axes[0, 2].set_title("activation std", **small)
    if len(layer_names) <= 8:
        axes[0, 2].legend(fontsize=6, loc="upper left", frameon=False)
    ax = axes[1, 0]
    if colorful.size:
        img = np.log1p(colorful.T)  # (bins, T): low values at the bottom
        ax.imshow(
            img,
            aspect="auto",
            origin="lower",
            cmap="viridis",
            extent=(float(steps[0]), float(steps[-1]) + 1, 0.0, colorful_limit),
            interpolation="nearest",
        )
    ax.set_title(f"|activation| histogram over steps: {selected}", **small)
    ax.set_xlabel("step", fontsize=8)
    ax = axes[1, 1]
    ax.stairs(grad_hist, grad_edges, fill=True, color="tab:orange", alpha=0.8)
    ax.set_title(f"log10 |gradient|: {selected}", **small)
    ax = axes[1, 2]
    depth = np.arange(len(layer_names))
    safe = np.where(np.isfinite(grad_by_depth) & (grad_by_depth > 0), grad_by_depth, np.nan)
    ax.bar(depth, safe, color="tab:red")
    if np.isfinite(safe).any():
        ax.set_yscale("log")
    ax.set_xticks(depth, [str(i) for i in depth])
    ax.set_title("mean |gradient| by depth", **small)
    ax.set_xlabel("layer index (input -> output)", fontsize=8)
    for a in axes.flat:
        a.tick_params(labelsize=7)
    return fig


PHASE_COLORS = {"forward": "tab:blue", "backward": "tab:red", "optimizer": "tab:green"}


def timeline_figure(fig: Figure, events: Sequence[tuple[int, str, str, str]], kinds: Sequence[str]) -> Figure:
    """Draw hook events as a lane chart: x is firing order, one lane per hook kind, labels name the place.

    ``events`` are ``(order, phase, kind, where)`` tuples; ``kinds`` fixes the lanes top to bottom.
    """
    fig.clear()
    ax = fig.add_subplot()
    lane = {k: i for i, k in enumerate(kinds)}
    for order, phase, kind, where in events:
        y = lane.get(kind)
        if y is None:
            continue
        ax.scatter([order], [y], s=36, color=PHASE_COLORS.get(phase, "gray"), zorder=3)
        ax.annotate(
            where,
            (order, y),
            xytext=(0, 6),
            textcoords="offset points",
            fontsize=6,
            rotation=45,
            ha="left",
            va="bottom",
        )
    ax.set_yticks(range(len(kinds)), list(kinds), fontsize=8)
    ax.set_ylim(-0.7, len(kinds) - 0.1)
    ax.invert_yaxis()
    ax.set_xlabel("firing order (forward in blue, backward in red)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", alpha=0.3)
    return fig
