"""Check the course's GPU claims on a machine with CUDA (prints a report; exits non-zero on a failure).

Run from the repository root on a CUDA machine: ``python bench/gpu_check.py``. Needs only torch, numpy
and matplotlib. The notebooks' stored outputs are made on CPU; this script is how the course checks what
it says about GPUs:

1. hooks of every module kind fire on a CUDA model and receive CUDA tensors (article claim A10);
2. ``hookviz.capture`` on a CUDA model stores activations and gradients on the CPU, equal to autograd's;
3. 100 captures in a loop do not grow CUDA memory, and no hook is left behind;
4. what hooks cost on a CUDA training step of the bundled CNN (a ratio, one run);
5. ``torch.autograd.graph.save_on_cpu()`` moves a training forward's saved tensors off the GPU and leaves the
   gradients unchanged (notebook 07's note on ``save_on_cpu``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hookviz.capture import capture  # noqa: E402
from hookviz.data import load_digits  # noqa: E402
from hookviz.hooks_table import list_hooks  # noqa: E402
from hookviz.models import DigitsCNN  # noqa: E402

FAILURES: list[str] = []


def check(condition: bool, what: str) -> None:
    """Print one result line and remember failures."""
    print(f"{'PASS' if condition else 'FAIL'}  {what}")
    if not condition:
        FAILURES.append(what)


def hooks_fire_on_gpu(device: torch.device) -> None:
    model = DigitsCNN().to(device)
    seen: dict[str, str] = {}

    def note(kind: str, tensor: torch.Tensor) -> None:  # returns None: a hook's return value can replace data
        seen.setdefault(kind, tensor.device.type)

    conv = model.features[0]
    conv.register_forward_pre_hook(lambda m, args: note("forward_pre", args[0]))
    conv.register_forward_hook(lambda m, args, out: note("forward", out))
    conv.register_full_backward_pre_hook(lambda m, go: note("backward_pre", go[0]))
    conv.register_full_backward_hook(lambda m, gi, go: note("backward", go[0]))
    conv.weight.register_hook(lambda g: note("tensor", g))
    conv.weight.register_post_accumulate_grad_hook(lambda p: note("post_accumulate", p.grad))
    x, _ = load_digits("test")
    model(x[:16].to(device).requires_grad_()).sum().backward()
    kinds = ["forward_pre", "forward", "backward_pre", "backward", "tensor", "post_accumulate"]
    check(all(seen.get(k) == "cuda" for k in kinds), f"A10: six hook kinds fire on {device} with CUDA tensors: {seen}")


def capture_on_gpu(device: torch.device) -> None:
    torch.manual_seed(0)
    model = DigitsCNN().to(device)
    x, _ = load_digits("test")
    x = x[:32].to(device)
    with capture(model, ["features.0", "features.4"]) as cap:
        model(x).logsumexp(1).sum().backward()
    h0 = model.features[0](x)
    rest = model.features[1:](h0)
    (g0,) = torch.autograd.grad(model.classifier(rest).logsumexp(1).sum(), [h0])
    act, grad = cap.activation("features.0"), cap.gradient("features.0")
    check(act.device.type == "cpu" and grad.device.type == "cpu", "capture stores CUDA activations/gradients on CPU")
    check(torch.allclose(act, h0.detach().cpu(), atol=1e-5), "captured activation equals the CUDA forward")
    check(torch.allclose(grad, g0.cpu(), atol=1e-5), "captured gradient equals torch.autograd.grad on CUDA")


def no_growth_on_gpu(device: torch.device) -> None:
    model = DigitsCNN().to(device)
    x, _ = load_digits("test")
    x = x[:64].to(device)

    def once() -> None:
        with capture(model, key="gpu-loop"):
            model(x).sum().backward()
        model.zero_grad(set_to_none=True)

    for _ in range(5):
        once()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated(device)
    for _ in range(100):
        once()
    torch.cuda.synchronize()
    growth = torch.cuda.memory_allocated(device) - before
    check(growth <= 0, f"100 captures on CUDA: allocated memory grew by {growth} bytes")
    check(len(list_hooks(model, include_global=False)) == 0, "no hook left on the CUDA model")


def overhead_on_gpu(device: torch.device) -> None:
    model = DigitsCNN().to(device)
    x, y = load_digits("train")
    x, y = x[:256].to(device), y[:256].to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step() -> None:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    def timed(n: int = 200) -> float:
        for _ in range(20):
            step()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / n

    bare = timed()
    handles = [m.register_forward_hook(lambda *a: None) for m in model.modules()]
    empty_hooks = timed()
    for h in handles:
        h.remove()
    with capture(model, reduce=lambda t: t.float().abs().mean()):
        stats_on_gpu = timed()
    with capture(model):
        full_copies = timed()
    print(
        f"INFO  CUDA training step of DigitsCNN (batch 256): bare {bare * 1e3:.3f} ms; "
        f"x{empty_hooks / bare:.2f} with an empty forward hook on every module; "
        f"x{stats_on_gpu / bare:.2f} capturing a statistic of every output and gradient; "
        f"x{full_copies / bare:.2f} copying every output and gradient to CPU"
    )


def save_on_cpu_on_gpu(device: torch.device) -> None:
    """Compare CUDA memory growth over a training forward, and the gradients, with and without save_on_cpu."""
    x, y = load_digits("train")
    x, y = x[:64].to(device), y[:64].to(device)

    def forward_growth_and_grads(offload: bool) -> tuple[int, list[torch.Tensor]]:
        torch.manual_seed(0)
        model = DigitsCNN().to(device).train()
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated(device)
        if offload:
            with torch.autograd.graph.save_on_cpu():
                loss = nn.functional.cross_entropy(model(x), y)
        else:
            loss = nn.functional.cross_entropy(model(x), y)
        torch.cuda.synchronize()
        growth = torch.cuda.memory_allocated(device) - before
        loss.backward()
        return growth, [p.grad.detach().clone() for p in model.parameters()]

    deterministic = torch.backends.cudnn.deterministic
    torch.backends.cudnn.deterministic = True  # cuDNN's own nondeterminism would blur the gradient comparison
    try:
        plain_growth, plain_grads = forward_growth_and_grads(offload=False)
        offload_growth, offload_grads = forward_growth_and_grads(offload=True)
    finally:
        torch.backends.cudnn.deterministic = deterministic
    identical = all(torch.equal(a, b) for a, b in zip(plain_grads, offload_grads, strict=True))
    print(
        f"INFO  save_on_cpu, training forward of 64 digits through DigitsCNN: CUDA memory allocated grew by "
        f"{plain_growth} bytes without it, {offload_growth} bytes with it; gradients bit-identical: {identical}"
    )
    check(offload_growth < plain_growth / 2, "save_on_cpu keeps the forward's saved tensors off the GPU")
    close = all(torch.allclose(a, b, rtol=1e-5, atol=1e-7) for a, b in zip(plain_grads, offload_grads, strict=True))
    check(close, "gradients with save_on_cpu equal plain backward on CUDA")


def main() -> int:
    """Run the checks; return the exit status."""
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check here")
        return 0
    device = torch.device("cuda")
    print(f"INFO  torch {torch.__version__} on {torch.cuda.get_device_name(device)}")
    hooks_fire_on_gpu(device)
    capture_on_gpu(device)
    no_growth_on_gpu(device)
    overhead_on_gpu(device)
    save_on_cpu_on_gpu(device)
    print(f"{len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
