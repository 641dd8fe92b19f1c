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

Legible on a projector: every text in every picture is at least :data:`MIN_TEXT_PX` pixels tall at
100 % zoom. Pillow text uses a :data:`FONT_PX` font; matplotlib charts are drawn under
:data:`CHART_STYLE` (sizes in points, and :func:`figure_png` renders at 72 dpi, so 1 pt = 1 px).
Panels have a fixed pixel size whatever they show, so a widget never jumps in height.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from PIL import Image, ImageDraw, ImageFont

from hookviz.guards import check_array, check_flag, check_int, check_number, check_png, check_str, check_strings, shown
from hookviz.i18n import N_, get_language, tr
from hookviz.summarize import Histogram

__all__ = [
    "BAD_COLOR",
    "CHART_STYLE",
    "FONT_PX",
    "MIN_TEXT_PX",
    "CJK_FONT_FILE",
    "cjk_font",
    "colorize",
    "feature_panel_png",
    "figure_png",
    "finite_range",
    "block_mean",
    "heat_strip",
    "heatmap_panel_png",
    "histogram_png",
    "join_png",
    "message_png",
    "monitor_figure",
    "figure_text",
    "use_cjk_font",
    "mosaic",
    "panel_font",
    "nice_ticks",
    "pace_png",
    "mosaic_png",
    "png_bytes",
    "stack_png",
    "step_label",
    "strip_png",
    "text_sizes_px",
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
    a = np.asarray(check_array(array, "array"), dtype=np.float32)
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
    a = check_array(a, "a")
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        return 0.0, 1.0
    return float(finite.min()), float(finite.max())


def mosaic(tiles: np.ndarray, cols: int | None = None, pad: int = 1, fill: float | int = np.nan) -> np.ndarray:
    """Tile ``K`` maps of shape ``(K, H, W)`` (or coloured ``(K, H, W, 3)``) into one image.

    ``cols`` defaults to about ``sqrt(K)``; tiles are separated by ``pad`` pixels of ``fill``.
    """
    m = check_array(tiles, "tiles", ndim=(3, 4), fix=N_("give (K, H, W) maps or (K, H, W, 3) coloured tiles"))
    k, h, w = m.shape[:3]
    if k == 0:
        raise ValueError(tr(f"tiles is an empty array (shape {m.shape}): give at least one tile"))
    cols = None if cols is None else check_int(cols, "cols", minimum=1)
    pad = check_int(pad, "pad", minimum=0)
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
    v = np.asarray(check_array(values, "values"), dtype=np.float32).reshape(-1)
    width = max(1, min(check_int(width, "width", minimum=1), v.size))
    rows = math.ceil(v.size / width)
    out = np.full(rows * width, np.nan, dtype=np.float32)
    out[: v.size] = v
    return out.reshape(rows, width)


def upscale(rgb: np.ndarray, min_width: int = 256, max_scale: int = 32) -> np.ndarray:
    """Enlarge an image by an integer factor (nearest neighbour) so that it is at least ``min_width`` wide."""
    rgb = check_array(rgb, "rgb", ndim=(2, 3))
    min_width = check_int(min_width, "min_width", minimum=0)
    max_scale = check_int(max_scale, "max_scale", minimum=1)
    h, w = rgb.shape[:2]
    scale = int(max(1, min(max_scale, math.ceil(min_width / max(w, 1)))))
    if scale == 1:
        return rgb
    return np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1)


def png_bytes(rgb: np.ndarray) -> bytes:
    """Encode an ``(H, W, 3)`` uint8 image as PNG (fast compression: these are redrawn on every click)."""
    if not isinstance(rgb, np.ndarray):
        raise TypeError(tr(f"rgb must be a numpy array of shape (H, W, 3) and dtype uint8, not {shown(rgb)}"))
    if rgb.dtype != np.uint8:
        raise TypeError(tr(f"rgb must be uint8 (0-255), not {rgb.dtype}: colorize() makes one from any numbers"))
    if rgb.ndim not in (2, 3) or (rgb.ndim == 3 and rgb.shape[2] not in (3, 4)):
        raise ValueError(tr(f"rgb must be of shape (H, W, 3), (H, W, 4) or (H, W), not {rgb.shape}"))
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
    maps = check_array(maps, "maps", ndim=3, fix=N_("give (K, H, W) feature maps: K maps of H x W"))
    if not maps.shape[0]:
        raise ValueError(tr(f"maps is an empty array (shape {maps.shape}): give at least one map"))
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
    v = np.asarray(check_array(values, "values"), dtype=np.float32).reshape(-1)
    width = check_int(width, "width", minimum=1)
    strip = heat_strip(v, width)
    rgb = colorize(strip, *(finite_range(v) if vmin is None or vmax is None else (vmin, vmax)), cmap)
    flat = rgb.reshape(-1, 3)
    flat[v.size :] = (255, 255, 255)
    return png_bytes(upscale(rgb, min_width))


def _check_figure(fig: Any) -> Figure:
    """``fig`` when it is a matplotlib ``Figure``, else a clear ``TypeError`` naming the argument."""
    if not isinstance(fig, Figure):
        raise TypeError(tr(f"fig must be a matplotlib Figure (matplotlib.figure.Figure()), not {shown(fig)}"))
    return fig


def _check_size(size: Any, minimum: tuple[int, int] = (1, 1)) -> tuple[int, int]:
    """``size`` as ``(width, height)`` in pixels, each a whole number of at least ``minimum``'s."""
    if isinstance(size, (str, bytes)) or not isinstance(size, Sequence) or len(size) != 2:
        raise TypeError(tr(f"size must be (width, height) in pixels, e.g. (300, 210), not {shown(size)}"))
    return (check_int(size[0], "size", minimum=minimum[0], fix=N_("the width, in pixels")),
            check_int(size[1], "size", minimum=minimum[1], fix=N_("the height, in pixels")))


def _check_pngs(pngs: Any) -> list[bytes]:
    """``pngs`` as a list of PNG pictures (bytes), at least one."""
    if isinstance(pngs, (str, bytes, bytearray)) or not isinstance(pngs, Sequence):
        raise TypeError(tr(f"pngs must be a list of PNG pictures (bytes), not {shown(pngs)}"))
    if not pngs:
        raise ValueError(tr("pngs is empty: give at least one PNG picture"))
    return [check_png(png, f"pngs[{i}]") for i, png in enumerate(pngs)]


