"""One training step for the digits: the trainer and the monitor share it, and it is the plain loop."""

import torch
from torch import nn

import hookviz
from hookviz.data import load_digits


def test_make_digits_step_is_the_plain_adamw_loop():
    torch.manual_seed(0)
    model = hookviz.DigitsCNN()
    reference = hookviz.DigitsCNN()
    reference.load_state_dict(model.state_dict())
    step = hookviz.make_digits_step(model, batch_size=32, seed=3)
    x, y = load_digits("train")
    opt = torch.optim.AdamW(reference.parameters(), lr=3e-3, weight_decay=1e-4)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(3)).split(32)
    reference.train()
    for idx in order[:3]:
        loss = nn.functional.cross_entropy(reference(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        got = step()
        assert not got.requires_grad
        torch.testing.assert_close(got, loss.detach(), rtol=0, atol=0)
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        assert torch.equal(p, q)
    assert step.steps_per_epoch == len(order) and model.training
