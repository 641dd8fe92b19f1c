"""The PyTorch releases the course supports, and the behaviours that differ between them.

The course is proven on every release in :data:`TESTED` (``pytest --nbval`` on each, English and Chinese) and
declares the range :data:`OLDEST` to :data:`NEWEST` (every minor release in between has a stored hook atlas,
:mod:`hookviz.atlas`). Where PyTorch's behaviour really differs inside that range, a notebook cell prints the
difference as a small table (release -> what happens) and asserts the running release's row. Those tables live
here, in :data:`DIFFERENCES`, so that

- the notebook cell prints the same table on every release (its stored output does not depend on the release)
  and checks ``expected(key)`` for the running one;
- :func:`sections_that_differ` tells a learner on another release (Colab's, say) which notebook sections
  behave differently there than in the stored outputs, before they run anything (``hookviz.check_setup()``).

A row names the first minor release it applies to (``"2.8"``) and what happens from there until the next
row's release. Only minor releases are distinguished. Every row was measured by running the notebooks on one
patch release of each minor release in the range, :data:`SNAPSHOT_RELEASES` (2.8.0, 2.9.1, 2.10.0, 2.11.0,
2.12.1, 2.13.0, 2.14.1: ``make test-torch TORCH=...`` on each); CI re-checks the releases of :data:`TESTED`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from hookviz.i18n import tr

__all__ = [
    "DIFFERENCES",
    "NEWEST",
    "OLDEST",
    "PINNED",
    "SNAPSHOT_RELEASES",
    "TESTED",
    "Difference",
    "differ",
    "expect_error",
    "expected",
    "in_range",
    "minor",
    "sections_that_differ",
    "show",
]

#: The release the stored outputs were made with (the course's own ``.venv`` pins it).
PINNED = "2.13.0"
#: The oldest and newest minor releases the course supports.
OLDEST, NEWEST = "2.8", "2.14"
#: Each release every notebook is proven on, and why it is in the list.
TESTED = {
    "2.8.0": "oldest supported",
    "2.11.0": "Google Colab (scripts/colab_pins.txt)",
    "2.13.0": "the course's pin",
    "2.14.1": "newest pip serves here",
}
#: The patch release of each minor release whose hook atlas is stored (``hookviz/assets/atlas``).
SNAPSHOT_RELEASES = ("2.8.0", "2.9.1", "2.10.0", "2.11.0", "2.12.1", "2.13.0", "2.14.1")


_RELEASE = re.compile(r"(\d{1,4})\.(\d{1,4})(?![\d])")


def minor(version: str | None = None) -> tuple[int, int]:
    """``(major, minor)`` of ``version`` (default: the running torch): ``"2.11.0+cpu"`` -> ``(2, 11)``.

    A version is a string: the number ``2.10`` is the float ``2.1`` and cannot be told from release 2.1, so a
    number is refused (``TypeError``), as is a string whose first two parts are not whole numbers (``ValueError``).
    """
    if version is not None and not isinstance(version, str):
        raise TypeError(tr(
            f"version must be a string such as '2.10' (in quotes: a number loses its trailing zeros), not "
            f"{version!r}"
        ))
    text = torch.__version__ if version is None else version
    match = _RELEASE.match(text.strip())
    if match is None:
        raise ValueError(tr(f"not a torch release: {text!r} (expected e.g. '2.11' or '2.11.0')"))
    return int(match.group(1)), int(match.group(2))


def in_range(version: str | None = None) -> bool:
    """True when ``version`` (default: the running torch) lies in the supported range."""
    return minor(OLDEST) <= minor(version) <= minor(NEWEST)


@dataclass(frozen=True)
class Difference:
    """One behaviour that differs between releases: where the course teaches it, and each release's behaviour.

    ``rows`` holds ``(since, what happens, value)`` triples, oldest first: from minor release ``since`` until the
    next row's release, PyTorch does what the text says, and the notebook's measurement equals ``value`` (a
    count, a flag, a category ...). The first row starts at :data:`OLDEST`.
    """

    key: str
    section: str  # "NN_name#anchor"
    what: str
    rows: tuple[tuple[str, str, object], ...]

    def row(self, version: str | None = None) -> tuple[str, str, object]:
        """The row that applies to ``version`` (default: the running torch)."""
        found = self.rows[0]
        for row in self.rows:
            if minor(version) >= minor(row[0]):
                found = row
        return found

    def value(self, version: str | None = None) -> object:
        """What the notebook's measurement gives on ``version`` (default: the running torch)."""
        return self.row(version)[2]

    def table(self) -> str:
        """The rows as ``torch 2.8-2.12  what happens`` lines: the same text on every release."""
        lines = [self.what]
        for index, (since, text, _) in enumerate(self.rows):
            if index + 1 < len(self.rows):
                major, next_minor = minor(self.rows[index + 1][0])
                last = f"{major}.{next_minor - 1}"
            else:
                last = NEWEST
            span = since if since == last else f"{since}-{last}"
            lines.append(f"  torch {span:<9} {text}")
        return "\n".join(lines)


