"""Speed of the layer explorer when a learner switches layer or sample (targets: <= 50 ms median, >= 8x).

Everything is captured once (one forward + backward pass of the bundled CNN on 64 test digits).
Then, for many (layer, sample) choices, we time producing the new pictures:

* hookviz: setting the widget's Dropdown / sample values, which redraws both panels (the channel
  mosaic as one coloured array encoded by Pillow, the gradient histogram drawn straight into
  pixels) and ships them to the ``Output`` widgets; the picture cache is cleared before every switch
  so that nothing is reused;
* naive: the usual matplotlib way, one subplot per channel with its own ``imshow`` plus a
  ``hist`` of the gradient, saved to PNG.

Prints medians and the ratio; exits 1 when a target is missed.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import io  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

import hookviz  # noqa: E402
from hookviz.widgets import LayerExplorer  # noqa: E402

TARGET_MS, TARGET_RATIO = 50.0, 8.0


def naive_pictures(state) -> bytes:  # noqa: ANN001
    """One matplotlib subplot per channel, plus a histogram, as a learner would first write it."""
    maps = state.maps() if state.kind == "maps" else state.activation().reshape(1, 1, -1)
    n = len(maps)
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols + 1, figsize=(2 + cols, rows), squeeze=False)
    for i in range(rows * cols):
        ax = axes[i // cols][i % cols]
        if i < n:
            ax.imshow(maps[i])
        ax.axis("off")
    grad = state.gradient()
    if grad is not None:
        axes[0][cols].hist(grad.reshape(-1), bins=40)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=72)
    plt.close(fig)
    return buf.getvalue()


def main() -> int:
    torch.set_num_threads(1)
    model = hookviz.load_pretrained_cnn()
    x, y = hookviz.load_digits("test")
    explorer = LayerExplorer(model, x[:64], y[:64])
    state = explorer.state
    layers = [n for n in state.layers if n.startswith("features.")]  # layers with feature maps
    choices = [(layers[i % len(layers)], (7 * i) % 64) for i in range(120)]

    def hookviz_switch(layer: str, sample: int) -> float:
        state._png_cache.clear()
        t0 = time.perf_counter()
        with explorer.hold_trait_notifications():
            explorer.layer.value = layer
        explorer.sample.value = sample
        return time.perf_counter() - t0

    def naive_switch(layer: str, sample: int) -> float:
        state.select(layer=layer, sample=sample)
        t0 = time.perf_counter()
        naive_pictures(state)
        return time.perf_counter() - t0

    for layer, sample in choices[:10]:  # warm-up (fonts, colour tables)
        hookviz_switch(layer, sample)
        naive_switch(layer, sample)
    fast, slow = [], []
    for i, (layer, sample) in enumerate(choices):
        fast.append(hookviz_switch(layer, (sample + 1) % 64))
        if i % 3 == 0:  # the naive way is slow; a third of the choices is plenty
            slow.append(naive_switch(layer, sample))
    assert state.forward_passes == 1, "switching must not re-run the model"
    med_fast = statistics.median(fast) * 1e3
    med_slow = statistics.median(slow) * 1e3
    ratio = med_slow / med_fast
    print(f"bench_explorer: {len(fast)} switches over {len(layers)} conv-block layers, 64 captured samples")
    print(f"  hookviz switch (mosaic + histogram, to Output)  median {med_fast:7.2f} ms  (target <= {TARGET_MS})")
    print(f"  naive: one matplotlib subplot per channel       median {med_slow:7.2f} ms")
    print(f"  ratio x{ratio:.1f}  (target >= {TARGET_RATIO})")
    print(f"  model runs while switching: {state.forward_passes - 1}")
    failed = med_fast > TARGET_MS or ratio < TARGET_RATIO
    print("FAIL" if failed else "OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
