"""hookviz.render: arrays to pictures, fast and without autograd or widgets."""

import io

import numpy as np
import pytest
from PIL import Image

from hookviz.render import (
    BAD_COLOR,
    colorize,
    feature_panel_png,
    heat_strip,
    histogram_png,
    join_png,
    message_png,
    mosaic,
    mosaic_png,
    strip_png,
)
from hookviz.summarize import histogram


def _image(png: bytes) -> np.ndarray:
    assert png.startswith(b"\x89PNG")
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def test_colorize_constant_nan_and_range() -> None:
    rgb = colorize(np.zeros((2, 3)))
    assert rgb.shape == (2, 3, 3) and rgb.dtype == np.uint8 and (rgb == rgb[0, 0]).all()
    rgb = colorize(np.array([[0.0, np.nan], [np.inf, 1.0]]))
    assert tuple(rgb[0, 1]) == BAD_COLOR and tuple(rgb[1, 0]) == BAD_COLOR
    assert tuple(rgb[0, 0]) != tuple(rgb[1, 1])


def test_mosaic_layout() -> None:
    tiles = np.arange(5 * 2 * 3, dtype=np.float32).reshape(5, 2, 3)
    m = mosaic(tiles, cols=3, pad=1)
    assert m.shape == (2 * 2 + 1, 3 * 3 + 2)
    assert np.isnan(m[2]).all()  # separator row
    np.testing.assert_array_equal(m[0:2, 4:7], tiles[1])
    with pytest.raises(ValueError):
        mosaic(np.zeros((2, 2)))


def test_mosaic_png_is_one_image_with_pad() -> None:
    maps = np.random.default_rng(0).normal(size=(16, 4, 4)).astype(np.float32)
    img = _image(mosaic_png(maps, min_width=128))
    assert img.shape[0] == img.shape[1] and img.shape[1] >= 128
    assert (img == 255).all(axis=2).any()  # white separators


def test_heat_strip_and_png() -> None:
    strip = heat_strip(np.arange(10), width=4)
    assert strip.shape == (3, 4) and np.isnan(strip[2, 2:]).all()
    img = _image(strip_png(np.arange(10, dtype=np.float32), width=32))
    assert img.shape[1] >= 256 and img.shape[0] < img.shape[1]


def test_histogram_png_marks_nonfinite() -> None:
    h = histogram(np.array([0.0, 1.0, np.nan]))
    img = _image(histogram_png(h, title="t", log=True))
    assert img.shape == (210, 300, 3)
    assert ((img[:, :, 0] > 150) & (img[:, :, 1] < 50)).any()  # red NaN/Inf line


def test_feature_panel_has_a_fixed_size_tiles_labels_and_colour_bar() -> None:
    maps = np.random.default_rng(0).normal(size=(8, 8, 8)).astype(np.float32)
    image = np.zeros((8, 8))
    tiles = _image(feature_panel_png(maps, [str(c) for c in range(8)], title="features.0", image=image))
    strip = _image(feature_panel_png(np.arange(10.0), title="logits", image=image))
    many = _image(feature_panel_png(np.zeros((64, 2, 2)), title="64 channels"))
    assert tiles.shape == strip.shape == many.shape == (290, 430, 3)  # no height jump between kinds
    viridis_top = colorize(np.array([1.0]), 0.0, 1.0)[0]
    assert (tiles == viridis_top).all(axis=2).any()  # the colour bar reaches the top colour
    empty = _image(feature_panel_png(np.zeros((0,)), title="nothing"))
    assert empty.shape == (290, 430, 3)


def test_text_is_legible_and_messages_replace_empty_axes() -> None:
    from matplotlib.figure import Figure

    from hookviz.render import FONT_PX, MIN_TEXT_PX, _font, text_sizes_px, timeline_figure

    assert FONT_PX >= MIN_TEXT_PX and _font().size >= MIN_TEXT_PX
    fig = timeline_figure(Figure(), [], ["forward"])
    assert [t.get_text() for t in fig.texts] == ["no hook calls match these filters"] and not fig.axes
    assert min(text_sizes_px(fig)) >= MIN_TEXT_PX
    assert _image(message_png("nothing to draw")).shape == (210, 300, 3)
    joined = _image(join_png([message_png("a"), message_png("b", size=(100, 50))], gap=8))
    assert joined.shape == (210, 408, 3)