#: Every behaviour the course teaches that differs inside the supported range, by key (see :func:`differ`).
DIFFERENCES: dict[str, Difference] = {}


def differ(key: str, section: str, what: str, *rows: tuple[str, str, object]) -> Difference:
    """Record a behaviour that differs between releases (each row: ``(since, what happens, value)``)."""
    if not isinstance(key, str) or not key:
        raise TypeError(tr(f"differ: key must be a non-empty string naming the difference, not {key!r}"))
    if not rows or rows[0][0] != OLDEST:
        raise ValueError(f"{key}: the first row must start at the oldest supported release {OLDEST}")
    if key in DIFFERENCES:
        raise ValueError(f"{key}: recorded twice")
    for row in rows:
        if not isinstance(row, tuple) or len(row) != 3 or not isinstance(row[0], str) or not isinstance(row[1], str):
            raise ValueError(tr(f"differ: each row must be (since, what happens, value), e.g. ('2.8', 'no', False), "
                                f"not {row!r}"))
        if not in_range(row[0]):
            raise ValueError(tr(f"differ: a row's release {row[0]} is outside the supported range "
                                f"({OLDEST} to {NEWEST})"))
    if [minor(row[0]) for row in rows] != sorted({minor(row[0]) for row in rows}):
        raise ValueError(tr("differ: the rows must be in release order, oldest first, each release once"))
    if not isinstance(section, str) or not re.fullmatch(r"\d\d[a-z0-9_]*#[A-Za-z0-9_-]+", section):
        raise ValueError(tr(f"differ: section must be 'NN_notebook#anchor' (e.g. '04_backward_hooks#full-backward'), "
                            f"not {section!r}"))
    DIFFERENCES[key] = Difference(key, section, what, tuple(rows))
    return DIFFERENCES[key]


# ------------------------------------------------------------------------------------------ the differences
# One block per notebook, in course order. Each was measured by running the notebook's cell on the tested
# releases (TESTED) and every stored atlas release; the cell prints the table and asserts the running row.

# --- 00-08 ---
differ(
    "backward-pre-hook-doc-bare-tensor",
    "04_backward_hooks#pitfall-bare-tensor",
    "Does register_full_backward_pre_hook's docstring list a bare Tensor as a return value?",
    ("2.8", "no: 'hook(module, grad_output) -> tuple[Tensor] or None'", False),
    ("2.10", "yes: '-> tuple[Tensor, ...], Tensor or None' (returning one still fails)", True),
)
differ(
    "backward-pre-hook-only-warning",
    "04_backward_hooks#q-pre-hook-warning",
    "Does a full backward pre-hook alone, on a module whose inputs need no grad, give the full hook's warning?",
    ("2.8", "yes: UserWarning 'Full backward hook is firing ...'", True),
    ("2.14", "no: only full hooks warn", False),
)

