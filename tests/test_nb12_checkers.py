"""Notebook 12's checkers: a right answer passes, each common wrong answer gets its own hint."""

from collections.abc import Callable

import pytest
import torch

from hookviz.exercises import ExerciseNotSolved, nb12


def _weights(average: bool, ask: bool = True, remove: bool = True) -> Callable[..., torch.Tensor]:
    def attention_weights(model, tokens, index):  # noqa: ANN001, ANN202
        attn = model.encoder.layers[index].self_attn
        kept = {}
        handles = []
        if ask:
            handles.append(
                attn.register_forward_pre_hook(
                    lambda m, a, kw: (a, {**kw, "need_weights": True, "average_attn_weights": average}),
                    with_kwargs=True,
                )
            )
        handles.append(attn.register_forward_hook(lambda m, a, out: kept.update(w=out[1])))
        try:
            with torch.no_grad():
                model(tokens)
        finally:
            if remove:
                for handle in handles:
                    handle.remove()
        return kept["w"]

    return attention_weights


def _patch(position_only: bool, returns: bool) -> Callable[..., torch.Tensor]:
    def patch_position(model, clean, corrupt, layer_index, position):  # noqa: ANN001, ANN202
        layer = model.encoder.layers[layer_index]
        kept = {}
        handle = layer.register_forward_hook(lambda m, a, out: kept.update(clean=out.detach()))
        try:
            with torch.no_grad():
                model(clean)
        finally:
            handle.remove()

        def patch(module, args, output):  # noqa: ANN001, ANN202
            if not position_only:
                return kept["clean"]
            output = output.clone()
            output[:, position] = kept["clean"][:, position]
            return output if returns else None

        handle = layer.register_forward_hook(patch)
        try:
            with torch.no_grad():
                return model(corrupt)
        finally:
            handle.remove()

    return patch_position


def _lens(norm: bool) -> Callable[..., list[torch.Tensor]]:
    def logit_lens(model, tokens):  # noqa: ANN001, ANN202
        outputs: list[torch.Tensor] = []
        handles = [layer.register_forward_hook(lambda m, a, out: outputs.append(out)) for layer in model.encoder.layers]
        try:
            with torch.no_grad():
                model(tokens)
                return [model.head(model.encoder.norm(o) if norm else o) for o in outputs]
        finally:
            for handle in handles:
                handle.remove()

    return logit_lens


def test_right_answers_pass(capsys: pytest.CaptureFixture[str]) -> None:
    nb12.check_attention_weights(_weights(average=False))
    nb12.check_patch_position(_patch(position_only=True, returns=True))
    nb12.check_logit_lens(_lens(norm=True))
    assert capsys.readouterr().out.count("✓") == 3


@pytest.mark.parametrize(
    ("check", "answer", "hint"),
    [
        (nb12.check_attention_weights, _weights(average=True), "average_attn_weights=False"),
        (nb12.check_attention_weights, _weights(average=False, ask=False), "need_weights=False"),
        (nb12.check_patch_position, _patch(position_only=True, returns=False), "returned None"),
        (nb12.check_patch_position, _patch(position_only=False, returns=True), "only the one position"),
        (nb12.check_logit_lens, _lens(norm=False), "final norm"),
    ],
)
def test_wrong_answers_get_their_hint(check: Callable[..., None], answer: Callable[..., object], hint: str) -> None:
    with pytest.raises(ExerciseNotSolved, match=hint):
        check(answer)


def test_a_hook_left_behind_is_named() -> None:
    with pytest.raises(ExerciseNotSolved, match=r"2 hook\(s\) are still attached .*encoder.layers.0.self_attn"):
        nb12.check_attention_weights(_weights(average=False, remove=False))


def test_the_stub_is_not_solved() -> None:
    def stub(*args: object) -> None:
        raise NotImplementedError

    for check in (nb12.check_attention_weights, nb12.check_patch_position, nb12.check_logit_lens):
        with pytest.raises(ExerciseNotSolved, match="not solved yet"):
            check(stub)


def _leaves_a_global_hook(answer: Callable[..., object]) -> Callable[..., object]:
    """The right answer, plus a global forward hook it never removes (it fires for every module in the process)."""

    def leaky(*args: object) -> object:
        torch.nn.modules.module.register_module_forward_hook(lambda module, inputs, output: None)
        return answer(*args)

    return leaky


@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (nb12.check_attention_weights, _weights(average=False)),
        (nb12.check_patch_position, _patch(position_only=True, returns=True)),
        (nb12.check_logit_lens, _lens(norm=True)),
    ],
)
def test_a_global_hook_left_behind_is_refused_and_removed(
    check: Callable[..., None], answer: Callable[..., object]
) -> None:
    before = len(torch.nn.modules.module._global_forward_hooks)
    with pytest.raises(ExerciseNotSolved, match=r"global module hook\(s\) \(global_forward\) are still registered"):
        check(_leaves_a_global_hook(answer))
    assert len(torch.nn.modules.module._global_forward_hooks) == before  # the checker cleaned up after the learner


def test_fast_path_left_off_is_named_not_blamed_on_a_hook() -> None:
    right = _weights(average=False)

    def fast_path_off(model, tokens, index):  # noqa: ANN001, ANN202
        torch.backends.mha.set_fastpath_enabled(False)
        return right(model, tokens, index)

    with pytest.raises(ExerciseNotSolved, match=r"set_fastpath_enabled\(False\) is still in effect") as caught:
        nb12.check_attention_weights(fast_path_off)
    assert "a hook is still attached" not in str(caught.value)
    assert torch.backends.mha.get_fastpath_enabled()  # the checker turned it back on


def test_in_place_patch_without_return_passes(capsys: pytest.CaptureFixture[str]) -> None:
    """Assigning into the output itself (no clone, no return) changes the output: the checker accepts it."""

    def patch_position(model, clean, corrupt, layer_index, position):  # noqa: ANN001, ANN202
        layer = model.encoder.layers[layer_index]
        kept = {}
        handle = layer.register_forward_hook(lambda m, a, out: kept.update(clean=out.detach()))
        try:
            with torch.no_grad():
                model(clean)
        finally:
            handle.remove()

        def patch(module, args, output):  # noqa: ANN001, ANN202
            output[:, position] = kept["clean"][:, position]

        handle = layer.register_forward_hook(patch)
        try:
            with torch.no_grad():
                return model(corrupt)
        finally:
            handle.remove()

    nb12.check_patch_position(patch_position)
    assert capsys.readouterr().out.startswith("✓")