def test_heatmap_panel_fits_any_sequence_and_keeps_nan_visible() -> None:
    from hookviz.render import BAD_COLOR, block_mean, heatmap_panel_png

    small = _image(heatmap_panel_png(np.arange(7 * 16, dtype=np.float32).reshape(7, 16), title="lstm"))
    wide = np.random.default_rng(0).normal(size=(300, 768)).astype(np.float32)
    wide[5, 5] = np.nan
    big = _image(heatmap_panel_png(wide, title="a long sequence"))
    assert small.shape == big.shape == (290, 430, 3)  # a fixed panel, whatever it shows
    assert (big == BAD_COLOR).all(axis=-1).any()  # one NaN is not averaged away
    out, block, filled = block_mean(np.arange(12.0).reshape(3, 4), 2, 2)
    assert block == (2, 2) and filled.all()
    np.testing.assert_allclose(out, [[2.5, 4.5], [8.5, 10.5]])  # the padding row is not counted
    long_vector = _image(feature_panel_png(np.arange(1000.0), title="1000 values"))
    assert long_vector.shape == (290, 430, 3)


def test_nice_ticks_are_round_few_and_hold_zero() -> None:
    from hookviz.render import nice_ticks

    assert nice_ticks(-3.2, 4.1) == [-2.0, 0.0, 2.0, 4.0]
    assert nice_ticks(0, 2250, most=5) == [0.0, 500.0, 1000.0, 1500.0, 2000.0]
    for lo, hi in [(-9.5, -1.2), (1e-3, 1.3e-3), (0.0, 1.0), (-0.07, 3.0)]:
        ticks = nice_ticks(lo, hi, most=5)
        assert 2 <= len(ticks) <= 5 and all(lo <= t <= hi for t in ticks), (lo, hi, ticks)
        if lo < 0 < hi:
            assert 0.0 in ticks, "a range that holds 0 always has a 0 tick: the zero line is labelled"


def test_step_labels_never_run_together() -> None:
    from hookviz.render import step_label

    assert [step_label(v) for v in (0, 750, 1000, 1500, 2250, 12_000, 2_500_000)] == [
        "0",
        "750",
        "1k",
        "1.5k",
        "2.25k",
        "12k",
        "2.5M",
    ]
    assert max(len(step_label(v)) for v in range(0, 10**6, 250)) <= 5


def test_log_ticks_give_several_labels_even_inside_one_decade() -> None:
    from hookviz.render import log_ticks

    assert log_ticks(1e-6, 1e-2) == [1e-6, 1e-5, 1e-4, 1e-3, 1e-2]
    within = log_ticks(0.8e-6, 2.5e-6)
    assert len(within) >= 3 and within[0] >= 0.8e-6 and within[-1] <= 2.5e-6, within


def test_pace_png_is_fast_and_draws_at_any_length() -> None:
    import time

    from hookviz.render import pace_png

    names = ["features.0", "features.4", "classifier.1"]
    for n in (0, 1, 50, 3000):
        steps = np.arange(1, n + 1)
        t0 = time.perf_counter()
        img = _image(pace_png(steps, 2.3 * np.exp(-steps / 500), names, np.array([1.2e-6, 2e-6, 1.5e-6])))
        assert time.perf_counter() - t0 < 0.5
        assert img.shape == (200, 740, 3)
    img = _image(pace_png(np.arange(1, 11), np.linspace(2, 1, 10), names, np.full(3, np.nan)))
    assert (img < 128).any()  # text drawn: "no gradient yet"


def test_histogram_labels_ticks_and_keeps_the_axis_label_on_its_own_row() -> None:
    from hookviz.render import FONT_PX

    h = histogram(np.linspace(-3, 5, 400))
    img = _image(histogram_png(h, title="t", x_label="value"))
    assert img.shape == (210, 300, 3)
    black = np.nonzero((img < 60).all(axis=2).any(axis=1))[0]  # axes and tick labels
    grey = np.nonzero((np.abs(img.astype(int) - 110) < 20).all(axis=2).any(axis=1))[0]  # the axis label
    assert grey.max() >= black.max() + FONT_PX // 2, "the x label sits on a row below the tick labels"


def test_the_monitors_fast_charts_speak_the_learners_language(monkeypatch) -> None:  # noqa: ANN001
    """Browser session: under zh the fast chart said "mean |gradient|, last steps"; the detailed one was Chinese."""
    import hookviz
    from hookviz import render

    drawn: list[str] = []
    real = render._text
    monkeypatch.setattr(render, "_text", lambda draw, xy, text, **kw: (drawn.append(text), real(draw, xy, text, **kw)))
    hookviz.set_language("zh")
    try:
        render.pace_png(np.arange(1, 11), np.linspace(2, 1, 10), ["a", "b"], np.array([1e-3, 2e-3]))
    finally:
        hookviz.set_language(None)
    shown = " ".join(drawn)
    assert "平均 |梯度|，最近几步" in shown and "平均 |梯度|（对数刻度）" in shown and "gradient" not in shown, shown