# --- 09, 11, 15 (torch.compile, DDP) ---
differ(
    "compile-late-pre-hook",
    "09_hooks_in_production#other-kind-guard",
    "a forward pre-hook added after the first compiled call to net.b, whose forward hook Dynamo traced:",
    ("2.8", "skipped silently, no recompile", False),
    ("2.14", "noticed: Dynamo compiles again and the pre-hook runs", True),
)
differ(
    "compile-gave-up-reason",
    "09_hooks_in_production#list-recompiles",
    "the first line of the reason Dynamo records when it gives up (counters['unimplemented']):",
    ("2.8", "'recompile_limit reached'", "recompile_limit reached"),
    ("2.11", "'Dynamo recompile limit exceeded'", "Dynamo recompile limit exceeded"),
)
differ(
    "compile-disabled-hook-graphs",
    "09_hooks_in_production#disable-fix",
    "graphs compiled for TwoLayer with a @torch.compiler.disable forward hook on net.a:",
    ("2.8", "1: relu + net.b; net.a's linear runs uncompiled", 1),
    ("2.12", "2: net.a's linear, then relu + net.b", 2),
)
differ(
    "compile-item-hook-graphs",
    "09_hooks_in_production#graph-break",
    "the graphs Dynamo compiles for TwoLayer with an .item() forward hook on net.a:",
    (
        "2.8",
        "2: the hook's mean; relu + net.b (net.a's linear runs uncompiled)",
        [["mean"], ["relu", "linear"]],
    ),
    ("2.12", "3: net.a's linear; the hook's mean; relu + net.b", [["linear"], ["mean"], ["relu", "linear"]]),
)
differ(
    "compile-inner-tensor-hook",
    "09_hooks_in_production#inner-tensor-hook",
    "a tensor hook registered inside the compiled function (graphs compiled, graph breaks):",
    (
        "2.8",
        "2 graphs, 1 break: 'Compilation of intermediate hooks requires compiled autograd'",
        (2, 1),
    ),
    ("2.11", "1 graph, no break: the hook is traced", (1, 0)),
)
differ(
    "jit-deprecation-warning",
    "09_hooks_in_production#torchscript",
    "torch.jit.script and torch.jit.trace warn '`torch.jit.<name>` is deprecated. Please switch to `torch.compile`"
    " or `torch.export`.' as:",
    ("2.8", "no warning: not deprecated yet", None),
    ("2.10", "DeprecationWarning", "DeprecationWarning"),
    ("2.14", "FutureWarning", "FutureWarning"),
)
differ(
    "inplace-error-node",
    "11_mistakes_clinic#mistake-15",
    "the error names the node whose saved output was edited in place: '... which is output 0 of <name>, ...':",
    ("2.8", "ReluBackward0", "ReluBackward0"),
    ("2.13", "Relu", "Relu"),
)
differ(
    "backward-hook-view-node",
    "11_mistakes_clinic#mistake-24",
    "the error names the full backward hook's autograd function: 'Output 0 of <name> is a view ...':",
    ("2.8", "BackwardHookFunctionBackward", "BackwardHookFunctionBackward"),
    ("2.13", "BackwardHookFunction", "BackwardHookFunction"),
)
differ(
    "clinic-disabled-hook-graphs",
    "11_mistakes_clinic#mistake-36",
    "graphs compiled in 12 steps for the nn.Sequential MLP with a @torch.compiler.disable forward hook:",
    ("2.8", "0: nothing of the model is compiled, it runs eagerly", 0),
    ("2.12", "1: the first layer's linear", 1),
)
differ(
    "compile-loop-hook-graphs",
    "15_compiled_and_sharded_training#compile-costs",
    "graphs compiled in 6 steps for the nn.Sequential MLP, hook on its first layer: .item() hook / @disable hook:",
    ("2.8", "1 / 0: the first layer's linear runs uncompiled", (1, 0)),
    ("2.12", "2 / 1: the first layer's linear is compiled", (2, 1)),
)
differ(
    "compile-loop-disabled-deque-graphs",
    "15_compiled_and_sharded_training#deque-fix",
    "graphs compiled in 20 steps for the MLP with the @torch.compiler.disable deque hook:",
    ("2.8", "0: nothing of the model is compiled, it runs eagerly", 0),
    ("2.12", "1: the first layer's linear", 1),
)
differ(
    "compile-pre-hook-break-transformer",
    "15_compiled_and_sharded_training#q-compile-pre-hook-break",
    "a pre-hook with .item() on nn.TransformerEncoderLayer itself, graphs compiled:",
    ("2.8", "1: the hook's sum; the layer's forward runs uncompiled", [1]),
    ("2.12", "2: the hook's sum, then the whole forward", [1, 14]),
)
differ(
    "export-strict-root-pre-hook",
    "15_compiled_and_sharded_training#q-export-pre-hook",
    "torch.export.export(model, args, strict=True), a forward pre-hook on the root module:",
    ("2.8", "BackendCompilerFailed: 'Tried to emit a second graph during export'", "BackendCompilerFailed"),
    ("2.10", "exported, the hook's mul in the graph", "exported"),
)
differ(
    "fsdp2-gloo-gradient",
    "15_compiled_and_sharded_training#fsdp",
    "under FSDP2 on gloo (CPU), each process's slice of the weight's gradient after backward is:",
    ("2.8", "the SUM over the processes: gloo's reduce-scatter sums for ReduceOp.AVG", "sum"),
    ("2.9", "the average over the processes", "average"),
)

# --- 10 ---
differ(
    "compile-late-pre-hook-layer",
    "10_faq#faq-compile-guarded",
    "a forward pre-hook added after the first compiled call to an nn.Linear compiled directly, which had a forward"
    " hook when traced:",
    ("2.8", "skipped silently: the guard covers only forward hooks", False),
    ("2.14", "noticed: any module hook at tracing time makes Dynamo guard the module's hooks", True),
)

