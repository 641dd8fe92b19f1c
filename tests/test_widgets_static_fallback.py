"""Every widget shows its static picture where there is no widget front end, under ipywidgets 7 and 8.

Colab ships ipywidgets 7 (``make test-colab`` runs this file there), JupyterLab 8. In both, displaying a
hookviz widget through IPython's real display machinery must publish one bundle holding the live view,
a PNG of the current state (what GitHub, nbviewer and a Colab without the widget manager show) and a
short text, and must never raise. Each widget is built on the course's own small models.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator

import ipywidgets
import pytest
from IPython.core.interactiveshell import InteractiveShell

import hookviz
from hookviz.widgets.common import WIDGET_VIEW_MIME

IPYWIDGETS_MAJOR = int(ipywidgets.__version__.split(".")[0])


@pytest.fixture
def published() -> Iterator[list[dict]]:
    """An IPython shell whose display publisher records every bundle instead of sending it."""
    existed = InteractiveShell.initialized()
    shell = InteractiveShell.instance()
    seen: list[dict] = []
    original = shell.display_pub.publish

    def record(data, metadata=None, **kwargs):  # noqa: ANN001, ANN003 - IPython's signature
        seen.append(data)

    shell.display_pub.publish = record
    try:
        yield seen
    finally:
        shell.display_pub.publish = original
        if not existed:
            InteractiveShell.clear_instance()


def _explorer():
    x, y = hookviz.load_digits()
    return hookviz.LayerExplorer(hookviz.load_pretrained_cnn(), x[:8], y[:8])


def _timeline():
    return hookviz.HookTimeline()


def _monitor():
    return hookviz.TrainingMonitor(hookviz.DigitsCNN(), steps=3, interval=0.0)


def _attention():
    return hookviz.AttentionExplorer(hookviz.load_tiny_transformer(), hookviz.make_tiny_batch(4, seed=0)[0])


WIDGETS: dict[str, Callable[[], object]] = {
    "LayerExplorer": _explorer,
    "HookTimeline": _timeline,
    "TrainingMonitor": _monitor,
    "AttentionExplorer": _attention,
}


@pytest.mark.parametrize("name", sorted(WIDGETS))
def test_displaying_a_widget_publishes_its_view_and_a_static_picture(name, published):
    widget = WIDGETS[name]()
    try:
        from IPython.display import display

        display(widget)
        assert len(published) == 1, f"{name}: expected one bundle, got {len(published)}"
        bundle = published[0]
        assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG"), f"{name}: no static picture"
        assert bundle["text/plain"] == repr(widget)
        assert "no static picture" not in bundle["text/plain"]
        assert bundle[WIDGET_VIEW_MIME]["model_id"] == widget.model_id
        assert repr(widget.show_static()).startswith(f"static view of {name}(")
    finally:
        widget.close()


def test_this_run_knows_which_ipywidgets_it_checks():
    """The Colab-true run (make test-colab) must really be on ipywidgets 7, the main one on 8."""
    assert IPYWIDGETS_MAJOR in (7, 8)
    assert hasattr(ipywidgets.Widget, "_repr_mimebundle_") == (IPYWIDGETS_MAJOR >= 8)


def test_the_atlas_search_widget_displays_under_both_ipywidgets(published):
    """The atlas's search view (a plain object around a VBox) shows its live view and one text line."""
    from IPython.display import display

    from hookviz import atlas

    table = atlas.AtlasTable(atlas.merge_versions({"2.13.0": atlas.load_snapshot("2.13.0")}))
    widget = atlas.atlas_widget(table, limit=5)
    display(widget)
    assert len(published) == 1
    bundle = published[0]
    assert bundle["text/plain"] == repr(widget) and bundle["text/plain"].startswith("AtlasWidget(")
    assert bundle[WIDGET_VIEW_MIME]["model_id"] == widget.box.model_id
