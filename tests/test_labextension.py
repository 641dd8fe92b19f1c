"""hookviz's JupyterLab helper (``labextension/``, prebuilt into ``hookviz/labextension``): what can be checked without
a browser (``tests/browser/test_links_browser.py`` clicks the links in a real JupyterLab).

* The built extension is the source's: same name and version, its code holds the link handler, the font rule and
  the kernel revival (``make labextension`` rebuilds it), and the font it serves is byte for byte the one hookviz draws
  its pictures with (``scripts/make_cjk_font.py`` copies it there).
* Every way the course starts JupyterLab links it where JupyterLab looks: ``make setup`` / ``make lab``,
  ``binder/postBuild`` (Binder and the hub image) and the hub's ``tljh.sh``; a plain ``pip install`` copies it.
* hookviz's widgets carry the CSS class the font rule is for.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import hookviz
from hookviz.widgets.common import WIDGET_CLASS

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "labextension"
BUILT = REPO / "hookviz" / "labextension"


def test_the_built_extension_is_the_sources() -> None:
    source, built = (json.loads((p / "package.json").read_text(encoding="utf-8")) for p in (SOURCE, BUILT))
    assert (built["name"], built["version"]) == (source["name"], source["version"]) == ("hookviz-lab", "0.1.0")
    entry = BUILT / built["jupyterlab"]["_build"]["load"]
    assert entry.is_file(), "hookviz/labextension is not built: run `make labextension`"
    code = "".join(p.read_text(encoding="utf-8") for p in (BUILT / "static").glob("*.js"))
    assert "rendermime:handle-local-link" in code and "hookviz-lab:links" in code and "hookvizScrolledTo" in code
    assert "hookviz-lab:reopen" in code and "hookviz-lab:font" in code and "hookviz-cjk-sc.otf" in code
    assert "hookviz CJK SC" in code and "hookviz-widget" in code  # the style, bundled
    font = BUILT / "static" / "hookviz-cjk-sc.otf"
    assert font.read_bytes() == (REPO / "hookviz" / "assets" / "fonts" / "hookviz-cjk-sc.otf").read_bytes(), (
        "the extension serves an old copy of hookviz's font: run `python scripts/make_cjk_font.py`"
    )


def test_every_way_of_starting_jupyterlab_links_the_extension() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "ln -sfn $(CURDIR)/hookviz/labextension $(VENV)/share/jupyter/labextensions/hookviz-lab" in makefile
    postbuild = (REPO / "binder" / "postBuild").read_text(encoding="utf-8")
    assert 'ln -sfn "$(pwd)/hookviz/labextension" "${NB_PYTHON_PREFIX}/share/jupyter/labextensions/hookviz-lab"' \
        in postbuild
    tljh = (REPO / "workshop" / "jupyterhub" / "tljh.sh").read_text(encoding="utf-8")
    assert 'ln -sfn "${COURSE}/hookviz/labextension" /opt/tljh/user/share/jupyter/labextensions/hookviz-lab' in tljh
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["data-files"]
    assert data["share/jupyter/labextensions/hookviz-lab"] == ["hookviz/labextension/package.json"]


def test_hookviz_widgets_carry_the_class_the_font_rule_is_for() -> None:
    box = hookviz.AskBox()
    monitor = hookviz.TrainingMonitor(hookviz.DigitsCNN(), steps=3)
    try:
        monitor._repr_mimebundle_()  # shown: the restart notice and the class come with it
        assert WIDGET_CLASS in box._dom_classes and WIDGET_CLASS in monitor._dom_classes
    finally:
        box.close()
        monitor.close()
