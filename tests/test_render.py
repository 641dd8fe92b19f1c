"""hookviz.render: arrays to pictures, fast and without autograd or widgets."""

import io

import numpy as np
import pytest
from PIL import Image

from hookviz.render import (
    BAD_COLOR,
    colorize,
    heat_strip,
    histogram_png,
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
    assert img.shape == (170, 320, 3)
    assert ((img[:, :, 0] > 150) & (img[:, :, 1] < 50)).any()  # red NaN/Inf line
