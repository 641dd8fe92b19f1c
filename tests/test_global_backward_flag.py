"""The global backward-hook flag, proven in a fresh process (notebook 05 states it; running it there would
spoil the kernel for good, because PyTorch has no public call that resets the flag).

Once a legacy global backward hook was registered, even if removed at once, every full global backward
hook is refused for the rest of the process; a fresh process starts with the flag unset.
"""

from __future__ import annotations

import subprocess
import sys

FRESH_PROCESS = """
import torch.nn.modules.module as module_hooks
print("flag in a fresh process:", module_hooks._global_is_full_backward_hook)
with module_hooks.register_module_backward_hook(lambda module, grad_input, grad_output: None):
    pass
print("legacy global hook registered and removed, flag:", module_hooks._global_is_full_backward_hook)
try:
    module_hooks.register_module_full_backward_hook(lambda module, grad_input, grad_output: None)
except RuntimeError as err:
    print("then a full one: RuntimeError:", str(err).split(" as ")[0])
"""


def test_a_removed_legacy_global_backward_hook_blocks_full_ones_for_the_process():
    result = subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == [
        "flag in a fresh process: None",
        "legacy global hook registered and removed, flag: False",
        "then a full one: RuntimeError: Cannot use both regular backward hooks and full backward hooks",
    ]