def figure_png(fig: Figure, dpi: int = 72, palette: bool = True) -> bytes:
    """Render a matplotlib ``Figure`` to PNG bytes (Agg canvas; no pyplot state involved).

    With ``palette`` the picture is reduced to at most 256 colours first: charts lose nothing visible
    and the PNG is several times smaller (it travels to the browser and into the saved notebook).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    _check_figure(fig)
    dpi = check_number(dpi, "dpi", above=0)
    palette = check_flag(palette, "palette")
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


MIN_TEXT_PX = 11  # the smallest text any hookviz picture may hold, in pixels at 100 % zoom
FONT_PX = 13  # Pillow text size
CHART_DPI = 72  # figure_png's resolution: a matplotlib size in points is then a size in pixels
CHART_STYLE = {
    "font.size": 12,
    "axes.titlesize": 12,
    "axes.labelsize": 12,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "legend.fontsize": 11,
    "figure.titlesize": 12,
}
_TEXT = (0, 0, 0)
_GREY = (110, 110, 110)
_FONT: list[ImageFont.ImageFont | ImageFont.FreeTypeFont] = []


#: hookviz's own Chinese font: every character of its Chinese strings, cut from Noto Sans CJK SC (SIL Open Font
#: License, ``assets/fonts/OFL.txt``; rebuilt by ``scripts/make_cjk_font.py``). Most machines, Colab and Binder
#: included, have no font with Chinese glyphs, and matplotlib or Pillow would draw each character as a box.
CJK_FONT_FILE = "assets/fonts/hookviz-cjk-sc.otf"


@functools.cache
def cjk_font() -> tuple[str, str] | None:
    """``(family, file)`` of hookviz's Chinese font, registered with matplotlib (``None`` if the file is missing)."""
    from importlib import resources

    from matplotlib import font_manager

    path = resources.files("hookviz") / CJK_FONT_FILE
    if not path.is_file():
        return None
    font_manager.fontManager.addfont(str(path))
    return font_manager.FontProperties(fname=str(path)).get_name(), str(path)


def figure_text(text: str) -> str:
    """``text`` for a picture or chart: in the learner's language (:func:`hookviz.i18n.tr`), drawn with hookviz's
    own Chinese font (:func:`cjk_font`); in English if that font file is missing.

    Notebooks use it for their own figures' titles and axis labels, so that a zh notebook draws Chinese labels.
    """
    check_str(text, "text")
    if get_language() == "en":
        return text
    shown = tr(text)
    if shown == text:
        return text
    if not use_cjk_font():
        return text
    return shown


def use_cjk_font() -> bool:
    """Let matplotlib draw Chinese: hookviz's font becomes the last fallback of ``font.family`` (each glyph the
    other fonts lack is taken from it; nothing else changes). Charts made from now on use it; ``set_language("zh")``
    calls this (``hookviz/__init__.py`` registers it with :func:`hookviz.i18n.on_language_change`). Returns
    ``False`` when the font file is missing.
    """
    font = cjk_font()
    if font is None:
        return False
    families = list(matplotlib.rcParams["font.family"])
    if font[0] not in families:
        matplotlib.rcParams["font.family"] = [*families, font[0]]
    return True


def _font() -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    if not _FONT:
        _FONT.append(ImageFont.load_default(size=FONT_PX))
    if get_language_of_pictures() == "en":
        return _FONT[0]
    # Pillow's own font has no Chinese glyphs: a zh learner's pictures are drawn in hookviz's Chinese font
    if len(_FONT) == 1:
        font = cjk_font()
        _FONT.append(ImageFont.truetype(font[1], FONT_PX) if font is not None else _FONT[0])
    return _FONT[1]


def panel_font() -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    """The font of hookviz's Pillow pictures: Pillow's own, or hookviz's Chinese font for a zh learner."""
    return _font()


def get_language_of_pictures() -> str:
    """The language pictures are drawn in: the learner's (English only if hookviz's Chinese font is missing)."""
    language = get_language()
    return language if language == "en" or cjk_font() is not None else "en"


@functools.lru_cache(maxsize=4096)
def _glyphs_in(font: Any, text: str) -> tuple[Any, tuple[int, int]]:
    return font.getmask2(text, "L")


def _glyphs(text: str) -> tuple[Any, tuple[int, int]]:
    """The rendered mask of ``text`` in the panel font and its offset (text is drawn again and again)."""
    return _glyphs_in(_font(), text)


def _text(
    draw: ImageDraw.ImageDraw,
    xy: tuple[float, float],
    text: str,
    fill: tuple[int, int, int] = _TEXT,
    font: Any = None,
) -> None:
    """``draw.text(xy, text, fill=fill)`` in the panel font, with the glyphs of each string rendered once."""
    if not text:
        return
    mask, offset = _glyphs(text)
    ink = draw._getink(fill)[0]
    draw.draw.draw_bitmap((int(xy[0] + offset[0]), int(xy[1] + offset[1])), mask, ink)


def _axis_label(draw: ImageDraw.ImageDraw, label: str, left: float, plot_w: float, y: float) -> None:
    """An axis title in grey, centred under a plot that starts at ``left`` and is ``plot_w`` wide."""
    _text(draw, (left + (plot_w - draw.textlength(label, font=_font())) / 2, y), label, fill=_GREY, font=_font())


def _fit(draw: ImageDraw.ImageDraw, text: str, width: float) -> str:
    """``text``, shortened with an ellipsis so that it fits in ``width`` pixels."""
    font = _font()
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "…", font=font) > width:
        text = text[:-1]
    return text + "…"


def text_sizes_px(fig: Figure) -> list[float]:
    """Pixel height of every visible text of ``fig`` when drawn by :func:`figure_png` (points x dpi / 72).

    The legibility rule of every hookviz chart is ``min(text_sizes_px(fig)) >= MIN_TEXT_PX``.
    """
    from matplotlib.text import Text

    _check_figure(fig)
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return [t.get_fontsize() * CHART_DPI / 72 for t in texts]


def message_png(text: str, size: tuple[int, int] = (300, 210)) -> bytes:
    """A panel of the given size that says why there is nothing to draw (instead of empty axes)."""
    check_str(text, "text")
    size = _check_size(size)
    img = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(img)
    y = size[1] // 2 - 20
    for line in _wrap(draw, text, size[0] - 16):
        draw.text((8, y), line, fill=_GREY, font=_font())
        y += FONT_PX + 4
    return png_bytes(np.asarray(img))