# --- 13 ---


def expected(key: str, version: str | None = None) -> object:
    """The value ``DIFFERENCES[key]`` gives for ``version`` (default: the running torch).

    A ``version`` given outside the supported range is refused: no row was measured there.
    """
    if not isinstance(key, str):
        raise TypeError(tr(f"key must be the name of a release difference (a string), not {key!r}"))
    if key not in DIFFERENCES:
        raise KeyError(f"no release difference {key!r}; known: {sorted(DIFFERENCES)}")
    if version is not None and not in_range(version):
        raise ValueError(tr(
            f"torch {version} is outside the releases the course measured ({OLDEST} to {NEWEST}): no row says "
            "what happens there; pass a release of that range, or None for the running torch"
        ))
    return DIFFERENCES[key].value(version)


def show(key: str) -> object:
    """Print the table of ``DIFFERENCES[key]`` (the same text on every release); return the running row's value.

    A notebook cell prints the table, then asserts its measurement against the returned value, so its stored
    output does not depend on the release it ran on::

        graphs = releases.show("compile-disabled-hook-graphs")
        print("as the table says for the running release:", graphs_compiled() == graphs)
        assert graphs_compiled() == graphs
    """
    value = expected(key)  # raises, naming the known keys, for an unknown one
    print(DIFFERENCES[key].table())
    return value


def sections_that_differ(version: str | None = None, reference: str = PINNED) -> list[Difference]:
    """The differences whose behaviour on ``version`` is not the one on ``reference`` (the stored outputs').

    Both must lie in the supported range (no row was measured outside it)."""
    for name, given in (("version", version), ("reference", reference)):
        if given is not None and not isinstance(given, str):
            raise TypeError(tr(f"{name} must be a torch release as a string, such as '2.13', not {given!r}"))
        if given is not None and not in_range(given):
            raise ValueError(tr(
                f"{name}: torch {given} is outside the releases the course measured ({OLDEST} to {NEWEST}): no row "
                "says what happens there"
            ))
    return [d for d in DIFFERENCES.values() if d.value(version) != d.value(reference)]


@contextmanager
def expect_error(kind: type[BaseException] | tuple[type[BaseException], ...], fragment: str) -> Iterator[None]:
    """The block must raise ``kind`` with ``fragment`` in its message; print ``Kind: ...fragment...`` only.

    For a pitfall whose error message differs between releases (autograd names its nodes differently, a
    typo was fixed ...): the cell shows the part of the message that every release gives, and fails with a
    clear message when the block raises nothing, another error, or a message without the fragment. ``kind`` is an
    exception class (or a tuple of them) and ``fragment`` a string; anything else is refused before the block runs.
    """
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not kinds or not all(isinstance(k, type) and issubclass(k, BaseException) for k in kinds):
        raise TypeError(tr(
            f"expect_error: kind must be an exception class (or a tuple of them), not {kind!r}; "
            "e.g. expect_error(ValueError, 'bad')"
        ))
    if not isinstance(fragment, str):
        raise TypeError(tr(
            f"expect_error: fragment must be a string, the part of the message every release gives, not {fragment!r}; "
            "e.g. expect_error(ValueError, 'bad')"
        ))
    try:
        yield
    except kind as error:
        name = kind.__name__ if isinstance(kind, type) else type(error).__name__
        if fragment not in str(error):
            raise AssertionError(f"{name} was raised, but its message lacks {fragment!r}: {error}") from error
        print(f"{name}: ...{fragment}...")
        return
    names = " or ".join(k.__name__ for k in kinds)
    raise AssertionError(f"expected {names} ('...{fragment}...'), but the block raised nothing")


def markdown_table(notebooks: str = "notebooks/") -> str:
    """Every difference as a Markdown table (section, behaviour, each range of releases), as the READMEs show it.

    ``notebooks`` is the folder the links point to (``notebooks/zh/`` for the Chinese README).
    """
    lines = ["| section | behaviour | by release |", "|---|---|---|"]
    for difference in DIFFERENCES.values():
        name, anchor = difference.section.split("#")
        spans = [line.strip().removeprefix("torch ") for line in difference.table().splitlines()[1:]]
        by_release = "<br>".join(
            f"**{span.split(' ', 1)[0]}**: {span.split(' ', 1)[1].strip()}" for span in spans
        ).replace("|", "\\|")
        link = f"[{name[:2]} #{anchor}]({notebooks}{name}.ipynb#{anchor})"
        what = difference.what.rstrip(":").replace("|", "\\|")
        lines.append(f"| {link} | {what} | {by_release} |")
    return "\n".join(lines)
