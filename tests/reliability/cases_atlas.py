"""hookviz.atlas helpers: stored snapshots (load, list, pick, write), spans, keys, summaries, situations, links."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from hookviz import atlas, releases
from reliability.harness import ACCEPT, EITHER, REFUSE, Case
from reliability.inputs import MISSING_PATH, Arg, Fresh, Spec, Value, fullwidth

PINNED = "2.13.0"
DIRECTORY_WORDS = ("directory", "folder")
VERSION_WORDS = ("version", "stored")
_BASE = Path(tempfile.mkdtemp(prefix="hookviz-reliability-atlas-"))
atexit.register(shutil.rmtree, _BASE, ignore_errors=True)


@functools.lru_cache(maxsize=1)
def _entries() -> tuple[atlas.Entry, ...]:
    return tuple(atlas.load_snapshot(PINNED))


def _a_file() -> Path:
    path = _BASE / "not-a-folder.json"
    path.write_text("[]", encoding="utf-8")
    return path


def _empty_dir() -> Path:
    path = Path(tempfile.mkdtemp(dir=_BASE))
    return path


def _broken_dir() -> Path:
    """A folder whose stored atlas is not JSON (a half-written file)."""
    path = Path(tempfile.mkdtemp(dir=_BASE))
    (path / f"atlas-torch-{PINNED}.json").write_text("[{\"kind\": ", encoding="utf-8")
    return path


def _directory(**kw: Any) -> Arg:
    extra = [
        Value("a-file", _a_file(), REFUSE),
        Value("tilde", "~/no-such-hookviz-atlas", REFUSE),
        *kw.pop("extra", []),
    ]
    return Arg("directory", "path", atlas.SNAPSHOT_DIR, aliases=DIRECTORY_WORDS, extra=extra, **kw)


def _version(**kw: Any) -> Arg:
    extra = [
        Value("minor-only", "2.13", EITHER),
        Value("local", f"{PINNED}+cpu", EITHER),
        Value("float", 2.13, REFUSE),
        Value("unknown-release", "2.99.0", REFUSE),
        Value("TorchVersion", torch.__version__, EITHER),
        Value("path-traversal", f"../atlas/atlas-torch-{PINNED}", REFUSE),
        Value("fullwidth", fullwidth(PINNED), EITHER),
        *kw.pop("extra", []),
    ]
    return Arg("version", "choice", PINNED, positional=True, aliases=VERSION_WORDS,
               skip=("upper", "typo", *kw.pop("skip", ())), extra=extra, **kw)


def _check_entries(answer: Any, args: dict[str, Any]) -> str | None:
    if not isinstance(answer, list) or not answer or not all(isinstance(e, atlas.Entry) for e in answer):
        return f"not a list of Entry: {type(answer).__name__}"
    versions = {e.torch for e in answer}
    if versions != {PINNED}:
        return f"entries of torch {sorted(versions)}, not {PINNED}"
    return None


def _check_stored(answer: Any, args: dict[str, Any]) -> str | None:
    if not isinstance(answer, list) or not all(isinstance(v, str) for v in answer):
        return f"not a list of versions: {answer!r}"
    directory = Path(args.get("directory", atlas.SNAPSHOT_DIR))
    want = sorted(p.stem.removeprefix("atlas-torch-") for p in directory.glob("atlas-torch-*.json"))
    return None if sorted(answer) == want else f"{answer} for a folder holding {want}"


def _check_version_for(answer: Any, args: dict[str, Any]) -> str | None:
    return None if answer in (*releases.SNAPSHOT_RELEASES, None) else f"{answer!r} is not a stored release"


def _write(entries: Any, directory: Any) -> Path:
    return atlas.write_snapshot(entries, directory)


def _check_written(answer: Any, args: dict[str, Any]) -> str | None:
    if not isinstance(answer, Path) or not answer.is_file():
        return f"no file written: {answer!r}"
    rows = json.loads(answer.read_text(encoding="utf-8"))
    entries = args["entries"]
    if len(rows) != len(entries):
        return f"{len(rows)} rows written for {len(entries)} entries"
    back = atlas.load_snapshot(answer.stem.removeprefix("atlas-torch-"), answer.parent)
    return None if back == list(entries) else "the snapshot does not load back as written"


def _fresh_dir() -> Fresh:
    return Fresh(lambda: Path(tempfile.mkdtemp(dir=_BASE)), "a new folder")


def specs() -> list[Spec]:
    entries = list(_entries()[:3])
    return [
        Spec("hookviz.atlas.load_snapshot", atlas.load_snapshot,
             [_version(), _directory(extra=[Value("broken-json", _broken_dir(), REFUSE),
                                            Value("empty-folder", _empty_dir(), REFUSE)])],
             check=_check_entries, short="atlas.load_snapshot"),
        Spec("hookviz.atlas.stored_versions", atlas.stored_versions,
             [_directory(positional=True, extra=[Value("empty-folder", _empty_dir(), ACCEPT)])],
             check=_check_stored, short="atlas.stored_versions"),
        Spec("hookviz.atlas.stored_version_for", atlas.stored_version_for,
             # a well-formed release without a stored atlas: None, as documented ("else None"; the doctor relies on it)
             [_version(extra=[Value("patch-of-stored-minor", "2.12.0", ACCEPT),
                              Value("unknown-release", "2.99.0", ACCEPT)], skip=("long-20000",)),
              _directory()],
             check=_check_version_for, short="atlas.stored_version_for"),
        Spec("hookviz.atlas.write_snapshot", _write,
             [
                 Arg("entries", "sequence", entries, positional=True, skip=("empty",), extra=[
                     Value("list-of-int", [1, 2], REFUSE),
                     Value("dicts", [{"kind": "forward"}], REFUSE),
                     Value("tuple", tuple(entries), EITHER),
                     Value("two-releases", [entries[0], *atlas.load_snapshot("2.8.0")[:1]], REFUSE),
                     Value("empty-list", [], EITHER),
                 ]),
                 Arg("directory", "path", _fresh_dir(), positional=True, aliases=DIRECTORY_WORDS,
                     skip=("str", "missing", "missing-str", "fullwidth-missing", "empty-str", "None"),
                     extra=[Value("a-file", _a_file(), REFUSE),
                            Value("str-new-folder", Fresh(lambda: str(_empty_dir()), "str"), ACCEPT),
                            Value("new-subfolder", Fresh(lambda: _empty_dir() / "a" / "b", "subfolder"), ACCEPT)]),
             ],
             check=_check_written, keywords=False, short="atlas.write_snapshot"),
        Spec("hookviz.atlas.version_span", atlas.version_span,
             [
                 Arg("versions", "sequence", ["2.8.0", "2.9.1", "2.10.0"], positional=True,
                     extra=[Value("str", "2.8.0", REFUSE), Value("floats", [2.8, 2.9], REFUSE),
                            Value("tuple", ("2.8.0", "2.9.1", "2.10.0"), EITHER)]),
                 _directory(skip=("long-20000",)),
             ],
             check=lambda a, args: None if isinstance(a, str) else f"{a!r}", short="atlas.version_span"),
        Spec("hookviz.atlas.entries_by_key", atlas.entries_by_key,
             [Arg("entries", "sequence", entries, positional=True,
                  extra=[Value("list-of-int", [1], REFUSE), Value("an-entry", entries[0], REFUSE)])],
             check=lambda a, args: None if isinstance(a, dict) and all(
                 isinstance(k, tuple) and len(k) == 2 for k in a) else f"{a!r}",
             short="atlas.entries_by_key"),
        Spec("hookviz.atlas.summarize", atlas.summarize,
             [Arg("value", "any", (torch.nn.Linear(2, 3), (torch.zeros(2, 2),)), positional=True),
              Arg("depth", "int", 0, minimum=0)],
             check=lambda a, args: None if isinstance(a, str) and len(a) < 2000 else f"{str(a)[:80]!r}...",
             short="atlas.summarize"),
        Spec("hookviz.atlas.situations", atlas.situations,
             [Arg("rig", "any", None, positional=True, extra=[
                 Value("a-rig", atlas.rig_for("forward"), ACCEPT), Value("str", "forward", REFUSE),
                 Value("int", 3, REFUSE)])],
             check=lambda a, args: None if isinstance(a, list) and a and all(
                 isinstance(s, atlas.Situation) for s in a) else f"{a!r}",
             short="atlas.situations"),
        Spec("hookviz.atlas.teaching_links", atlas.teaching_links,
             [Arg("extra", "mapping", {("forward", "plain"): "02_forward_hooks.ipynb#x"}, positional=True,
                  none_ok=True, default=None,
                  extra=[Value("bad-keys", {"forward": "02_forward_hooks.ipynb#x"}, REFUSE),
                         Value("bad-link", {("forward", "plain"): 3}, REFUSE)])],
             check=lambda a, args: None if isinstance(a, dict) and a else f"{a!r}", short="atlas.teaching_links"),
    ]


def scenario_cases() -> list[Case]:
    recursive: list[Any] = [1]
    recursive.append(recursive)
    big = [torch.zeros(1)] * 10_000
    return [
        Case("atlas.torch_version:valid", "hookviz.atlas.torch_version", lambda ctx: atlas.torch_version(),
             expect=ACCEPT, check=lambda a, ctx: None if a == torch.__version__.split("+")[0] else a, keeps_rng=True),
        Case("atlas.torch_version:an-argument", "hookviz.atlas.torch_version", lambda ctx: atlas.torch_version("2.8"),
             expect=REFUSE, names=("positional", "argument"), keeps_rng=True),
        Case("atlas.summarize:recursive-list", "hookviz.atlas.summarize", lambda ctx: atlas.summarize(recursive),
             expect=ACCEPT, check=lambda a, ctx: None if isinstance(a, str) and len(a) < 2000 else a, keeps_rng=True),
        Case("atlas.summarize:10000-tensors", "hookviz.atlas.summarize", lambda ctx: atlas.summarize(big),
             expect=ACCEPT, check=lambda a, ctx: None if isinstance(a, str) and len(a) < 2000 else f"{len(a)} chars",
             keeps_rng=True),
        Case("atlas.summarize:depth-1e9", "hookviz.atlas.summarize",
             lambda ctx: atlas.summarize([[[[[[1]]]]]], depth=10**9), expect=EITHER, names=("depth",),
             check=lambda a, ctx: None if isinstance(a, str) else a, keeps_rng=True),
        Case("atlas.load_snapshot:missing-path-str", "hookviz.atlas.load_snapshot",
             lambda ctx: atlas.load_snapshot(PINNED, str(MISSING_PATH)), expect=REFUSE, names=DIRECTORY_WORDS,
             keeps_rng=True),
    ]


def cases() -> list[Case]:
    out = [c for spec in specs() for c in spec.cases()]
    for case in out:
        case.keeps_rng = True
    return out + scenario_cases()