def _wrap(draw: ImageDraw.ImageDraw, text: str, width: float) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and draw.textlength(f"{lines[-1]} {word}", font=_font()) <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines or [""]


def nice_ticks(lo: float, hi: float, most: int = 5) -> list[float]:
    """At most ``most`` round values (steps of 1, 2 or 5 x 10^k) inside ``[lo, hi]``, at least two when ``lo < hi``;
    ``[lo]`` when ``lo == hi`` (one value: one tick, the only one inside the range).

    Ticks a reader can label and read on a projector: ``nice_ticks(-3.2, 4.1)`` is ``[-2, 0, 2, 4]``.
    """
    lo, hi = check_number(lo, "lo"), check_number(hi, "hi")
    most = check_int(most, "most", minimum=2)
    if hi < lo:
        raise ValueError(tr(f"lo must not be above hi, not lo={lo:g}, hi={hi:g}"))
    if hi == lo:
        return [lo]
    raw = (hi - lo) / max(most - 1, 1)
    for step in sorted(
        m * 10.0**k for k in range(math.floor(math.log10(raw)) - 1, math.ceil(math.log10(raw)) + 2) for m in (1, 2, 5)
    ):
        first = math.ceil(lo / step - 1e-9)
        ticks = [(first + i) * step for i in range(int(math.floor(hi / step + 1e-9)) - first + 1)]
        if 2 <= len(ticks) <= most:
            return [0.0 if abs(t) < step * 1e-9 else float(f"{t:.12g}") for t in ticks]
    return [lo, hi]


def step_label(value: float) -> str:
    """A short label for a step count: ``750``, ``1.5k``, ``12k``, ``2.5M`` (no labels run together)."""
    value = check_number(value, "value", finite=False)
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if abs(value) >= size * 0.9995:  # 999,750 is "1M", not "1e+03k"
            return f"{value / size:.3g}{unit}"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"


def _tick_text(value: float) -> str:
    return "0" if value == 0 else f"{value:.3g}"


def log_ticks(lo: float, hi: float, most: int = 5) -> list[float]:
    """Ticks for a log axis over ``[lo, hi]`` (both > 0): decades, or 1-2-5 steps when fewer than three decades
    fit, so that even a range inside one decade gets at least two labelled ticks."""
    if not (lo > 0 and hi > lo):
        return [lo] if lo > 0 else []
    for subs in ((1.0,), (1.0, 2.0, 5.0), (1.0, 2.0, 3.0, 5.0, 7.0), tuple(float(m) for m in range(1, 10))):
        ticks = [
            float(f"{m * 10.0**k:.6g}")
            for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            for m in subs
            if lo * (1 - 1e-9) <= m * 10.0**k <= hi * (1 + 1e-9)
        ]
        if len(ticks) >= 3 or subs[-1] == 9.0:
            if len(ticks) > most:
                ticks = ticks[:: math.ceil(len(ticks) / most)]
            return ticks
    return [lo, hi]


