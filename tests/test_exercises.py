"""Exercises in the teacher notebooks are well formed, solved, and backed by a documented checker module.

No kernel is started here: these tests read the notebooks' stored outputs (which nbval re-verifies on
every ``make test``) and import the checker modules. ``tests/test_student.py`` proves the other half,
that each check fails without its solution.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from pathlib import Path

import nbformat
import pytest
from notebook_tools import NOTEBOOKS, REPO, make_student, nb_id

#: Notebooks allowed to have fewer than two exercises (the welcome tour and the FAQ).
FEW_EXERCISES_OK = {"00", "10"}
MIN_EXERCISES, MAX_EXERCISES = 2, 4


def number(path: Path) -> str:
    return path.name[:2]


def stdout_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_exercises_are_triples_in_order(path):
    """Each exercise is exactly one exercise, one solution and one check cell, in that order."""
    found = make_student.exercises(read(path))  # raises ValueError with the offending cells
    if number(path) in FEW_EXERCISES_OK:
        assert len(found) <= MAX_EXERCISES
    else:
        assert MIN_EXERCISES <= len(found) <= MAX_EXERCISES, f"{path.name} has {len(found)} exercises, wants 2-4"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_exercise_stubs_are_unsolved(path):
    """The stub the learner edits raises NotImplementedError or leaves ``answer = None``-style blanks."""
    nb = read(path)
    for ex in make_student.exercises(nb):
        source = nb.cells[ex.exercise].source
        assert "NotImplementedError" in source or re.search(r"=\s*None\b", source), (
            f"{path.name} exercise {ex.number}: the stub should `raise NotImplementedError` or set a name to None"
        )
        assert source.strip() != nb.cells[ex.solution].source.strip(), "the stub must differ from the solution"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_teacher_checks_pass_in_the_stored_outputs(path):
    """In the teacher notebook every solution ran cleanly and every check printed its ✓ (nbval re-checks)."""
    nb = read(path)
    for ex in make_student.exercises(nb):
        for role, index in (("solution", ex.solution), ("check", ex.check)):
            cell = nb.cells[index]
            assert cell.execution_count is not None, f"{path.name} exercise {ex.number}: the {role} cell never ran"
            errs = [o for o in cell.outputs if o.get("output_type") == "error"]
            assert not errs, f"{path.name} exercise {ex.number}: the {role} cell raised {errs[0]['ename']}"
        assert "✓" in stdout_text(nb.cells[ex.check]), f"{path.name} exercise {ex.number}: the check shows no ✓"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_checks_use_the_notebooks_checker_module(path):
    """Checkers live in ``hookviz.exercises.nbNN`` (NN = the notebook's number), not in the notebook."""
    nb = read(path)
    if not make_student.exercises(nb):
        pytest.skip("no exercises")
    module = f"nb{number(path)}"
    sources = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    pattern = rf"hookviz\.exercises\.{module}\b|from\s+hookviz\.exercises\s+import\s+[^\n]*\b{module}\b"
    assert re.search(pattern, sources), f"{path.name} should import its checkers from hookviz.exercises.{module}"
    assert (REPO / "hookviz" / "exercises" / f"{module}.py").is_file()


def _checker_modules() -> list[str]:
    folder = REPO / "hookviz" / "exercises"
    return sorted(p.stem for p in folder.glob("nb[0-9][0-9].py"))


@pytest.mark.parametrize("module_name", _checker_modules())
def test_checker_module_is_documented_and_typed(module_name):
    """Each public checker has a docstring and type hints, and the module explains itself."""
    module = importlib.import_module(f"hookviz.exercises.{module_name}")
    assert (module.__doc__ or "").strip(), f"hookviz.exercises.{module_name} needs a module docstring"
    public = [
        obj
        for name, obj in vars(module).items()
        if not name.startswith("_") and inspect.isfunction(obj) and obj.__module__ == module.__name__
    ]
    assert public, f"hookviz.exercises.{module_name} defines no checker"
    for fn in public:
        assert (fn.__doc__ or "").strip(), f"{module_name}.{fn.__name__} needs a docstring"
        sig = inspect.signature(fn)
        missing = [p.name for p in sig.parameters.values() if p.annotation is inspect.Parameter.empty]
        assert not missing, f"{module_name}.{fn.__name__}: parameters without type hints: {missing}"
        assert sig.return_annotation is not inspect.Signature.empty, f"{module_name}.{fn.__name__}: no return type"


# --------------------------------------------------------------------------- wrong answers get specific hints


def _hint_for(check, answer) -> str:
    from hookviz.exercises import ExerciseNotSolved

    with pytest.raises(ExerciseNotSolved) as info:
        check(answer)
    return str(info.value)


def test_nb00_late_binding_closure_gets_its_own_hint():
    from hookviz.exercises import nb00

    def record_output_shapes(model, x):
        shapes, handles = {}, []
        for name, module in model.named_modules():
            if name and not list(module.children()):
                # every lambda looks `name` up when it runs: the last name of the loop
                handles.append(module.register_forward_hook(lambda m, a, out: shapes.update({name: tuple(out.shape)})))  # noqa: B023 (the bug under test)
        try:
            model(x)
        finally:
            for handle in handles:
                handle.remove()
        return shapes

    hint = _hint_for(nb00.check_record_output_shapes, record_output_shapes)
    assert "same name" in hint and "name=name" in hint
    assert "leaf module has no children" not in hint


def test_nb07_one_optimizer_for_all_parameters_is_rejected():
    from hookviz.exercises import nb07

    def attach_optimizers(model, make_optimizer):
        optimizer = make_optimizer(list(model.parameters()))

        def step(param):
            optimizer.step()
            param.grad = None

        return [param.register_post_accumulate_grad_hook(step) for param in model.parameters()]

    hint = _hint_for(nb07.check_optimizer_in_backward, attach_optimizers)
    assert "one optimizer per parameter" in hint.lower() and "make_optimizer([param])" in hint

    def optimizer_made_in_the_hook(model, make_optimizer):
        def step(param):
            make_optimizer([param]).step()
            param.grad = None

        return [param.register_post_accumulate_grad_hook(step) for param in model.parameters()]

    assert "not inside the hook" in _hint_for(nb07.check_optimizer_in_backward, optimizer_made_in_the_hook)


def test_nb04_module_hooks_instead_of_tensor_hooks_get_a_specific_hint_and_no_warning():
    import warnings

    from hookviz.exercises import nb04

    def add_clip_hooks(model, limit):
        def clip(module, grad_input, grad_output):
            return tuple(None if g is None else g.clamp(-limit, limit) for g in grad_input)

        return [m.register_full_backward_hook(clip) for m in model.modules()]

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        hint = _hint_for(nb04.check_clip_hooks, add_clip_hooks)
    assert "module hooks" in hint and "register_hook" in hint
    assert [str(w.message) for w in seen] == []


def test_renamed_checkers_keep_their_old_names():
    from hookviz.exercises import nb00, nb01

    assert nb00.check_grad_norm_logger is nb00.check_attach_grad_norm_logger
    assert nb01.check_grad_norm_logger is nb01.check_grad_norm_logger_class
    assert nb00.check_attach_grad_norm_logger is not nb01.check_grad_norm_logger_class


# --------------------------------------------------------------------------- the learner's own errors show where


def test_strict_checks_brings_full_tracebacks_back(shell, capsys):
    shell.run_cell("%xmode Minimal")
    assert shell.InteractiveTB.mode == "Minimal"
    shell.run_cell("import hookviz.exercises\nhookviz.exercises.soft_checks()")
    assert shell.InteractiveTB.mode == "Minimal", "turning soft checks on leaves the notebook's mode alone"
    shell.run_cell("hookviz.exercises.strict_checks()")
    assert shell.InteractiveTB.mode == "Context"
    assert not shell.run_cell("print(hookviz.exercises.soft_checks_enabled())").error_in_exec
    assert capsys.readouterr().out.splitlines()[-1] == "False"
    # and the traceback of an error in a cell now shows the failing line, with its neighbours
    shell.run_cell("def broken_hook(grad):\n    return grad * undefined_name\n\nbroken_hook(1)")
    out = capsys.readouterr()
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.out + out.err)  # without the terminal colours
    assert "return grad * undefined_name" in text and "broken_hook" in text, text


