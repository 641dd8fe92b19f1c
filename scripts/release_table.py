"""Write the table of behaviours that differ between PyTorch releases (hookviz.releases) into both READMEs.

The table sits between ``<!-- release-table -->`` and ``<!-- /release-table -->`` in README.md (links to
notebooks/) and README.zh.md (links to notebooks/zh/); ``tests/test_releases.py`` fails when it is stale.

    python scripts/release_table.py           # rewrite both tables
    python scripts/release_table.py --check   # exit 1 when a README's table is not what hookviz.releases gives
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from hookviz.releases import markdown_table  # noqa: E402  (the package of this checkout)

READMES = {ROOT / "README.md": "notebooks/", ROOT / "README.zh.md": "notebooks/zh/"}
BLOCK = re.compile(r"<!-- release-table -->\n.*?<!-- /release-table -->", re.DOTALL)


def rendered(path: Path, notebooks: str) -> str:
    """``path``'s text with its table block rewritten."""
    text = path.read_text(encoding="utf-8")
    if not BLOCK.search(text):
        raise SystemExit(f"{path.name}: no <!-- release-table --> ... <!-- /release-table --> block")
    table = f"<!-- release-table -->\n{markdown_table(notebooks)}\n<!-- /release-table -->"
    return BLOCK.sub(lambda _: table, text)


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when a table is stale")
    args = parser.parse_args(argv)
    stale = []
    for path, notebooks in READMES.items():
        new = rendered(path, notebooks)
        if new != path.read_text(encoding="utf-8"):
            stale.append(path.name)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"stale release table in {', '.join(stale)}: run python scripts/release_table.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