def _sci_text(value: float) -> str:
    """``2e-06`` → ``2e-6``: the shortest label of a positive value on a log axis."""
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def pace_png(
    steps: np.ndarray,
    loss: np.ndarray,
    layer_names: Sequence[str],
    grad_by_depth: np.ndarray,
    size: tuple[int, int] = (740, 200),
) -> bytes:
    """The monitor's two fast charts, drawn straight into pixels with Pillow (a few ms): loss over steps,
    and mean |gradient| by layer on a log axis.

    Cheap enough to redraw with the live row several times a second, so these charts always show the
    step of the status line. Every axis carries labelled ticks at round values: steps as ``750``,
    ``1.5k``, ``12k`` (never running together), the gradient axis at decades or 1-2-5 steps.
    """
    steps = np.asarray(check_array(steps, "steps", ndim=1), dtype=np.float64)
    loss = np.asarray(check_array(loss, "loss", ndim=1), dtype=np.float64)
    if len(loss) != len(steps):
        raise ValueError(tr(f"loss must have one value per step: {len(loss)} values for {len(steps)} steps"))
    layer_names = check_strings(layer_names, "layer_names")
    grad_by_depth = check_array(grad_by_depth, "grad_by_depth", ndim=1)
    width, height = size = _check_size(size, (300, 100))
    img = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(img)
    font = _font()
    line = FONT_PX + 4
    half = width // 2
    top, bottom = 6 + line + 4, 2 * line + 4
    plot_h = height - top - bottom
    # ---- left: loss over steps
    left, right = 52, half - 14
    plot_w = right - left
    finite = np.isfinite(loss)
    title = figure_text(f"loss, up to step {int(steps[-1])}") if len(steps) else figure_text("loss")
    _text(draw, (4, 4), _fit(draw, title, half - 8), fill=_TEXT, font=font)
    draw.line([(left, top + plot_h), (right, top + plot_h)], fill=_TEXT)
    draw.line([(left, top), (left, top + plot_h)], fill=_TEXT)
    if len(steps) and finite.any():
        x_lo = float(steps[0]) if len(steps) > 1 else 0.0
        x_hi = float(steps[-1]) if steps[-1] > x_lo else x_lo + 1.0
        y_lo, y_hi = float(loss[finite].min()), float(loss[finite].max())
        if y_hi <= y_lo:
            y_lo, y_hi = y_lo - 0.5, y_hi + 0.5
        pad = 0.05 * (y_hi - y_lo)
        y_lo, y_hi = y_lo - pad, y_hi + pad

        def to_x(v: float) -> float:
            return left + (v - x_lo) / (x_hi - x_lo) * plot_w

        def to_y(v: float) -> float:
            return top + plot_h * (1.0 - (v - y_lo) / (y_hi - y_lo))

        for tick in nice_ticks(y_lo, y_hi, most=4):
            y = to_y(tick)
            draw.line([(left - 3, y), (left, y)], fill=_TEXT)
            text = _tick_text(tick)
            _text(draw, (left - 6 - draw.textlength(text, font=font), y - FONT_PX / 2 - 1), text, fill=_TEXT, font=font)
        for tick in nice_ticks(x_lo, x_hi, most=max(2, min(5, plot_w // 70))):
            x = to_x(tick)
            text = step_label(tick)
            w = draw.textlength(text, font=font)
            draw.line([(x, top + plot_h), (x, top + plot_h + 3)], fill=_TEXT)
            _text(draw, (min(max(x - w / 2, 2), right - w + 8), top + plot_h + 4), text, fill=_TEXT, font=font)
        points = [(to_x(float(a)), to_y(float(b))) for a, b in zip(steps[finite], loss[finite], strict=True)]
        if len(points) > 1:
            draw.line(points, fill=_TEXT, width=2)
        else:
            x, y = points[0]
            draw.ellipse([x - 2, y - 2, x + 2, y + 2], fill=_TEXT)
    else:
        _text(draw, (left + 8, top + plot_h // 2 - 8), figure_text("no steps yet"), fill=_GREY, font=font)
    label = figure_text("step")
    _axis_label(draw, label, left, plot_w, top + plot_h + 4 + line)
    # ---- right: mean |gradient| by layer, log axis
    names = [str(n) for n in layer_names]
    name_w = max((draw.textlength(n, font=font) for n in names), default=0.0)
    left = int(half + 8 + min(name_w, 110) + 6)
    right = width - 14
    plot_w = right - left
    title = figure_text("mean |gradient|, last steps")  # in the learner's language, as the detailed chart's
    _text(draw, (half + 4, 4), _fit(draw, title, width - half - 8), fill=_TEXT, font=font)
    values = np.asarray(grad_by_depth, dtype=np.float64)
    good = np.isfinite(values) & (values > 0)
    draw.line([(left, top + plot_h), (right, top + plot_h)], fill=_TEXT)
    draw.line([(left, top), (left, top + plot_h)], fill=_TEXT)
    n = max(len(names), 1)
    bar_h = plot_h / n
    if good.any():
        v_lo, v_hi = float(values[good].min()), float(values[good].max())
        lo_exp, hi_exp = math.log10(v_lo) - 0.15, math.log10(v_hi) + 0.15
        if hi_exp - lo_exp < 1.0:  # at least one decade wide: a few 1-2-5 ticks always fit
            middle = (hi_exp + lo_exp) / 2
            lo_exp, hi_exp = middle - 0.5, middle + 0.5

        def to_bx(v: float) -> float:
            return left + (math.log10(v) - lo_exp) / (hi_exp - lo_exp) * plot_w

        for tick in log_ticks(10.0**lo_exp, 10.0**hi_exp, most=max(2, min(5, plot_w // 60))):
            x = to_bx(tick)
            text = _sci_text(tick)
            w = draw.textlength(text, font=font)
            draw.line([(x, top), (x, top + plot_h + 3)], fill=(225, 225, 225))
            draw.line([(x, top + plot_h), (x, top + plot_h + 3)], fill=_TEXT)
            _text(draw, (min(max(x - w / 2, left - 8), width - w - 2), top + plot_h + 4), text, fill=_TEXT, font=font)
        for i, value in enumerate(values):
            if good[i]:
                y0 = top + i * bar_h + 0.18 * bar_h
                draw.rectangle(
                    [left + 1, y0, max(left + 1, to_bx(float(value))), y0 + 0.64 * bar_h], fill=(214, 39, 40)
                )
    else:
        _text(draw, (left + 8, top + plot_h // 2 - 8), figure_text("no gradient yet"), fill=_GREY, font=font)
    for i, name in enumerate(names):
        text = _fit(draw, name, 110)
        y = top + (i + 0.5) * bar_h - FONT_PX / 2 - 1
        _text(draw, (left - 6 - draw.textlength(text, font=font), y), text, fill=_TEXT, font=font)
    label = figure_text("mean |gradient| (log scale)")
    _axis_label(draw, label, left, plot_w, top + plot_h + 4 + line)
    buf = io.BytesIO()  # few colours: a palette PNG is smaller and quicker to send than RGB
    img.quantize(colors=32, method=Image.Quantize.FASTOCTREE).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


_HISTOGRAM_PNGS: dict[tuple[Any, ...], bytes] = {}  # the last pictures drawn: a widget shows the same one again


def histogram_png(
    hist: Histogram,
    title: str = "",
    log: bool = False,
    size: tuple[int, int] = (300, 210),
    color: tuple[int, int, int] = (230, 120, 30),
    x_label: str = "",
) -> bytes:
    """Draw a histogram straight into pixels with Pillow and return PNG bytes (about 1 ms, no matplotlib).

    The same histogram with the same labels comes back from a small cache (a widget going back to a layer
    it showed before redraws nothing).
    """
    if not isinstance(hist, Histogram):
        raise TypeError(tr(f"hist must be a Histogram (hookviz.summarize.histogram(values) makes one), "
                           f"not {shown(hist)}"))
    check_str(title, "title")
    check_str(x_label, "x_label")
    log = check_flag(log, "log")
    size = _check_size(size, (120, 130))
    counts, edges = np.asarray(hist.counts), np.asarray(hist.edges)
    key = (
        counts.tobytes(),
        counts.dtype.str,
        edges.tobytes(),
        hist.total,
        hist.nan,
        hist.inf,
        hist.zeros,
        title,
        log,
        size,
        color,
        x_label,
    )
    png = _HISTOGRAM_PNGS.get(key)
    if png is None:
        png = _draw_histogram_png(hist, title, log, size, color, x_label)
        if len(_HISTOGRAM_PNGS) >= 256:
            _HISTOGRAM_PNGS.clear()
        _HISTOGRAM_PNGS[key] = png
    return png


def _draw_histogram_png(
    hist: Histogram,
    title: str,
    log: bool,
    size: tuple[int, int],
    color: tuple[int, int, int],
    x_label: str,
) -> bytes:
    """The drawing of :func:`histogram_png`.

    Bars over the finite range, labelled ticks at round values under the axis (:func:`nice_ticks`), a
    grey line at x = 0 labelled ``0`` when it is inside the range, ``x_label`` on a row of its own
    under the tick labels (so it never reads as a tick), the largest count on the left, a title line,
    a line with the NaN/Inf counts (red when any) and, when exact zeros were left out
    (``hist.zeros``), how many. ``log`` scales bar heights by ``log10(1 + count)`` so that small tails
    stay visible.
    """
    width, height = size
    line = FONT_PX + 4
    lines = 3 if hist.zeros is not None else 2
    left, right, top, bottom = 46, 12, 6 + lines * line + 4, (3 if x_label else 2) * line + 2
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
    draw.line([(left, top + plot_h), (left + plot_w, top + plot_h)], fill=_TEXT)
    draw.line([(left, top), (left, top + plot_h)], fill=_TEXT)
    # multiples of a round step: 0 is a tick whenever the range holds it, so the zero line is labelled
    for tick in nice_ticks(lo, hi, most=max(2, min(6, plot_w // 50))):
        x = left + (tick - lo) / span * plot_w
        text = _tick_text(tick)
        w = draw.textlength(text, font=font)
        draw.line([(x, top + plot_h), (x, top + plot_h + 3)], fill=_TEXT)
        _text(draw, (min(max(x - w / 2, 2), width - w - 2), top + plot_h + 4), text, fill=_TEXT, font=font)
    if x_label:
        label = _fit(draw, x_label, plot_w)
        _axis_label(draw, label, left, plot_w, top + plot_h + 4 + line)
    if not counts.any():
        _text(draw, (left + 8, top + plot_h // 2 - 8), figure_text("no values to draw"), fill=_GREY, font=font)
    peak_count = int(counts.max()) if counts.size else 0
    _text(draw, (4, top), f"{peak_count}", fill=_TEXT, font=font)
    _text(draw, (4, top + line), figure_text("log" if log else "count"), fill=_GREY, font=font)
    _text(draw, (4, 4), _fit(draw, title, width - 8), fill=_TEXT, font=font)
    bad = hist.nan or hist.inf
    _text(
        draw,
        (4, 4 + line),
        _fit(draw, figure_text(f"NaN {hist.nan} · Inf {hist.inf} · {hist.total} values"), width - 8),
        fill=(200, 0, 0) if bad else _TEXT,
        font=font,
    )
    if hist.zeros is not None:
        _text(draw, (4, 4 + 2 * line), figure_text(f"exact zeros: {hist.zeros} (not drawn)"), fill=_GREY, font=font)
    return png_bytes(np.asarray(img))


def _tile_layout(k: int, h: int, w: int, area_w: int, area_h: int, label_h: int, gap: int) -> tuple[int, int]:
    """``(cols, scale)``: the column count that gives ``k`` tiles of ``h x w`` the largest integer zoom."""
    best = (1, 0)
    for cols in range(1, k + 1):
        rows = math.ceil(k / cols)
        sx = (area_w - (cols - 1) * gap) // (cols * w)
        sy = (area_h - rows * label_h - (rows - 1) * gap) // (rows * h)
        scale = min(sx, sy)
        if scale > best[1]:
            best = (cols, scale)
    return best[0], max(1, best[1])


def feature_panel_png(
    values: np.ndarray,
    labels: Sequence[str] | None = None,
    *,
    vmin: float | None = None,
    vmax: float | None = None,
    title: str = "",
    image: np.ndarray | None = None,
    image_caption: str = "",
    size: tuple[int, int] = (430, 290),
    cmap: str = "viridis",
) -> bytes:
    """Feature maps or a vector as one panel of a fixed pixel size, drawn with Pillow (a few ms).

    ``values`` is ``(K, H, W)`` (K channel maps, drawn as enlarged tiles, nearest neighbour, numbered
    with ``labels`` above each tile) or 1-D (a heat strip whose cells are labelled with ``labels``
    below them, e.g. class names for logits). Every tile shares one colour scale (``vmin``/``vmax``,
    default the finite range), shown by a colour bar on the right; NaN/Inf are magenta. ``image``, a
    2-D array, is drawn on the left in grey with ``image_caption`` under it (the input the maps come
    from). The panel is always ``size`` pixels, whatever it shows.
    """
    v = np.asarray(check_array(values, "values"), dtype=np.float32)
    width, height = _check_size(size, (160, 100))
    img = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(img)
    font = _font()
    line = FONT_PX + 4
    draw.text((6, 3), _fit(draw, title, width - 12), fill=_TEXT, font=font)
    top = line + 8
    x0 = 6
    if image is not None:
        pic = np.asarray(image, dtype=np.float32).reshape(np.asarray(image).shape[-2:])
        box = 84
        scale = max(1, box // max(pic.shape))
        gray = colorize(pic, cmap="gray")
        gray = np.repeat(np.repeat(gray, scale, axis=0), scale, axis=1)
        img.paste(Image.fromarray(gray), (x0, top + line))
        draw.text((x0, top), figure_text("input"), fill=_GREY, font=font)
        for i, text in enumerate(_wrap(draw, image_caption, box + 6)[:3]):
            draw.text((x0, top + line + gray.shape[0] + 4 + i * line), text, fill=_TEXT, font=font)
        x0 += box + 14
    lo, hi = finite_range(v) if vmin is None or vmax is None else (float(vmin), float(vmax))
    bar_x = width - 64
    area_w, area_h = bar_x - 10 - x0, height - top - 6
    if v.size == 0:
        draw.text((x0, top + area_h // 2), "nothing to draw: no values", fill=_GREY, font=font)
        return png_bytes(np.asarray(img))
    if v.ndim == 1 and v.size > 64:  # a long vector: rows of cells, without per-cell labels
        per_row = min(v.size, 64)
        grid = np.zeros(math.ceil(v.size / per_row) * per_row, dtype=np.float32)
        grid[: v.size] = v
        return heatmap_panel_png(
            grid.reshape(-1, per_row),
            vmin=lo,
            vmax=hi,
            title=title,
            image=image,
            image_caption=image_caption,
            size=size,
            cmap=cmap,
            count=v.size,
        )
    rgb = colorize(v, lo, hi, cmap)
    if v.ndim == 3:
        k, h, w = v.shape
        labels = list(labels) if labels is not None else [str(i) for i in range(k)]
        label_h, gap = line, 4
        cols, scale = _tile_layout(k, h, w, area_w, area_h, label_h, gap)
        rows = math.ceil(k / cols)
        tw, th = w * scale, h * scale
        show_labels = max(draw.textlength(t, font=font) for t in labels) <= tw + gap
        used_w = cols * tw + (cols - 1) * gap
        used_h = rows * (th + (label_h if show_labels else 0)) + (rows - 1) * gap
        ox, oy = x0 + max(0, (area_w - used_w) // 2), top + max(0, (area_h - used_h) // 2)
        for i in range(k):
            r, c = divmod(i, cols)
            tx = ox + c * (tw + gap)
            ty = oy + r * (th + gap + (label_h if show_labels else 0))
            if show_labels:
                draw.text((tx, ty), labels[i], fill=_TEXT, font=font)
                ty += label_h
            tile = np.repeat(np.repeat(rgb[i], scale, axis=0), scale, axis=1)
            img.paste(Image.fromarray(tile), (tx, ty))
    else:
        flat = rgb.reshape(-1, 3)
        n = len(flat)
        labels = list(labels) if labels is not None else [str(i) for i in range(n)]
        per_row = min(n, 16)
        rows = math.ceil(n / per_row)
        row_label_w = 0 if rows == 1 else 34
        cell = max(4, min(40, (area_w - row_label_w) // per_row, (area_h // rows) - line - 2))
        ox = x0 + row_label_w
        oy = top + max(0, (area_h - rows * (cell + line + 2)) // 2)
        fits = max(draw.textlength(t, font=font) for t in labels) <= cell + 2
        for i in range(n):
            r, c = divmod(i, per_row)
            cx, cy = ox + c * cell, oy + r * (cell + line + 2)
            draw.rectangle([cx, cy, cx + cell - 2, cy + cell - 2], fill=tuple(int(x) for x in flat[i]))
            if fits:
                t = labels[i]
                draw.text((cx + (cell - 2 - draw.textlength(t, font=font)) / 2, cy + cell), t, fill=_TEXT, font=font)
            if c == 0 and rows > 1:
                draw.text((x0, cy + (cell - line) / 2), str(i), fill=_GREY, font=font)
    _colour_bar(img, draw, bar_x, top, lo, hi, cmap)
    return png_bytes(np.asarray(img))


def _colour_bar(
    img: Image.Image, draw: ImageDraw.ImageDraw, bar_x: int, top: int, lo: float, hi: float, cmap: str
) -> None:
    """The colour bar on the right of a panel: the shared scale of everything drawn in it."""
    line = FONT_PX + 4
    bar_top, bar_bottom = top + line, img.height - line - 8
    ramp = colorize(np.linspace(1.0, 0.0, max(2, bar_bottom - bar_top))[:, None].repeat(12, axis=1), 0.0, 1.0, cmap)
    img.paste(Image.fromarray(ramp), (bar_x, bar_top))
    draw.rectangle([bar_x - 1, bar_top - 1, bar_x + 12, bar_top + ramp.shape[0]], outline=_GREY)
    draw.text((bar_x - 6, top), f"{hi:.3g}", fill=_TEXT, font=_font())
    draw.text((bar_x - 6, bar_bottom + 3), f"{lo:.3g}", fill=_TEXT, font=_font())


def block_mean(
    values: np.ndarray, max_rows: int, max_cols: int, real: np.ndarray | None = None
) -> tuple[np.ndarray, tuple[int, int], np.ndarray]:
    """Shrink a 2-D array to at most ``max_rows x max_cols`` by averaging blocks.

    Returns the smaller array, the block size ``(rows, cols)`` and which of its cells hold any real
    entry (``real`` marks the entries that are values rather than padding; all of them by default).
    NaN/Inf stay visible: a block holding any non-finite value becomes NaN (drawn magenta), so a
    single bad value is never averaged away. An array that fits comes back as it is, block ``(1, 1)``.
    """
    a = np.asarray(check_array(values, "values", ndim=2), dtype=np.float32)
    max_rows, max_cols = check_int(max_rows, "max_rows", minimum=1), check_int(max_cols, "max_cols", minimum=1)
    rows, cols = a.shape
    mask = np.ones(a.shape, dtype=bool) if real is None else np.asarray(real, dtype=bool)
    fy, fx = max(1, math.ceil(rows / max(1, max_rows))), max(1, math.ceil(cols / max(1, max_cols)))
    if fy == 1 and fx == 1:
        return a, (1, 1), mask
    shape = (math.ceil(rows / fy) * fy, math.ceil(cols / fx) * fx)
    padded = np.zeros(shape, dtype=np.float32)
    padded[:rows, :cols] = a
    keep = np.zeros(shape, dtype=bool)
    keep[:rows, :cols] = mask

    def blocks(x: np.ndarray) -> np.ndarray:
        return (
            x.reshape(shape[0] // fy, fy, shape[1] // fx, fx)
            .transpose(0, 2, 1, 3)
            .reshape(shape[0] // fy, shape[1] // fx, fy * fx)
        )

    b, k = blocks(padded), blocks(keep)
    bad = (~np.isfinite(b) & k).any(axis=2)
    total = np.where(k, np.nan_to_num(b, nan=0.0, posinf=0.0, neginf=0.0), 0.0).sum(axis=2)
    out = (total / np.maximum(k.sum(axis=2), 1)).astype(np.float32)
    out[bad] = np.nan
    return out, (fy, fx), k.any(axis=2)


def heatmap_panel_png(
    values: np.ndarray,
    *,
    row_label: str = N_("position"),
    col_label: str = N_("feature"),
    vmin: float | None = None,
    vmax: float | None = None,
    title: str = "",
    image: np.ndarray | None = None,
    image_caption: str = "",
    size: tuple[int, int] = (430, 290),
    cmap: str = "viridis",
    count: int | None = None,
) -> bytes:
    """A 2-D output that is not an image - ``(positions, features)`` of a sequence model - as one heat map.

    Rows are ``row_label`` (a token or time step), columns ``col_label`` (a hidden unit, a class). The
    map is enlarged to fill the panel, or averaged in blocks when it has more rows or columns than
    the panel has pixels (the caption under it says so). Same frame as :func:`feature_panel_png`:
    fixed ``size``, the input on the left when ``image`` is given, one colour bar, NaN/Inf magenta.
    ``count``: only the first ``count`` entries in row-major order are values (a long vector laid out
    in rows); the cells after them are drawn white, not as values.
    """
    v = np.asarray(check_array(values, "values", ndim=2, fix=N_("give (rows, columns): positions x features")),
                   dtype=np.float32)
    width, height = _check_size(size, (160, 100))
    img = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(img)
    font = _font()
    line = FONT_PX + 4
    draw.text((6, 3), _fit(draw, title, width - 12), fill=_TEXT, font=font)
    top = line + 8
    x0 = 6
    if image is not None:
        pic = np.asarray(image, dtype=np.float32).reshape(np.asarray(image).shape[-2:])
        box = 84
        scale = max(1, box // max(pic.shape))
        gray = colorize(pic, cmap="gray")
        gray = np.repeat(np.repeat(gray, scale, axis=0), scale, axis=1)[:box, :box]
        img.paste(Image.fromarray(gray), (x0, top + line))
        draw.text((x0, top), figure_text("input"), fill=_GREY, font=font)
        for i, text in enumerate(_wrap(draw, image_caption, box + 6)[:3]):
            draw.text((x0, top + line + gray.shape[0] + 4 + i * line), text, fill=_TEXT, font=font)
        x0 += box + 14
    lo, hi = finite_range(v) if vmin is None or vmax is None else (float(vmin), float(vmax))
    bar_x = width - 64
    area_w, area_h = bar_x - 10 - x0, height - top - 2 * line - 10
    if v.size == 0:
        draw.text((x0, top + area_h // 2), "nothing to draw: no values", fill=_GREY, font=font)
        return png_bytes(np.asarray(img))
    rows, cols = v.shape
    real = None if count is None else (np.arange(v.size) < count).reshape(v.shape)
    small, (fy, fx), filled = block_mean(v, area_h, area_w, real)
    rgb = colorize(small, lo, hi, cmap)
    rgb[~filled] = (255, 255, 255)
    sy = max(1, area_h // small.shape[0])
    sx = max(1, area_w // small.shape[1])
    scale = min(sx, sy) if min(sx, sy) * 4 >= max(sx, sy) else None  # square cells unless very lopsided
    sy, sx = (scale, scale) if scale else (sy, sx)
    tile = np.repeat(np.repeat(rgb, sy, axis=0), sx, axis=1)
    oy = top + line
    img.paste(Image.fromarray(tile), (x0, oy))
    row_label, col_label = figure_text(row_label), figure_text(col_label)
    head = N_(f"rows: {row_label} 0-{rows - 1}") if count is None else N_(f"{count} values in rows of {cols}")
    head = figure_text(head)
    draw.text((x0, top), _fit(draw, head, area_w), fill=_GREY, font=font)
    caption = (
        N_(f"columns: {col_label} 0-{cols - 1}")
        if count is None
        else N_(f"value i: row i // {cols}, column i % {cols}")
    )
    if (fy, fx) != (1, 1):
        caption += f" · mean of {fy}x{fx} blocks"
    caption = " · ".join(figure_text(part) for part in caption.split(" · "))
    draw.text((x0, oy + tile.shape[0] + 3), _fit(draw, caption, area_w), fill=_GREY, font=font)
    _colour_bar(img, draw, bar_x, top, lo, hi, cmap)
    return png_bytes(np.asarray(img))


def join_png(pngs: Sequence[bytes], gap: int = 8) -> bytes:
    """Put PNG pictures side by side (top-aligned, on white) into one PNG: a widget's static view."""
    gap = check_int(gap, "gap", minimum=0)
    images = [Image.open(io.BytesIO(p)).convert("RGB") for p in _check_pngs(pngs)]
    width = sum(i.width for i in images) + gap * (len(images) - 1)
    out = Image.new("RGB", (width, max(i.height for i in images)), (255, 255, 255))
    x = 0
    for i in images:
        out.paste(i, (x, 0))
        x += i.width + gap
    return png_bytes(np.asarray(out))


def stack_png(pngs: Sequence[bytes], gap: int = 8) -> bytes:
    """Put PNG pictures one under the other (left-aligned, on white) into one 256-colour PNG."""
    gap = check_int(gap, "gap", minimum=0)
    images = [Image.open(io.BytesIO(p)).convert("RGB") for p in _check_pngs(pngs)]
    out = Image.new(
        "RGB", (max(i.width for i in images), sum(i.height for i in images) + gap * (len(images) - 1)), (255, 255, 255)
    )
    y = 0
    for i in images:
        out.paste(i, (0, y))
        y += i.height + gap
    buf = io.BytesIO()
    out.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def _message(fig: Figure, text: str) -> Figure:
    fig.clear()
    fig.text(0.5, 0.5, figure_text(text), ha="center", va="center", fontsize=CHART_STYLE["font.size"], color="0.35")
    return fig


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
    grad_zero_fraction: float | None = None,
    steps_per_point: int = 1,
) -> Figure:
    """Draw the training monitor's charts into ``fig`` (cleared first) and return it.

    Rows: loss and mean |gradient| by layer (named, input side at the top); activation mean and std
    per layer over steps (one legend under them, never over the lines); the "colorful dimension"
    (histogram of |activation| of ``selected`` per point of the history, log colour) and the
    histogram of log10|gradient| of ``selected`` (exact zeros are left out and their share is named).
    Step axes have at most four integer ticks labelled ``750``, ``1.5k``, ``12k`` (never running
    together) and always span the whole run; the gradient axis is logarithmic with labelled decades, or
    1-2-5 ticks when the bars lie within about one decade.
    """
    from matplotlib import rc_context
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter, NullLocator

    def step_axis(axis: Any) -> None:
        axis.set_major_locator(MaxNLocator(nbins=4, integer=True))
        axis.set_major_formatter(FuncFormatter(lambda v, _: step_label(v)))

    _check_figure(fig)
    steps = check_array(steps, "steps", ndim=1)
    loss = check_array(loss, "loss", ndim=1)
    if len(loss) != len(steps):
        raise ValueError(tr(f"loss must have one value per step: {len(loss)} values for {len(steps)} steps"))
    layer_names = check_strings(layer_names, "layer_names")
    check_str(selected, "selected")
    if selected not in layer_names:
        raise ValueError(tr(f"selected={selected!r} is not one of layer_names {shown(layer_names)}"))
    if not len(steps):
        return _message(fig, "no steps yet: press Train, or call monitor.run(steps)")
    fig.clear()
    zeros = "" if grad_zero_fraction is None else f", {100 * grad_zero_fraction:.0f}% zeros not shown"
    # In the learner's language (figure_text), looked up before rc_context: figure_text may add a Chinese font
    words = {
        text: figure_text(text)
        for text in (
            "loss",
            "step",
            "no gradient yet",
            "mean |gradient|, last steps",
            N_("activation mean"),
            N_("activation std"),
            N_("no non-zero gradient"),
        )
    }
    words |= {
        key: figure_text(text)
        for key, text in (
            ("colorful", N_(f"|activation| over steps: {selected}")),
            ("histogram", N_(f"log10 |gradient|: {selected}")),
            ("gradient axis", f"log10 |gradient|{zeros}"),
        )
    }
    with rc_context(CHART_STYLE):
        n = len(layer_names)
        legend_rows = math.ceil(n / 3)
        grid = fig.add_gridspec(4, 2, height_ratios=(1, 1, 0.12 + 0.09 * legend_rows, 1), hspace=0.7, wspace=0.32)
        fig.subplots_adjust(left=0.1, right=0.97, top=0.95, bottom=0.08)
        ax = fig.add_subplot(grid[0, 0])
        ax.plot(steps, loss, lw=1.2, color="black")
        ax.set_title(words["loss"])
        ax.set_xlabel(words["step"])
        step_axis(ax.xaxis)
        ax = fig.add_subplot(grid[0, 1])
        safe = np.where(np.isfinite(grad_by_depth) & (grad_by_depth > 0), grad_by_depth, np.nan)
        ypos = np.arange(n)
        ax.barh(ypos, np.nan_to_num(safe, nan=0.0), color="tab:red")
        ax.set_yticks(ypos, list(layer_names))
        ax.invert_yaxis()
        if np.isfinite(safe).any():
            lo, hi = float(np.nanmin(safe)), float(np.nanmax(safe))
            lo_exp, hi_exp = math.log10(lo) - 0.15, math.log10(hi) + 0.15
            if hi_exp - lo_exp < 1.0:  # a one-decade-wide axis at least, so that several ticks fit
                middle = (lo_exp + hi_exp) / 2
                lo_exp, hi_exp = middle - 0.5, middle + 0.5
            ax.set_xscale("log")
            ax.set_xlim(10.0**lo_exp, 10.0**hi_exp)
            ax.xaxis.set_major_locator(FixedLocator(log_ticks(10.0**lo_exp, 10.0**hi_exp, most=4)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _sci_text(v)))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_minor_formatter(NullFormatter())
        else:
            ax.text(0.5, 0.5, words["no gradient yet"], ha="center", va="center", transform=ax.transAxes, color="0.35")
        ax.set_title(words["mean |gradient|, last steps"])
        lines = []
        for col, (values, title) in enumerate(((act_mean, N_("activation mean")), (act_std, N_("activation std")))):
            ax = fig.add_subplot(grid[1, col])
            for j in range(n):
                (ln,) = ax.plot(steps, values[:, j], lw=1.2)
                if col == 0:
                    lines.append(ln)
            ax.set_title(words[title])
            step_axis(ax.xaxis)
        legend_ax = fig.add_subplot(grid[2, :])
        legend_ax.set_axis_off()
        legend_ax.legend(lines, list(layer_names), ncols=3, loc="center", frameon=False)
        ax = fig.add_subplot(grid[3, 0])
        if colorful.size:
            img = np.log1p(np.asarray(colorful).T)  # (bins, points): low values at the bottom
            first = float(steps[0]) - steps_per_point
            ax.imshow(
                img,
                aspect="auto",
                origin="lower",
                cmap="viridis",
                extent=(first, float(steps[-1]), 0.0, colorful_limit),
                interpolation="nearest",
            )
            step_axis(ax.xaxis)
        ax.set_title(words["colorful"])
        ax.set_xlabel(words["step"])
        ax = fig.add_subplot(grid[3, 1])
        if np.asarray(grad_hist).sum() > 0:
            ax.stairs(grad_hist, grad_edges, fill=True, color="tab:orange", alpha=0.8)
        else:
            ax.text(
                0.5, 0.5, words["no non-zero gradient"], ha="center", va="center", transform=ax.transAxes, color="0.35"
            )
        ax.set_title(words["histogram"])
        ax.set_xlabel(words["gradient axis"])
    return fig


PHASE_COLORS = {"forward": "tab:blue", "backward": "tab:red", "optimizer": "tab:green"}


def timeline_figure(fig: Figure, events: Sequence[tuple[int, str, str, str]], kinds: Sequence[str]) -> Figure:
    """Draw hook events as a chart: x is the firing order, one row per place, colour and marker by kind.

    ``events`` are ``(order, phase, kind, where)`` tuples; ``kinds`` fixes the legend order. Places
    are rows (labelled, in first-firing order), so no label is rotated or overlaps another; the legend
    of kinds sits under the chart. An empty selection draws a message, not empty axes.
    """
    from matplotlib import rc_context
    from matplotlib.ticker import MaxNLocator

    _check_figure(fig)
    if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
        raise TypeError(tr(f"events must be a list of (order, phase, kind, where) tuples, not {shown(events)}"))
    for event in events:
        if isinstance(event, (str, bytes)) or not isinstance(event, Sequence) or len(event) != 4:
            raise ValueError(tr(f"events must hold (order, phase, kind, where) tuples; it holds {shown(event)}"))
    kinds = check_strings(kinds, "kinds")
    if not events:
        return _message(fig, N_("no hook calls match these filters"))
    fig.clear()
    markers = "os^vDP*Xph"
    order, backward_text = figure_text("firing order"), figure_text("backward")  # before rc_context, as above
    with rc_context(CHART_STYLE):
        ax = fig.add_axes((0.2, 0.34, 0.77, 0.6))
        places = list(dict.fromkeys(e[3] for e in events))
        row = {p: i for i, p in enumerate(places)}
        cmap = matplotlib.colormaps["tab10"]
        for i, kind in enumerate(kinds):
            mine = [e for e in events if e[2] == kind]
            if not mine:
                continue
            ax.scatter(
                [e[0] for e in mine],
                [row[e[3]] for e in mine],
                s=46,
                color=cmap(i % 10),
                marker=markers[i % len(markers)],
                zorder=3,
                label=kind,
            )
        ax.set_yticks(range(len(places)), places)
        ax.set_ylim(len(places) - 0.5, -0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(order)
        backward = [e[0] for e in events if e[1] == "backward"]
        if backward:
            ax.axvspan(min(backward) - 0.5, max(backward) + 0.5, color="tab:red", alpha=0.06, zorder=0)
            ax.text(min(backward), -0.45, backward_text, va="bottom", color="tab:red")
        ax.grid(axis="x", alpha=0.3)
        fig.legend(loc="lower center", ncols=3, frameon=False, bbox_to_anchor=(0.55, 0.0))
    return fig