def test_a_typo_in_a_learners_hook_shows_its_function_and_cell_line_in_a_soft_check(shell, capsys):
    shell.run_cell("%xmode Minimal")
    shell.run_cell("import hookviz.exercises\nhookviz.exercises.soft_checks()")
    shell.run_cell(
        "def make_hook(store, name):\n"
        "    def hook(module, args, output):\n"
        "        store[name] = outptu.detach()\n"
        "\n"
        "    return hook\n"
    )
    capsys.readouterr()
    result = shell.run_cell("from hookviz.exercises import nb02\n\nnb02.check_feature_hook(make_hook)")
    assert not result.error_in_exec, "a soft check never stops the cell"
    printed = capsys.readouterr().out
    assert printed.startswith("✗ your code raised NameError: name 'outptu' is not defined"), printed
    assert "in `hook`, line 3 of its cell: `store[name] = outptu.detach()`" in printed, printed
    assert "`outptu` is not defined where your function runs" in printed


def test_a_strict_check_raises_the_located_hint(shell, capsys):
    shell.run_cell("%xmode Minimal")
    shell.run_cell("def clip_hook(grad):\n    return min(grad, 1)\n")
    result = shell.run_cell("from hookviz.exercises import nb01\nnb01.check_clip_hook(clip_hook)")
    error = result.error_in_exec
    assert type(error).__name__ == "ExerciseNotSolved"
    assert "in `clip_hook`, line 2 of its cell: `return min(grad, 1)`" in str(error)
    assert "Python's `if`, `and`/`or`, `min`" in str(error)


def test_learner_tracebacks_leaves_the_xmode_line_out():
    from hookviz.exercises import learner_tracebacks

    source = "import torch\n\ntorch.manual_seed(0)\n%xmode Minimal\nprint('%xmode Minimal')"
    changed = learner_tracebacks(source)
    assert changed.splitlines() == ["import torch", "", "torch.manual_seed(0)", "print('%xmode Minimal')"]
    commented = "# Cells meant to fail show just the error.\n%xmode Minimal\n\nimport torch"
    assert learner_tracebacks(commented) == "import torch", "the comment about the mode goes with it"
    assert learner_tracebacks("# the model\n%xmode Minimal\nx = 1") == "# the model\nx = 1"
    assert learner_tracebacks("x = 1") == "x = 1"
    for path in NOTEBOOKS:
        for cell in read(path).cells:
            if cell.cell_type == "code" and "%xmode Minimal" in cell.source:
                student = learner_tracebacks(cell.source)
                assert "%xmode" not in student, path.name
                if hasattr(make_student, "learner_code"):  # the student-copy script makes the same change
                    assert make_student.learner_code(cell.source) == student, path.name


def test_describe_learner_error_without_a_learner_frame_blames_what_was_returned():
    from hookviz.exercises import describe_learner_error

    # raised by the check itself (no frame of the learner's), choking on what the learner's code returned
    error = TypeError("relu(): argument 'input' (position 1) must be Tensor, not tuple")
    message = describe_learner_error(error)
    assert message.startswith("the check could not use what your code gave it (TypeError:"), message
    assert "a module received a tuple where it wanted a tensor" in message
