# ruff: noqa: E501 (a message and its translation stay on one line where they fit, so each pair reads at a glance)
"""The Chinese (zh-Hans) catalogue of hookviz's learner-facing messages, used by :mod:`hookviz.i18n`.

Each key is an English message exactly as the code writes it; ``{}`` stands for a computed part (a
number, a name, an error message) and the translation puts the values back in the same order (``{0}``,
``{1}``... to reorder them). A literal brace is written ``{{`` / ``}}``. Terms follow
``i18n/zh/glossary.md``; code (API names, expressions) stays as written.
"""

from __future__ import annotations

MESSAGES: dict[str, str] = {
    # --- shared by every checker ---------------------------------------------------------------------
    "not solved yet: replace `raise NotImplementedError` in the exercise cell with your code": (
        "还没有完成：把练习单元格中的 `raise NotImplementedError` 换成你的代码"
    ),
    "not solved yet: set `answer` in the exercise cell": "还没有完成：在练习单元格中给 `answer` 赋值",
    # --- the learner's own errors (hookviz.exercises.describe_learner_error): the error itself stays as
    # Python printed it, in code font, so that it can be searched for; everything around it is Chinese ------
    "your code raised {}": "你的代码抛出了 `{}`",
    "in `{}`, line {} of its cell: `{}`": "出错位置：函数 `{0}`，所在单元格第 {1} 行：`{2}`",
    "in `{}`, line {} of its cell": "出错位置：函数 `{0}`，所在单元格第 {1} 行",
    "at line {} of its cell: `{}`": "出错位置：所在单元格第 {0} 行：`{1}`",
    "at line {} of its cell": "出错位置：所在单元格第 {} 行",
    "in `{}`, line {} of {}: `{}`": "出错位置：函数 `{0}`，文件 {2} 第 {1} 行：`{3}`",
    "in `{}`, line {} of {}": "出错位置：函数 `{0}`，文件 {2} 第 {1} 行",
    "at line {} of {}: `{}`": "出错位置：文件 {1} 第 {0} 行：`{2}`",
    "at line {} of {}": "出错位置：文件 {1} 第 {0} 行",
    "hint: {}": "提示：{}",
    "the check could not use what your code gave it ({}). Compare what your function returns (and what your hook "
    "returns) with what the exercise asks for.": (
        "检查程序无法使用你的代码交给它的结果（`{}`）。请把你的函数（以及你的钩子）返回的值与练习的要求对照一下。"
    ),
    # hints for common mistakes, recognised by the error message (hookviz.exercises._HINTS)
    "a module received a {} where it wanted a tensor. A forward hook that returns something replaces the module's "
    "output (and a pre-hook's return value replaces its input): a hook that only records must return None.": (
        "某个模块需要张量，却收到了 `{}`。前向钩子返回的值会替换模块的输出（前向预钩子的返回值会替换模块的输入）："
        "只做记录的钩子必须返回 None。"
    ),
    "`append` is a list method: a dict is filled with `store[key] = value`.": (
        "`append` 是列表的方法：字典要用 `store[key] = value` 来填入。"
    ),
    "this is a list, not a dict: a list is filled with `.append(value)` and read by position.": (
        "这是列表，不是字典：列表用 `.append(value)` 填入，按下标读取。"
    ),
    "Python's `if`, `and`/`or`, `min`, `max` or `sorted` on a tensor with several values needs one True/False: use "
    "tensor operations instead (`t.min()`, `torch.maximum(a, b)`, `(t > 0).any()`, `.all()`).": (
        "Python 的 `if`、`and`/`or`、`min`、`max` 或 `sorted` 用在含多个值的张量上时，需要的是单个 True/False："
        "请改用张量运算（`t.min()`、`torch.maximum(a, b)`、`(t > 0).any()`、`.all()`）。"
    ),
    "the function's parameters do not match how it is called. PyTorch calls each hook kind with fixed arguments (a "
    "tensor hook `hook(grad)`, a forward hook `hook(module, args, output)`, a forward pre-hook `hook(module, args)`, "
    "a full backward hook `hook(module, grad_input, grad_output)`): compare your `def` line with the exercise text.": (
        "函数的参数与它被调用的方式不符。PyTorch 以固定的参数调用每种钩子（张量钩子 `hook(grad)`，前向钩子 "
        "`hook(module, args, output)`，前向预钩子 `hook(module, args)`，完整反向钩子 "
        "`hook(module, grad_input, grad_output)`）：请把你的 `def` 那一行与练习的说明对照一下。"
    ),
    "that value is a tuple: a hook's `args` (and `grad_input`/`grad_output`) are tuples; the tensor is `args[0]`.": (
        "这个值是元组：钩子的 `args`（以及 `grad_input`/`grad_output`）都是元组；张量是 `args[0]`。"
    ),
    "that value is a shape (`torch.Size`), not a tensor: keep the tensor itself where a tensor is needed.": (
        "这个值是形状（`torch.Size`），不是张量：需要张量的地方请保留张量本身。"
    ),
    "a tensor that is part of the autograd graph cannot become a NumPy array: `.detach()` it first.": (
        "属于 autograd 图的张量不能直接转成 NumPy 数组：请先对它调用 `.detach()`。"
    ),
    "an in-place change (`*=`, `+=`, `.clamp_()`, `x[...] = ...`) hit a tensor that autograd still needs: build a "
    "new tensor and return it.": (
        "一次原地操作（`*=`、`+=`、`.clamp_()`、`x[...] = ...`）改动了 autograd 仍然需要的张量：请构造一个新张量并返回它。"
    ),
    "`.item()` and `float(...)` take a single value: reduce the tensor first (`.norm()`, `.sum()`, `.max()`).": (
        "`.item()` 和 `float(...)` 只接受单个值：请先把张量归约成一个数（`.norm()`、`.sum()`、`.max()`）。"
    ),
    "a gradient returned by a hook must keep the shape and dtype of the one it received.": (
        "钩子返回的梯度必须与它收到的梯度形状相同、dtype 相同。"
    ),
    "a hook can only be registered on a tensor that requires grad, and this one does not: it was created without "
    "`requires_grad=True`, computed under `torch.no_grad()`, `.detach()`ed, or it is a frozen parameter. Register "
    "the hook on a tensor that is part of the autograd graph (or call `.requires_grad_()` on a leaf tensor first).": (
        "只能在需要梯度的张量上注册钩子，而这个张量不需要梯度：它创建时没有 `requires_grad=True`，或是在 "
        "`torch.no_grad()` 下算出的，或经过了 `.detach()`，或是被冻结的参数。请把钩子注册在属于 autograd 图的张量上"
        "（或者先对叶子张量调用 `.requires_grad_()`）。"
    ),
    "`{}` is not defined where your function runs: a typo, or a name from another cell (the checker calls your "
    "function on models of its own; use the arguments it receives).": (
        "`{}` 在你的函数运行的地方没有定义：可能是拼写错误，也可能用了另一个单元格里的名字（检查程序会在它自己的模型上"
        "调用你的函数；请使用函数收到的参数）。"
    ),
    "the tiny transformer": "课程自带的小型 Transformer",
    "a 4-head model": "一个 4 头的模型",
    # --- widget captions (ipywidgets labels, drawn by the browser; see hookviz/widgets) --------------------
    "layer": "层",
    "type": "类型",
    "sample": "样本",
    "page": "页",
    "head": "注意力头",
    "gradient of": "对谁求梯度",
    "hide exact zeros": "隐藏精确的零",
    "log counts": "计数取对数",
    "steps": "步数",
    "Train": "训练",
    "Stop": "停止",
    "kinds": "种类",
    "where": "位置",
    "phase": "阶段",
    "kind": "种类",
    "all": "全部",
    "no hook calls match these filters": "没有符合这些筛选条件的钩子调用",
    # --- nb00 ----------------------------------------------------------------------------------------
    "when the forward pass raised an error, {} hook(s) stayed attached. Remove the hooks in a `finally:` block "
    "so that they go even when model(x) fails.": (
        "前向传播出错时，有 {} 个钩子留在了模型上。请在 `finally:` 块中移除钩子，这样即使 model(x) 失败，钩子也会被移除。"
    ),
    "record_output_shapes returns every leaf's output shape and leaves no hook behind": (
        "record_output_shapes 返回了每个叶子模块的输出形状，且没有留下钩子"
    ),
    "return the handle that the registration call gives you, so that the hook can be removed": (
        "请返回注册调用给你的句柄，这样钩子才能被移除"
    ),
    "two backward passes should log two values, got {}: {}": "两次反向传播应记录两个值，实际记录了 {} 个：{}",
    "expected the norms of the accumulated .grad, [5.0, 10.0], got {}": (
        "应为累加后 .grad 的范数 [5.0, 10.0]，实际为 {}"
    ),
    "after handle.remove() the hook still fired: return the hook's own handle": (
        "调用 handle.remove() 之后钩子仍然触发了：请返回这个钩子自己的句柄"
    ),
    "the logger sees .grad after it is written: norms [5.0, 10.0]": (
        "记录器在 .grad 写入之后读取它：范数为 [5.0, 10.0]"
    ),
    "return a dict {{layer name: output shape}}, not {}": "请返回字典 {{层名: 输出形状}}，而不是 {}",
    "the keys should be the leaf modules' names from named_modules() ({}), got {}. Hint: a leaf module has no "
    "children.": "键应为 named_modules() 中叶子模块的名字（{}），实际为 {}。提示：叶子模块没有子模块。",
    "{} hook(s) are still attached after your function returned. Keep the handles that register_forward_hook "
    "returns and call .remove() on each (a try/finally makes it safe).": (
        "你的函数返回后仍有 {} 个钩子挂在模型上。请保存 register_forward_hook 返回的句柄，并对每个句柄调用 "
        ".remove()（用 try/finally 最稳妥）。"
    ),
    "your log shows the incoming gradient (5.0 both times), not the accumulated .grad (5.0 then 10.0). Use the "
    "hook kind that fires after .grad is written and read param.grad.": (
        "你记录的是传入的梯度（两次都是 5.0），而不是累加后的 .grad（先 5.0 后 10.0）。请使用在 .grad 写入之后触发的"
        "钩子种类，并读取 param.grad。"
    ),
    "every hook wrote under the same name, {}: the last name of your loop. A lambda (or def) made inside a for "
    "loop looks the loop variable up when the hook runs - after the loop has ended - not when you register it. "
    "Bind the name when you register the hook: `lambda module, args, output, name=name: ...`, or build each hook "
    "in a small function `make_hook(name)` that returns it.": (
        "所有钩子都写在同一个名字 {} 下：那是循环中的最后一个名字。在 for 循环里定义的 lambda（或 def）在钩子运行时"
        "（循环早已结束）才查找循环变量，而不是在注册时。请在注册时绑定名字："
        "`lambda module, args, output, name=name: ...`，或者用一个返回钩子的小函数 `make_hook(name)` 来构造每个钩子。"
    ),
    "layer {}: expected the output shape as a tuple of ints, got {}. Hint: tuple(output.shape).": (
        "层 {}：输出形状应为由整数组成的元组，实际为 {}。提示：tuple(output.shape)。"
    ),
    "your hook failed with {}: {}. When it ran, param.grad was not written yet: choose the hook kind that fires "
    "after .grad is updated.": (
        "你的钩子出错：{}: {}。它运行时 param.grad 还没有写入：请选择在 .grad 更新之后触发的钩子种类。"
    ),
    # --- nb01 ----------------------------------------------------------------------------------------
    "your hook changed the gradient it received (an in-place operation); build a new tensor and return it": (
        "你的钩子修改了它收到的梯度（原地操作）；请构造一个新张量并返回它"
    ),
    "your hook returned None, so autograd keeps the original gradient: return the new one": (
        "你的钩子返回了 None，所以 autograd 保留原来的梯度：请返回新的梯度"
    ),
    "the hook must return a tensor, not {}": "钩子必须返回张量，而不是 {}",
    "values inside [-1, 1] must stay as they are and values outside must become -1 or 1": (
        "[-1, 1] 之内的值必须保持不变，之外的值必须变成 -1 或 1"
    ),
    "after backward x.grad should be all ones, got {}": "反向传播之后 x.grad 应全为 1，实际为 {}",
    "clip_hook returns a clamped copy and leaves autograd's gradient alone": (
        "clip_hook 返回截断后的副本，并且没有改动 autograd 的梯度"
    ),
    "return the handle that register_hook gave you, so that the caller can still remove the hook": (
        "请返回 register_hook 给你的句柄，这样调用者仍能移除钩子"
    ),
    "after the first backward fn should have run once, it ran {} times": (
        "第一次反向传播之后 fn 应运行一次，实际运行了 {} 次"
    ),
    "after a second backward fn should still have run once, it ran {} times: the hook has to remove itself the "
    "first time it runs": "第二次反向传播之后 fn 应仍然只运行过一次，实际运行了 {} 次：钩子必须在第一次运行时移除自己",
    "x.grad should be 20 (first pass, fn multiplies by 10) + 2 (second pass, no hook) = 22, got {} - does your "
    "hook return what fn returns?": (
        "x.grad 应为 20（第一次，fn 乘以 10）+ 2（第二次，没有钩子）= 22，实际为 {}——你的钩子返回 fn 的返回值了吗？"
    ),
    "after handle.remove() (before backward) fn must not run": "（反向传播之前）调用 handle.remove() 之后 fn 不应运行",
    "register_once runs fn in the first backward only, passes its result on, and can be removed early": (
        "register_once 只在第一次反向传播中运行 fn，把它的结果传下去，并且可以提前移除"
    ),
    "the logger needs a list attribute `norms` (start empty)": "记录器需要一个列表属性 `norms`（初始为空）",
    "attach(model) should register one hook per parameter (nn.Linear has 2) and return the list of handles": (
        "attach(model) 应为每个参数注册一个钩子（nn.Linear 有 2 个参数），并返回句柄列表"
    ),
    "one backward should log 2 norms (one per parameter), got {}": "一次反向传播应记录 2 个范数（每个参数一个），实际为 {}",
    "logged norms {} differ from the norms of p.grad {}": "记录的范数 {} 与 p.grad 的范数 {} 不同",
    "two backward passes should log 4 norms, got {}": "两次反向传播应记录 4 个范数，实际为 {}",
    "the second pass should log the norm of the accumulated p.grad (gradients add up until zero_grad): expected "
    "{}, got {}": "第二次应记录累加后 p.grad 的范数（在 zero_grad 之前梯度会累加）：应为 {}，实际为 {}",
    "after removing the handles nothing more should be logged": "移除句柄之后不应再记录任何内容",
    "GradNormLogger reads the accumulated p.grad from a bound-method post-accumulate hook": (
        "GradNormLogger 通过一个绑定方法形式的梯度累加后钩子读取累加后的 p.grad"
    ),
    "backward failed inside your hook ({}); do not write into the incoming gradient": (
        "反向传播在你的钩子里失败了（`{}`）；不要写入传入的梯度"
    ),
    # --- nb02 ----------------------------------------------------------------------------------------
    "make_hook must return a function (module, args, output) -> None": (
        "make_hook 必须返回一个函数 (module, args, output) -> None"
    ),
    "store should have the keys {} (the `name` given), got {}": "store 的键应为 {}（传入的 `name`），实际为 {}",
    "the model's output no longer requires grad: your hook returned the detached tensor and so replaced the "
    "output; a hook that only records should return None": (
        "模型的输出不再需要梯度：你的钩子返回了 detach 后的张量，从而替换了输出；只做记录的钩子应返回 None"
    ),
    "the hook stores detached CPU copies and leaves the forward pass untouched": (
        "钩子保存的是已 detach 的 CPU 副本，且没有改动前向传播"
    ),
    "make_mixup_hook must return a function (module, args, output)": (
        "make_mixup_hook 必须返回一个函数 (module, args, output)"
    ),
    "the model should still return logits": "模型应仍然返回 logits",
    "in training mode the output did not change: the hook must return the mixed output": (
        "训练模式下输出没有变化：钩子必须返回混合后的输出"
    ),
    "in training mode the hidden state should become lam * output + (1 - lam) * output[perm]": (
        "训练模式下隐藏状态应变为 lam * output + (1 - lam) * output[perm]"
    ),
    "keep the mixed output in the graph (do not detach it) so that training works": (
        "让混合后的输出留在计算图中（不要 detach），训练才能进行"
    ),
    "in eval mode the hook must leave the output alone: look at module.training and return None": (
        "评估模式下钩子不能改动输出：查看 module.training 并返回 None"
    ),
    "mix_targets must return a float tensor of shape (batch, n_classes): one probability row per example": (
        "mix_targets 必须返回形状为 (batch, n_classes) 的浮点张量：每个样本一行概率"
    ),
    "each row of the mixed targets must sum to 1": "混合目标的每一行之和必须为 1",
    "cross-entropy with your soft targets differs from mixing the two losses with lam and 1 - lam: the label y "
    "must get weight lam and the label y[perm] weight 1 - lam": (
        "用你的软目标算出的交叉熵，与用 lam 和 1 - lam 混合两个损失的结果不同：标签 y 的权重应为 lam，"
        "标签 y[perm] 的权重应为 1 - lam"
    ),
    "the hook mixes hidden states in training only, and the soft targets give the mixed loss": (
        "钩子只在训练时混合隐藏状态，软目标给出的正是混合后的损失"
    ),
    "register_counters must return a tuple (counts, handles)": "register_counters 必须返回元组 (counts, handles)",
    "counts should be a dict {{module name: number of calls}}": "counts 应为字典 {{模块名: 调用次数}}",
    "handles should be the list of handles returned by register_forward_hook": (
        "handles 应为 register_forward_hook 返回的句柄列表"
    ),
    "after one forward the counts should be {}, got {}: hook every submodule from named_modules() (skip the root, "
    "whose name is '') and add 1 per call": (
        "一次前向传播之后计数应为 {}，实际为 {}：给 named_modules() 中的每个子模块挂上钩子（跳过名字为 '' 的根模块），"
        "每次调用加 1"
    ),
    "after removing the handles the counts must not change": "移除句柄之后计数不应再变化",
    "some hooks are still attached after removing the handles": "移除句柄之后仍有钩子挂在模型上",
    "every call is counted (a reused module twice) and the handles remove every hook": (
        "每次调用都被计数（复用的模块计两次），并且句柄移除了所有钩子"
    ),
    "store[{}] should be a tensor, got {}": "store[{}] 应为张量，实际为 {}",
    "store[{}] is still attached to the autograd graph: it keeps the whole graph alive; detach it": (
        "store[{}] 仍连在 autograd 图上：它会让整张计算图一直留在内存中；请 detach 它"
    ),
    "store[{}] should be on the CPU": "store[{}] 应位于 CPU 上",
    "store[{}] does not hold that layer's output": "store[{}] 存的不是该层的输出",
    # --- nb03 ----------------------------------------------------------------------------------------
    "the module now always sees its input clamped into [0, 1], and the caller's tensor is untouched": (
        "模块现在总是看到截断到 [0, 1] 的输入，而调用者的张量保持不变"
    ),
    "good digit batches pass untouched, wrong shapes stop with a clear ValueError": (
        "正确的数字批次原样通过，形状错误的输入以清楚的 ValueError 停下"
    ),
    "factor is capped at 1.0, smaller factors and calls without factor are left alone": (
        "factor 被限制在 1.0 以内，较小的 factor 和不带 factor 的调用保持不变"
    ),
    "the module did not return a tensor: does your hook return the input?": (
        "模块没有返回张量：你的钩子返回输入了吗？"
    ),
    "your hook changed the caller's tensor in place (clamp_ / x[...] = ...). Build a new tensor with "
    "torch.clamp(...) and return it instead.": (
        "你的钩子原地修改了调用者的张量（clamp_ / x[...] = ...）。请用 torch.clamp(...) 构造一个新张量并返回它。"
    ),
    "the module did not receive the input clamped into [0, 1]; check the bounds and what you return": (
        "模块收到的输入没有截断到 [0, 1]；请检查边界和你的返回值"
    ),
    "the module still received the raw input: a pre-hook changes the input only through its return value": (
        "模块收到的仍是原始输入：预钩子只能通过返回值改变输入"
    ),
    "a correct batch of shape {} should pass; the model did not return its logits": (
        "形状为 {} 的正确批次应能通过；模型没有返回 logits"
    ),
    "a correct batch must reach the model unchanged": "正确的批次必须原样到达模型",
    "called with {}, the module should compute x * {}, but returned {}": (
        "以 {} 调用时，模块应计算 x * {}，却返回了 {}"
    ),
    "an input of shape {} was accepted; it must raise ValueError": "形状为 {} 的输入被接受了；它必须引发 ValueError",
    "the ValueError for an input of shape {} should say which shape it got; your message was: {}": (
        "针对形状为 {} 的输入，ValueError 应说明收到的形状；你的消息是：{}"
    ),
    "an input of shape {} raised {} instead of ValueError: your hook must raise before the model runs": (
        "形状为 {} 的输入引发的是 {} 而不是 ValueError：你的钩子必须在模型运行之前引发异常"
    ),
    "your hook failed when the call passed no `factor` at all: use kwargs.get(...)": (
        "调用完全不传 `factor` 时你的钩子出错了：请使用 kwargs.get(...)"
    ),
    "PyTorch rejected what your hook returned ({}). Return None or (args, kwargs).": (
        "PyTorch 拒绝了你的钩子的返回值（{}）。请返回 None 或 (args, kwargs)。"
    ),
    # --- nb04 ----------------------------------------------------------------------------------------
    "the input got no gradient at all: return the halved gradients, not zeros or None": (
        "输入完全没有得到梯度：请返回减半后的梯度，而不是零或 None"
    ),
    "the input gradient is unchanged: return the new gradients from the hook (a new tuple)": (
        "输入的梯度没有变化：请从钩子返回新的梯度（一个新元组）"
    ),
    "the input gradient should be exactly half of the true one": "输入的梯度应恰好是真实梯度的一半",
    "the weight gradient changed: this hook should only touch what flows back to the inputs": (
        "权重的梯度变了：这个钩子只应改动流回输入的梯度"
    ),
    "with two inputs, the first one's gradient was not halved": "有两个输入时，第一个输入的梯度没有减半",
    "the first-layer case did not produce parameter gradients": "第一层的情形没有产生参数梯度",
    "input gradients are halved, None entries survive, parameter gradients are untouched": (
        "输入梯度减半了，None 项保留了下来，参数梯度没有改动"
    ),
    "after removing the returned handles the gradients are still clipped: return the real handles": (
        "移除返回的句柄之后梯度仍被裁剪：请返回真正的句柄"
    ),
    "every parameter gradient is clamped, and the handles remove the hooks again": (
        "每个参数的梯度都被截断了，而且句柄能再次移除这些钩子"
    ),
    "{} hook(s) are still attached: return every handle you register": "仍有 {} 个钩子挂着：请返回你注册的每个句柄",
    "norms should have one entry per Conv2d/Linear layer, {}; got {}": (
        "norms 应对每个 Conv2d/Linear 层各有一项，即 {}；实际为 {}"
    ),
    "one norm per Conv2d/Linear layer, equal to the norm of the gradient at its output": (
        "每个 Conv2d/Linear 层一个范数，等于该层输出处梯度的范数"
    ),
    "add_clip_hooks should return a list of the handles that register_hook gave you": (
        "add_clip_hooks 应返回 register_hook 给你的句柄组成的列表"
    ),
    "expected one hook per parameter ({}), got {} handles": "应为每个参数一个钩子（{} 个），实际得到 {} 个句柄",
    "norms[{}] should be a Python float (use .item())": "norms[{}] 应为 Python float（使用 .item()）",
    "you registered module hooks ({} on {} module(s)), not tensor hooks on the parameters. A module backward hook "
    "sees the gradients with respect to the module's inputs and outputs, never the gradients of its weights. "
    "Register a tensor hook on every parameter: `p.register_hook(...)` for p in model.parameters().": (
        "你注册的是模块钩子（{1} 个模块上的 {0}），而不是参数上的张量钩子。模块反向钩子看到的是关于模块输入和输出的梯度，"
        "从来看不到权重的梯度。请在每个参数上注册张量钩子：对 model.parameters() 中的每个 p 调用 `p.register_hook(...)`。"
    ),
    "{} got no gradient: does your hook return the clipped tensor?": "{} 没有得到梯度：你的钩子返回裁剪后的张量了吗？",
    "the gradient of {} is not the true gradient clamped into [-{}, {}]": "{} 的梯度不是截断到 [-{}, {}] 的真实梯度",
    "norms[{}] is not the L2 norm of the gradient with respect to that layer's output: use grad_output, not "
    "grad_input": "norms[{}] 不是关于该层输出的梯度的 L2 范数：请使用 grad_output，而不是 grad_input",
    "backward failed with {}: {}. Return a tuple with one entry per grad_input entry, and keep None entries as "
    "None.": "反向传播出错：{}: {}。请返回一个元组，grad_input 的每一项对应一项，None 项保持为 None。",
    # --- nb05 ----------------------------------------------------------------------------------------
    "a global hook is still registered after count_calls returned: every model in the process now runs it. "
    "Remove it before returning (a `with` block around the forward does that for you).": (
        "count_calls 返回后仍有一个全局钩子处于注册状态：进程中的每个模型现在都会运行它。请在返回之前移除它"
        "（在前向传播外面套一个 `with` 块就能做到）。"
    ),
    "count_calls should return a dict {{class name: calls}}, got {}": "count_calls 应返回字典 {{类名: 调用次数}}，实际为 {}",
    "for a Sequential(Linear, ReLU, Sequential(Linear, ReLU)) expected {}, got {}. Hint: a global forward hook "
    "runs for every module call, containers included; count type(module).__name__.": (
        "对于 Sequential(Linear, ReLU, Sequential(Linear, ReLU))，应为 {}，实际为 {}。提示：全局前向钩子对每次模块"
        "调用都会运行，容器也不例外；请按 type(module).__name__ 计数。"
    ),
    "when the model's forward raises, your global hook stays registered. Use `with handle:` (or try/finally) so "
    "that it is removed on every exit path.": (
        "模型的 forward 引发异常时，你的全局钩子仍处于注册状态。请使用 `with handle:`（或 try/finally），"
        "让它在每条退出路径上都被移除。"
    ),
    "count_calls counts every module call with a global hook and removes it, even when forward raises": (
        "count_calls 用一个全局钩子统计了每次模块调用，并且即使 forward 引发异常也会移除它"
    ),
    "after one attach_once and one forward the hook should run once, ran {}": (
        "一次 attach_once 和一次前向传播之后钩子应运行一次，实际运行了 {} 次"
    ),
    "after calling attach_once twice the hook ran {} times per forward: it stacked. Keep the handle you got the "
    "first time (in a dict keyed by module) and remove it before registering again.": (
        "调用两次 attach_once 之后，每次前向传播钩子运行了 {} 次：钩子叠加了。请保存第一次得到的句柄"
        "（放在以模块为键的字典里），并在再次注册之前移除它。"
    ),
    "attaching a new hook should replace the old one; ran {}": "挂上新钩子应替换旧钩子；实际运行了 {} 次",
    "attaching to another module must not remove the first module's hook; ran {}. Key the handles by module.": (
        "给另一个模块挂钩子不能移除第一个模块的钩子；实际运行了 {} 次。请以模块为键保存句柄。"
    ),
    "each module should hold exactly one forward hook; they hold {}": "每个模块应恰好有一个前向钩子；实际为 {}",
    "attach_once replaces instead of stacking, one hook per module": "attach_once 替换而不是叠加，每个模块一个钩子",
    "make_safe_hook(store) should return a hook function (module, args, output)": (
        "make_safe_hook(store) 应返回一个钩子函数 (module, args, output)"
    ),
    "after one forward the store should hold 1 tensor, holds {}": "一次前向传播之后 store 应存有 1 个张量，实际为 {} 个",
    "store a tensor, not {}": "请保存张量，而不是 {}",
    "the stored tensor is still part of the autograd graph (it has a grad_fn): detach it, or it keeps the whole "
    "graph of that forward alive": (
        "保存的张量仍是 autograd 图的一部分（它有 grad_fn）：请 detach 它，否则那次前向传播的整张计算图都会留在内存中"
    ),
    "the hook stores a detached copy that the in-place ReLU cannot change": (
        "钩子保存的是已 detach 的副本，原地 ReLU 改变不了它"
    ),
    "the stored values are not the layer's output: the ReLU(inplace=True) after the layer overwrote them "
    "(negative values became 0). Store a copy, not a view of the live tensor.": (
        "保存的值不是该层的输出：该层之后的 ReLU(inplace=True) 覆盖了它们（负值变成了 0）。"
        "请保存副本，而不是活张量的视图。"
    ),
    # --- nb06 ----------------------------------------------------------------------------------------
    "answer should be a layer name (a string such as {}), got {}": "answer 应为层名（如 {} 这样的字符串），实际为 {}",
    "{} is not a monitored layer; the monitored layers are {}": "{} 不是被监视的层；被监视的层是 {}",
    "{} is not the largest: look at state.grad_by_depth() (one number per name in state.layer_names, same order) "
    "and take the position of its maximum": (
        "{} 不是最大的：查看 state.grad_by_depth()（state.layer_names 中每个名字一个数，顺序相同），取其最大值的位置"
    ),
    "{} has the largest mean |gradient| of the {} monitored layers": "在 {1} 个被监视的层中，{0} 的平均 |梯度| 最大",
    "answer should be a channel index (an int), got {}": "answer 应为通道索引（int），实际为 {}",
    "channel {} does not exist: {} has {} channels": "通道 {} 不存在：{} 有 {} 个通道",
    "not the highest: average each channel's map over its pixels (state.activations[layer][sample] has shape "
    "(channels, H, W)) and take the index of the largest mean": (
        "不是最高的：把每个通道的图在像素上取平均（state.activations[layer][sample] 的形状为 (channels, H, W)），"
        "取平均值最大的索引"
    ),
    "channel {} of {} has the highest mean activation for sample {}": "对样本 {2}，{1} 的通道 {0} 平均激活值最高",
    "answer should be one of the recorded kinds {}": "answer 应为记录到的种类之一：{}",
    "not that one: filter state.events to phase == 'backward' and look at the first event's kind": (
        "不是这个：把 state.events 筛选为 phase == 'backward'，看第一个事件的种类"
    ),
    "{} hooks fire first in backward (on the {})": "反向传播中最先触发的是 {} 钩子（在 {} 上）",
    # --- nb07 ----------------------------------------------------------------------------------------
    "under torch.no_grad() nothing is saved, but you counted {} bytes": (
        "在 torch.no_grad() 下什么都不会保存，但你统计出了 {} 字节"
    ),
    "count_saved_bytes matches what autograd packs, including tensors saved twice and none under no_grad": (
        "count_saved_bytes 与 autograd 打包的字节数一致，包括保存了两次的张量和 no_grad 下的零字节"
    ),
    "make_renaming_hook(...) should return a hook function": "make_renaming_hook(...) 应返回一个钩子函数",
    "an old checkpoint with renamed layers loads strictly into DigitsCNN through your pre-hook": (
        "通过你的预钩子，层名已改的旧检查点能以 strict 方式载入 DigitsCNN"
    ),
    "stepping inside backward gives exactly the weights of a normal optimizer loop, with no grads kept": (
        "在反向传播中更新参数得到的权重与普通优化器循环完全相同，且没有保留梯度"
    ),
    "count_saved_bytes should return an int, got {}": "count_saved_bytes 应返回 int，实际为 {}",
    "for {} you counted {} bytes, autograd saved {}. Hint: count inside the pack hook, once per call, with numel() "
    "* element_size(); a tensor saved twice counts twice.": (
        "对于 {}，你统计出 {} 字节，autograd 保存了 {}。提示：在 pack 钩子里统计，每次调用一次，用 "
        "numel() * element_size()；保存两次的张量计两次。"
    ),
    "{} was loaded with the wrong values": "{} 载入了错误的值",
    "attach made no optimizer: create them in attach, one per parameter with make_optimizer([param]) - not inside "
    "the hook, where a new optimizer would forget its momentum at every step": (
        "attach 没有创建优化器：请在 attach 中创建，每个参数一个，用 make_optimizer([param])——不要在钩子里创建，"
        "那样每一步都会有一个新优化器，忘掉它的动量"
    ),
    "attach should return one handle per parameter (a list of what register_post_accumulate_grad_hook returns)": (
        "attach 应为每个参数返回一个句柄（由 register_post_accumulate_grad_hook 的返回值组成的列表）"
    ),
    "after 3 steps the weights differ from an ordinary optimizer.step() loop. Hint: one optimizer per parameter, "
    "created once (not inside the hook), stepped in that parameter's hook.": (
        "3 步之后的权重与普通的 optimizer.step() 循环不同。提示：每个参数一个优化器，只创建一次（不在钩子里创建），"
        "在该参数的钩子里调用它的 step。"
    ),
    "loading the old checkpoint still fails: {}... Hint: the hook gets (module, state_dict, prefix, ...); rename "
    "keys of state_dict in place (pop the old key, set the new one).": (
        "载入旧检查点仍然失败：{}…… 提示：钩子收到 (module, state_dict, prefix, ...)；请原地重命名 state_dict "
        "的键（pop 旧键，设置新键）。"
    ),
    "make_optimizer takes a list of parameters: make_optimizer([param])": (
        "make_optimizer 接受参数列表：make_optimizer([param])"
    ),
    "after backward() the parameters still hold .grad: free it inside the hook (p.grad = None or "
    "zero_grad(set_to_none=True)) so that no gradient outlives its own step": (
        "backward() 之后参数仍持有 .grad：请在钩子里释放它（p.grad = None 或 zero_grad(set_to_none=True)），"
        "让每个梯度在自己那一步之后就不再保留"
    ),
    # --- nb08 ----------------------------------------------------------------------------------------
    "{} hook(s) are still attached to the model after {}; keep the handles that register_*_hook returns and call "
    ".remove() on each (a try/finally makes it safe)": (
        "{} 个钩子在 {} 之后仍挂在模型上；请保存 register_*_hook 返回的句柄，并对每个句柄调用 .remove()"
        "（用 try/finally 最稳妥）"
    ),
    "ActivityCounter(module) should register exactly one forward hook on the module; found {}": (
        "ActivityCounter(module) 应在模块上恰好注册一个前向钩子；实际找到 {} 个"
    ),
    "counter.counts should be a tensor of shape (channels,) after a forward pass": (
        "前向传播之后 counter.counts 应为形状 (channels,) 的张量"
    ),
    "counter.counts has shape {}; expected one count per channel {}": (
        "counter.counts 的形状为 {}；应为每个通道一个计数 {}"
    ),
    "every count is 0: the hook never recorded anything (is it registered, does it add to counts?)": (
        "所有计数都是 0：钩子什么都没记录（它注册了吗？它往 counts 里加了吗？）"
    ),
    "counter.samples should be the number of samples seen ({} in three batches), got {}; add the batch size on "
    "every call": "counter.samples 应为见过的样本数（三个批次共 {} 个），实际为 {}；每次调用都要加上批次大小",
    "a count is larger than the number of samples: count samples (any positive value in the channel), not "
    "positions or values": "有计数大于样本数：请统计样本（该通道中有任一正值即算），而不是位置或数值",
    "the counts differ from the expected ones: count, for each channel, the samples that have at least one value "
    "> 0 anywhere in that channel's map, and keep adding across calls": (
        "计数与预期不同：对每个通道，统计在该通道的图中至少有一个值 > 0 的样本数，并在多次调用之间持续累加"
    ),
    "dead() should return a plain list of Python ints, got {} (.tolist() turns a tensor of indices into one)": (
        "dead() 应返回由 Python int 组成的普通列表，实际为 {}（.tolist() 能把索引张量变成这样的列表）"
    ),
    "dead() returned {}; it should list (sorted, as ints) the channels whose count is 0": (
        "dead() 返回了 {}；它应（按顺序、以 int）列出计数为 0 的通道"
    ),
    "counts still change after remove()": "调用 remove() 之后计数仍在变化",
    "ActivityCounter counts per channel across batches, finds the 3 planted dead channels, removes its hook": (
        "ActivityCounter 跨批次按通道计数，找出了预先埋下的 3 个死亡通道，并移除了自己的钩子"
    ),
    "contrastive Grad-CAM matches torch.autograd.grad at two layers, and no hook is left behind": (
        "对比式 Grad-CAM 在两层上与 torch.autograd.grad 一致，且没有留下钩子"
    ),
    "{}: the forward pass finished without FloatingPointError although {} produced NaN/Inf; the guard must raise "
    "from the forward hook": "{}：尽管 {} 产生了 NaN/Inf，前向传播却没有引发 FloatingPointError 就结束了；守卫必须在前向钩子中引发异常",
    "install_nan_guard should return the list of handles": "install_nan_guard 应返回句柄列表",
    "put a forward hook on every module (named_modules()), not only a few": (
        "请给每个模块（named_modules()）都挂上前向钩子，而不只是其中几个"
    ),
    "the clean model should still give finite logits with the guard on": "装上守卫后，干净的模型应仍给出有限的 logits",
    "the guard stops the forward pass at the first module (in execution order) whose output is NaN/Inf": (
        "守卫在（按执行顺序）第一个输出为 NaN/Inf 的模块处停止了前向传播"
    ),
    "channel ablation matches an independent computation at two layers, and no hook is left behind": (
        "通道消融在两层上与独立计算的结果一致，且没有留下钩子"
    ),
    "contrastive_cam should return a tensor, got {}": "contrastive_cam 应返回张量，实际为 {}",
    "for layer {} the map should have shape (N, H, W) = {}, got {}": "对于层 {}，图的形状应为 (N, H, W) = {}，实际为 {}",
    "the map has negative values: Grad-CAM ends with a ReLU": "图中有负值：Grad-CAM 的最后一步是 ReLU",
    "channel_ablation should return a tensor, got {}": "channel_ablation 应返回张量，实际为 {}",
    "for {} expected one number per channel, shape ({},), got {}": "对于 {}，应每个通道一个数，形状为 ({},)，实际为 {}",
    "the drops for {} differ from the expected ones: zero one channel at a time with a forward hook that returns a "
    "modified copy, read the logit of the label given for each image (the `labels` argument, not the predicted "
    "class), average over the images": (
        "{} 的下降值与预期不同：用一个返回修改后副本的前向钩子每次把一个通道置零，读取每张图像所给标签"
        "（`labels` 参数，而不是预测的类别）的 logit，再对图像取平均"
    ),
    "the map for layer {} differs from Grad-CAM of logit[cls] - logit[foil]: weights = gradient averaged over the "
    "spatial positions (one weight per channel), map = ReLU of the weighted sum of the channels": (
        "层 {} 的图与 logit[cls] - logit[foil] 的 Grad-CAM 不同：权重 = 梯度在空间位置上的平均（每个通道一个权重），"
        "图 = 各通道加权和的 ReLU"
    ),
    "{}: the FloatingPointError should name {}; its message was {}": "{}：FloatingPointError 应指出 {}；它的消息是 {}",
    "{}: expected FloatingPointError, got {}: {}": "{}：应为 FloatingPointError，实际为 {}: {}",
    "the signs are flipped: report clean logit minus ablated logit": "符号反了：请报告干净的 logit 减去消融后的 logit",
    "this is the plain Grad-CAM of `cls`; the score to differentiate here is the difference logit[cls] - "
    "logit[foil]": "这是 `cls` 的普通 Grad-CAM；这里要求导的分数是差值 logit[cls] - logit[foil]",
    "{}: the error names {}, but {} produced the first non-finite output": "{}：错误指出的是 {}，但第一个产生非有限输出的是 {}",
    "the guard raised on a clean model: {}": "守卫在干净的模型上引发了异常：{}",
    # --- nb09 ----------------------------------------------------------------------------------------
    "the hook records every k-th call only: the other calls cost one counter increment": (
        "钩子只记录每第 k 次调用：其余调用的代价只是一次计数器加一"
    ),
    "return the new inputs as a tuple holding one tensor, e.g. `(new_x,)`": "请把新的输入作为只含一个张量的元组返回，例如 `(new_x,)`",
    "the returned input should be twice the original input": "返回的输入应为原输入的两倍",
    "the scripted module does not see a doubled input": "脚本化的模块看到的输入没有加倍",
    "TorchScript compiled the pre-hook into the module, and the scripted module doubles its input": (
        "TorchScript 把预钩子编译进了模块，脚本化的模块会把输入加倍"
    ),
    "DDP accepted the completed future: every rank keeps its own gradients, nothing is sent": (
        "DDP 接受了已完成的 future：每个进程保留自己的梯度，什么也没有发送"
    ),
    "make_sampled_hook must return a function (the forward hook)": "make_sampled_hook 必须返回一个函数（前向钩子）",
    "with every={}, 25 calls should store {} values, not {}: count the calls in the hook's closure and record only "
    "when the count is a multiple of `every`": (
        "every={} 时，25 次调用应保存 {} 个值，而不是 {} 个：在钩子的闭包中对调用计数，只在计数是 `every` 的倍数时记录"
    ),
    "store plain Python floats (`.item()`), not tensors: a stored tensor can keep the autograd graph alive": (
        "请保存普通的 Python float（`.item()`），而不是张量：保存的张量可能让 autograd 图一直留在内存中"
    ),
    "the stored values are not the means of the outputs of calls 0, every, 2*every, ...": (
        "保存的值不是第 0、every、2*every…… 次调用输出的均值"
    ),
    "DDP never called the hook: register it with ddp.register_comm_hook(state, hook)": (
        "DDP 从未调用这个钩子：请用 ddp.register_comm_hook(state, hook) 注册它"
    ),
    "the hook called dist.all_reduce: this hook must not communicate at all": (
        "钩子调用了 dist.all_reduce：这个钩子完全不能通信"
    ),
    "the gradients DDP wrote back are not the local gradients: set the future's result to bucket.buffer()": (
        "DDP 写回的梯度不是本地梯度：请把 future 的结果设为 bucket.buffer()"
    ),
    "the hook changed the layer's output: a logging hook returns None": "钩子改变了该层的输出：做记录的钩子应返回 None",
    "DDP refused the hook: {}": "DDP 拒绝了这个钩子：`{}`",
    "backward failed inside your hook: {}. Hint: return a torch.futures.Future whose result is set to the "
    "bucket's buffer": "反向传播在你的钩子里失败了：`{}`。提示：返回一个 `torch.futures.Future`，并把它的结果设为 bucket 的缓冲区",
    "torch.jit.script could not compile the hook: {}. Hint: annotate both arguments (the inputs are a tuple of "
    "tensors) and the return type": (
        "`torch.jit.script` 无法编译这个钩子：`{}`。提示：给两个参数（输入是张量的元组）和返回值都加上类型注解"
    ),
    "the hook must return a torch.futures.Future (make one, set its result, return it)": (
        "钩子必须返回 torch.futures.Future（创建一个，设置它的结果，然后返回）"
    ),
    "the future's result must be the bucket's flat gradient tensor": "future 的结果必须是 bucket 的扁平梯度张量",
    # --- nb10 ----------------------------------------------------------------------------------------
    "not answered yet: set `answer` to a whole number": "还没有作答：把 `answer` 设为一个整数",
    "the answer is a whole number (an int)": "答案是一个整数（int）",
    "{} is not it. Hint: a hook runs once per *call* of its module, and every registration is a separate hook": (
        "不是 {}。提示：模块每被调用一次，钩子就运行一次，而每次注册都是一个单独的钩子"
    ),
    "{} calls: two registrations × two uses of the same ReLU instance": "{} 次调用：两次注册 × 同一个 ReLU 实例用了两次",
    "not answered yet: set `answer` to a set of names from {}": "还没有作答：把 `answer` 设为由 {} 中的名字组成的集合",
    "unknown option(s) {}; choose from {}": "未知选项 {}；请从 {} 中选择",
    "{} option(s) wrong. Hint: ask what each one copies: the whole Python object, only the tensors, or the "
    "pickled object": "错了 {} 个选项。提示：想一想每种做法复制的是什么：整个 Python 对象、只有张量，还是 pickle 后的对象",
    "right: module hooks live on the module object, not in its tensors": "正确：模块钩子存放在模块对象上，而不在它的张量里",
    "the answer is a set of names, e.g. {{'{}'}}": "答案是由名字组成的集合，例如 {{'{}'}}",
    # --- nb11 ----------------------------------------------------------------------------------------
    "{} must return the handles it registered (it returned None)": "{} 必须返回它注册的句柄（它返回了 None）",
    "{} must return what `register_*` returned: handles with a `remove()` method": (
        "{} 必须返回 `register_*` 的返回值：带有 `remove()` 方法的句柄"
    ),
    "after removing the returned handles, hooks are still attached: return every handle": (
        "移除返回的句柄之后仍有钩子挂着：请返回每一个句柄"
    ),
    "only the last layer's name was recorded: every hook looks up the loop variable when it runs, after the loop "
    "ended. Hint: bind the name when the hook is created (a default argument or a factory function)": (
        "只记录下了最后一层的名字：每个钩子都在运行时（循环结束之后）才查找循环变量。提示：在创建钩子时绑定名字"
        "（用默认参数或工厂函数）"
    ),
    "a name '' was recorded: `named_modules()` also yields the model itself (and every container) under its own "
    "name. Hint: `named_children()` yields only the direct children": (
        "记录下了名字 ''：`named_modules()` 也会以各自的名字给出模型本身（以及每个容器）。"
        "提示：`named_children()` 只给出直接子模块"
    ),
    "recorded names {}, expected one per child: {}": "记录的名字是 {}，应为每个子模块一个：{}",
    "wrong shapes for {}: store the shape of each child's own output": "{} 的形状不对：请保存每个子模块自己的输出的形状",
    "hooks are left on the model after removing the returned handles": "移除返回的句柄之后模型上仍留有钩子",
    "one shape per layer, each under its own name": "每层一个形状，各自记在自己的名字下",
    "each Linear's weight-gradient norm, from the current backward pass, first layer included": (
        "每个 Linear 的权重梯度范数都来自本次反向传播，第一层也不例外"
    ),
    "after remove(), the model should be unsteered": "调用 remove() 之后，模型应不再被引导",
    "the hidden state is steered, the tuple and the rest of the model are intact": (
        "隐藏状态被引导了，元组和模型的其余部分保持完好"
    ),
    "the block must still return a tuple of two: return the same structure, changing only the hidden state": (
        "该块必须仍然返回二元组：请返回相同的结构，只改变隐藏状态"
    ),
    "the model's output has shape {}, expected (3, 1)": "模型输出的形状为 {}，应为 (3, 1)",
    "the output is not the model with `vector` added to the hidden state": "输出不是隐藏状态加上 `vector` 之后模型的输出",
    "the block's tuple must still hold two tensors (hidden state, attention weights): return `(steered hidden, *the "
    "other elements)`, not the old tuple nested inside a new one": (
        "该块的元组必须仍然包含两个张量（隐藏状态、注意力权重）：请返回 `(steered hidden, *the other elements)`，"
        "而不是把旧元组嵌套在新元组里"
    ),
    "the second element changed: leave everything but the hidden state as it was": (
        "第二个元素变了：除隐藏状态外，其余一切都应保持原样"
    ),
    "logged names {}, expected {}": "记录的名字是 {}，应为 {}",
    "for {} you logged the norm of the weight itself, not of its gradient: a post-accumulate hook receives the "
    "parameter. Hint: its gradient is `param.grad`": (
        "对于 {}，你记录的是权重本身的范数，而不是其梯度的范数：梯度累加后钩子收到的是参数。提示：它的梯度是 `param.grad`"
    ),
    "wrong norm for {}: the value read is not this step's gradient. Hint: read the gradient after it has been "
    "accumulated into .grad": "{} 的范数不对：读到的不是这一步的梯度。提示：在梯度累加进 .grad 之后再读取",
    "the hook failed with AttributeError: {}. Hint: a module backward hook may run before the weight's .grad is "
    "written; use a hook that runs after the gradient is accumulated": (
        "钩子出错：AttributeError: {}。提示：模块反向钩子可能在权重的 .grad 写入之前运行；请使用在梯度累加之后运行的钩子"
    ),
    "the model broke: ValueError: {}. Hint: whatever the hook returns replaces the block's output, and the model "
    "expects a tuple": "模型出错了：ValueError: {}。提示：钩子返回的任何东西都会替换该块的输出，而模型需要一个元组",
    "hookviz.diagnose still reports {} finding(s): {}. Hint: print(hookviz.diagnose(model, x)) and follow each "
    "finding's fix": "hookviz.diagnose 仍然报告了 {} 条发现：{}。提示：运行 print(hookviz.diagnose(model, x))，按每条发现的 fix 去改",
    "recorded activations for {}, expected {}": "记录了 {} 的激活值，应为 {}",
    "the activation stored for {} is not that layer's output": "为 {} 保存的激活值不是该层的输出",
    "gradient norms logged for {}, expected {}": "记录了 {} 的梯度范数，应为 {}",
    "wrong gradient norm for {}: log the norm of this step's weight.grad": (
        "{} 的梯度范数不对：请记录这一步 weight.grad 的范数"
    ),
    "the doctor finds nothing, and each probe records its own layer's activation and gradient norm": (
        "医生什么也没发现，每个探针都记录了自己那一层的激活值和梯度范数"
    ),
    # --- messages added or reworded since the first catalogue -----------------------------------------
    "{}\nWhen your hook ran, param.grad was not written yet: choose the hook kind that fires after .grad is "
    "updated.": "{}\n你的钩子运行时 param.grad 还没有写入：请选择在 .grad 更新之后触发的钩子种类。",
    "your keys are the model's direct children {}, but these are containers here: the leaves inside them ({}) "
    "are missing. named_children() gives only the first level; named_modules() walks the whole tree (the course "
    "CNN's leaves are features.0, ..., classifier.1). Keep the modules without children.": (
        "你的键是模型的直接子模块 {}，但它们在这里是容器：其中的叶子模块（{}）没有记录。named_children() 只给出第一层；"
        "named_modules() 遍历整棵树（课程 CNN 的叶子模块是 features.0, ..., classifier.1）。请只保留没有子模块的模块。"
    ),
    "your hook changed the gradient it received (an in-place operation such as `/=` or `mul_`); build a new "
    "tensor and return it": "你的钩子修改了它收到的梯度（`/=` 或 `mul_` 这样的原地操作）；请构造一个新张量并返回它",
    "the hook must return a tensor (or None), not {}": "钩子必须返回张量（或 None），而不是 {}",
    "the returned gradient has shape {}, not {}": "返回的梯度形状为 {}，而不是 {}",
    "for the gradient {} your hook returned NaN: a gradient of norm 0 (or any norm of at most 1) must pass "
    "unchanged - do not divide by its norm": (
        "对于梯度 {}，你的钩子返回了 NaN：范数为 0（或范数不超过 1）的梯度必须原样通过——不要除以它的范数"
    ),
    "for the gradient {} you returned {}: each entry was clamped on its own, which turns the gradient's "
    "direction. Rescale the whole gradient by one factor, so that its L2 norm (grad.norm()) becomes 1.": (
        "对于梯度 {}，你返回了 {}：每一项被单独截断，这会改变梯度的方向。请用同一个系数缩放整个梯度，"
        "使它的 L2 范数（grad.norm()）变为 1。"
    ),
    "for the gradient {} (L2 norm {}) expected {}, got {}: a gradient whose norm is at most 1 must pass "
    "unchanged": "对于梯度 {}（L2 范数 {}），应为 {}，实际为 {}：范数不超过 1 的梯度必须原样通过",
    "for the gradient {} (L2 norm {}) expected {}, got {}": "对于梯度 {}（L2 范数 {}），应为 {}，实际为 {}",
    "return a new tensor, not the one you received": "请返回一个新张量，而不是你收到的那个",
    "backward failed inside your hook; do not write into the incoming gradient.\n{}": (
        "反向传播在你的钩子里失败了；不要写入传入的梯度。\n{}"
    ),
    "after backward x.grad should be {}, got {}": "反向传播之后 x.grad 应为 {}，实际为 {}",
    "clip_hook rescales the gradient to norm 1 with a new tensor and leaves autograd's gradient alone": (
        "clip_hook 用一个新张量把梯度缩放到范数 1，并且没有改动 autograd 的梯度"
    ),
    "on a Linear layer the hook stored nothing under the given name": "在 Linear 层上，钩子没有在给定的名字下保存任何东西",
    "behind a ReLU(inplace=True) the stored output lost its negative values: the ReLU overwrote the very tensor "
    "you kept. What you keep must be the layer's output as it was returned (section 2's detail).": (
        "在后面跟着 ReLU(inplace=True) 的层上，保存的输出丢掉了负值：ReLU 覆盖的正是你保存的那个张量。"
        "你保存的必须是该层返回时的输出（第 2 节的细节）。"
    ),
    "the hook stores detached CPU copies that later in-place layers cannot change, and leaves the model alone": (
        "钩子保存的是已 detach 的 CPU 副本，后面的原地操作层改变不了它们，并且钩子没有改动模型"
    ),
    "an input of shape {} got past your hook and failed later, inside the model ({}): it was accepted, but the "
    "hook must raise ValueError for it": (
        "形状为 {} 的输入通过了你的钩子，后来在模型内部失败（{}）：它被接受了，但钩子必须为它引发 ValueError"
    ),
    "an input of shape {} raised {} instead of ValueError: your hook must raise before the model runs.\n{}": (
        "形状为 {} 的输入引发的是 {} 而不是 ValueError：你的钩子必须在模型运行之前引发异常。\n{}"
    ),
    "backward failed: {}\nReturn a tuple with one entry per grad_input entry, and keep None entries as None.": (
        "反向传播失败：{}\n请返回一个元组，grad_input 的每一项对应一项，None 项保持为 None。"
    ),
    "for a model that calls a Tanh it creates in forward, expected {}, got {}": (
        "对于一个在 forward 中创建并调用 Tanh 的模型，应为 {}，实际为 {}"
    ),
    "when the model's forward raised, count_calls returned normally: the error must reach the caller. A "
    "try/except that swallows it hides the failure; `with handle:` or try/finally removes the hook and lets the "
    "error go on.": (
        "模型的 forward 引发异常时，count_calls 却正常返回了：错误必须传到调用者那里。吞掉异常的 try/except 会掩盖失败；"
        "`with handle:` 或 try/finally 既能移除钩子，又能让错误继续传出去。"
    ),
    "you counted only the modules registered in the model: a model whose forward creates and calls a Tanh of its "
    "own was counted without that Tanh. Hooks put on model.modules() one by one are local hooks; the task asks for "
    "one global forward hook, which sees every module call in the process "
    "(torch.nn.modules.module.register_module_forward_hook).": (
        "你只统计了注册在模型中的模块：一个在 forward 中自己创建并调用 Tanh 的模型，统计结果里没有这个 Tanh。"
        "逐个挂在 model.modules() 上的钩子是局部钩子；题目要求的是一个全局前向钩子，它能看到进程中的每次模块调用"
        "（torch.nn.modules.module.register_module_forward_hook）。"
    ),
    "{}: expected FloatingPointError, but {}": "{}：应为 FloatingPointError，但{}",
    "{} hook(s) left on the model: remove them in a finally block": "模型上留下了 {} 个钩子：请在 finally 块中移除它们",
    "attach should return the handle of the hook it registered (what register_step_pre_hook returns)": (
        "attach 应返回它注册的钩子的句柄（register_step_pre_hook 的返回值）"
    ),
    "you made {} optimizer(s) holding {} parameters for a model with {} parameters. With one optimizer for all "
    "parameters, every hook's step() walks over every parameter: a backward pass runs it once per parameter, and "
    "it steps whichever parameters hold a .grad at that moment (the weights come out right here only because every "
    "other .grad is None then). Make one optimizer per parameter, make_optimizer([param]), and step that one in the "
    "parameter's hook.": (
        "你创建了 {} 个优化器（各自持有的参数个数为 {}），而模型有 {} 个参数。如果所有参数共用一个优化器，每个钩子里的 step() "
        "都会遍历所有参数：一次反向传播中它会按参数个数运行多次，每次更新此刻持有 .grad 的那些参数（这里权重结果正确，"
        "只是因为那时其他 .grad 都是 None）。请每个参数一个优化器，make_optimizer([param])，并在该参数的钩子里调用它的 step。"
    ),
    "largest_grad_layer should be a function that takes a monitor state and returns a layer name": (
        "largest_grad_layer 应是一个函数：接受监视器的状态对象，返回一个层名"
    ),
    "not solved yet: write the body of largest_grad_layer(state)": "还没有完成：写出 largest_grad_layer(state) 的函数体",
    "largest_grad_layer(state) raised {}: {}. It gets a monitor state: read state.layer_names and "
    "state.grad_by_depth()": (
        "largest_grad_layer(state) 引发了 {}: {}。它收到的是监视器的状态对象：请读取 state.layer_names 和 "
        "state.grad_by_depth()"
    ),
    "largest_grad_layer(state) should return a layer name (a str from state.layer_names), got {}": (
        "largest_grad_layer(state) 应返回一个层名（state.layer_names 中的一个 str），实际为 {}"
    ),
    "{} is not a monitored layer: return one of state.layer_names": "{} 不是被监视的层：请返回 state.layer_names 中的一个",
    "not the largest for every state it was given: compute the answer from the state passed in "
    "(state.grad_by_depth() has one number per name in state.layer_names, same order) and return the name at the "
    "position of its maximum": (
        "并非对每个传入的状态都是最大的：请根据传入的状态计算答案（state.grad_by_depth() 对 state.layer_names 中的"
        "每个名字各有一个数，顺序相同），返回其最大值所在位置的名字"
    ),
    # --- nb12 ----------------------------------------------------------------------------------------
    "for {}, layer {}, the weights differ from those of self_attn of that layer ({} heads); keep the weights of "
    "encoder.layers[{}].self_attn, for this call": (
        "对于{}，第 {} 层，权重与该层 self_attn 的权重（{} 个头）不同；请保留这次调用中 encoder.layers[{}].self_attn 的权重"
    ),
    "attention_weights left the model in training mode": "attention_weights 让模型停留在了训练模式",
    "after attention_weights the layers no longer take the fused fast path: a hook is still attached": (
        "调用 attention_weights 之后，各层不再走融合快速路径：还有钩子挂着"
    ),
    "per-head attention weights of every layer, on two models; no hook left, the fast path is back": (
        "在两个模型上取到了每一层的逐头注意力权重；没有留下钩子，快速路径也恢复了"
    ),
    "patch_position should return the logits, got {}": "patch_position 应返回 logits，实际为 {}",
    "the logits should have shape {} (the corrupted run's), got {}": "logits 的形状应为 {}（损坏运行的形状），实际为 {}",
    "these are the corrupted run's logits, unpatched: your hook changed a copy of the output (or rebound the name) "
    "and returned None. Return the patched tensor (or assign into the output itself, in place)": (
        "这是未经修补的损坏运行的 logits：你的钩子改的是输出的副本（或者只是重新绑定了变量名），并且返回了 None。"
        "请返回修补后的张量（或者原地赋值到输出本身）"
    ),
    "{} global module hook(s) ({}) are still registered after {}: they run for every module of every model in this "
    "process. Keep the handle of register_module_*_hook and remove it in a `finally:` block.": (
        "{2} 之后仍有 {0} 个全局模块钩子（{1}）处于注册状态：它们会在这个进程中每个模型的每个模块上运行。"
        "请保留 register_module_*_hook 返回的句柄，并在 `finally:` 块中移除它。"
    ),
    "torch.backends.mha.set_fastpath_enabled(False) is still in effect after attention_weights: every transformer "
    "layer in this process now skips its fused fast path. The hooks on self_attn switch it off for their own layer "
    "already; if you turn it off yourself, turn it back on in a `finally:` block.": (
        "attention_weights 之后 torch.backends.mha.set_fastpath_enabled(False) 仍然生效：这个进程中的每个 Transformer "
        "层现在都会跳过融合快速路径。self_attn 上的钩子本身就会为所在的层关掉快速路径；如果你自己关掉了它，"
        "请在 `finally:` 块中重新打开。"
    ),
    "these are the clean run's logits: patch only the one position, in the corrupted run": (
        "这是干净运行的 logits：只在损坏运行中修补那一个位置"
    ),
    "for {}, layer {}, position {}: the logits differ from the corrupted run with that layer's output at that "
    "position taken from the clean run (all samples, that position only)": (
        "对于{}，第 {} 层，位置 {}：logits 与“损坏运行中该层在该位置的输出取自干净运行”（所有样本，只限该位置）的结果不同"
    ),
    "patched logits match an independent computation at three (layer, position) pairs on two models": (
        "在两个模型的三组（层，位置）上，修补后的 logits 与独立计算的结果一致"
    ),
    "logit_lens should return a list of tensors (one per layer), got {}": "logit_lens 应返回张量列表（每层一个），实际为 {}",
    "{} has {} encoder layers; logit_lens returned {} tensors": "{} 有 {} 个编码器层；logit_lens 返回了 {} 个张量",
    "layer {}: expected logits of shape {}, got {}": "第 {} 层：logits 的形状应为 {}，实际为 {}",
    "decode through the final norm first (model.encoder.norm), then model.head: the head was trained on "
    "normalised vectors": "先经过最终的归一化层（model.encoder.norm）再经过 model.head 解码：输出头是在归一化后的向量上训练的",
    "for {}, layer {}: the lens logits differ from model.head(model.encoder.norm(output of encoder.layers[{}]))": (
        "对于{}，第 {} 层：lens 得到的 logits 与 `model.head(model.encoder.norm(...))` 作用在 encoder.layers[{}] 的输出上的结果不同"
    ),
    "the last layer's lens should equal the model's own logits": "最后一层的 lens 结果应等于模型自己的 logits",
    "logit lens of every layer matches an independent computation on two models; no hook left": (
        "在两个模型上，每一层的 logit lens 都与独立计算的结果一致；没有留下钩子"
    ),
    "{} hook(s) are still attached after {} (on {}); keep every handle and remove it in a `finally:` block": (
        "{} 个钩子在 {} 之后仍然挂着（在 {} 上）；请保存每个句柄，并在 `finally:` 块中移除它"
    ),
    "attention_weights returned None: the layer calls its attention with need_weights=False; a with_kwargs forward "
    "pre-hook on self_attn can ask for the weights": (
        "attention_weights 返回了 None：层以 need_weights=False 调用注意力；self_attn 上一个 with_kwargs 的前向预钩子可以请求权重"
    ),
    "attention_weights should return a tensor, got {}": "attention_weights 应返回张量，实际为 {}",
    "the weights have shape {}: averaged over the heads. Ask for one pattern per head (average_attn_weights=False)": (
        "权重的形状为 {}：这是各头的平均。请为每个头各请求一个注意力模式（average_attn_weights=False）"
    ),
    "for {}, layer {}, the weights should have shape (N, heads, L, L) = {}, got {}": (
        "对于{}，第 {} 层，权重的形状应为 (N, heads, L, L) = {}，实际为 {}"
    ),
    # --- nb14 ----------------------------------------------------------------------------------------
    "the tiny decoder": "课程自带的小型解码器",
    "a 4-head, 3-layer decoder": "一个 4 头、3 层的解码器",
    "{} should return a tensor, got {}": "{0} 应返回张量，实际为 {1}",
    "per-head outputs of every layer, on two decoders, match an independent computation; no hook left": (
        "两个解码器每一层的各头输出都与独立计算的结果一致；没有留下钩子"
    ),
    "attention patterns of every layer, on two decoders, match softmax(q kᵀ/√d) with rotary and mask": (
        "两个解码器每一层的注意力模式都与加了旋转位置编码和因果掩码的 softmax(q kᵀ/√d) 一致"
    ),
    "decode-only steering matches an independent generation loop on two decoders; no hook left": (
        "只在解码步引导的结果在两个解码器上都与独立的生成循环一致；没有留下钩子"
    ),
    "head_outputs left the model in training mode": "head_outputs 让模型停留在了训练模式",
    "steer_new_tokens should return the generated tokens, got {}": "steer_new_tokens 应返回生成的词元，实际为 {}",
    "steer_new_tokens should return the prompts and {} new tokens, shape {}; got {}": (
        "steer_new_tokens 应返回提示和 {0} 个新词元，形状为 {1}；实际为 {2}"
    ),
    "for {}, the tokens differ from greedy generate() with the vector added to the output of model.model.layers[{}] "
    "in every decode step and not in the prefill": (
        "对{0}，这些词元与贪心 generate() 的结果不同：应在每个解码步（而不在预填充中）把向量加到 "
        "model.model.layers[{1}] 的输出上"
    ),
    "for {}, layer {}, the per-head outputs should have shape (N, L, heads, head_dim) = {}, got {}": (
        "对{0}的第 {1} 层，各头输出的形状应为 (N, L, heads, head_dim) = {2}，实际为 {3}"
    ),
    "for {}, layer {}, the pattern should have shape (N, heads, L, L) = {}, got {}": (
        "对{0}的第 {1} 层，注意力模式的形状应为 (N, heads, L, L) = {2}，实际为 {3}"
    ),
    "for {}, layer {}, the pattern differs from softmax(q kᵀ / sqrt(head_dim)) under the causal mask, with q and k "
    "from q_proj and k_proj after the rotary embedding": (
        "对{0}的第 {1} 层，注意力模式与因果掩码下的 softmax(q kᵀ / sqrt(head_dim)) 不同；q 和 k 应取自 q_proj 和 "
        "k_proj 的输出，并先做旋转位置编码"
    ),
    "nothing was steered: these are the unsteered tokens. A forward hook changes the layer's output only by "
    "returning the new tensor": "什么也没有被引导：这些是未引导时的词元。前向钩子只能通过返回新张量来改变层的输出",
    "the prompt was steered too: the hook must add the vector only in decode steps (when the cache already holds "
    "positions), not in the prefill": (
        "提示也被引导了：钩子只应在解码步（缓存中已有位置时）加上向量，而不在预填充中加"
    ),
    "only the prefill was steered: that is the opposite, add the vector in the decode steps only": (
        "只引导了预填充：这正好相反，应只在解码步加上向量"
    ),
    "the result has shape {}: o_proj's input with the heads side by side. Split its last dimension into "
    "(heads, head_dim) with .view(N, L, heads, head_dim)": (
        "结果的形状是 {}：这是各头并排的 o_proj 输入。用 .view(N, L, heads, head_dim) 把最后一维拆成 (heads, head_dim)"
    ),
    "the result has shape {} = (N, heads, L, head_dim); the exercise asks for (N, L, heads, head_dim), the order of "
    "o_proj's input": "结果的形状是 {} = (N, heads, L, head_dim)；练习要求的是 (N, L, heads, head_dim)，即 o_proj 输入的顺序",
    "for {}, layer {}, the values differ from the input of model.model.layers[{}].self_attn.o_proj in this forward "
    "pass": "对{0}的第 {1} 层，这些值与这次前向传播中 model.model.layers[{2}].self_attn.o_proj 的输入不同",
    "the pattern is computed from q and k before the rotary embedding: the model rotates both (apply_rotary with the "
    "(cos, sin) the attention module receives) before SDPA": (
        "注意力模式是用旋转位置编码之前的 q 和 k 算的：模型在 SDPA 之前会先旋转两者"
        "（用注意力模块收到的 (cos, sin) 调用 apply_rotary）"
    ),
    "a query attends to later positions: the model is causal, so mask the scores above the diagonal with -inf before "
    "the softmax": "有查询关注了后面的位置：模型是因果的，softmax 之前要用 -inf 遮住对角线以上的分数",
    "divide the scores by sqrt(head_dim) before the softmax, as SDPA does": (
        "softmax 之前要把分数除以 sqrt(head_dim)，SDPA 就是这样做的"
    ),
    "each row of a pattern sums to 1: take the softmax over the keys (last dim)": (
        "注意力模式的每一行之和为 1：在键的维度（最后一维）上做 softmax"
    ),
    "these values come from o_proj's output, where the heads are already mixed: the per-head outputs are o_proj's "
    "input, which a forward pre-hook on o_proj receives as args[0]": (
        "这些值来自 o_proj 的输出，那里各头已经混在一起了：各头的输出是 o_proj 的输入，o_proj 上的前向预钩子以 "
        "args[0] 收到它"
    ),
    # --- nb15 ----------------------------------------------------------------------------------------
    "attach should return a pair (handle, buffer): the handle of the forward hook and the buffer it fills": (
        "attach 应返回一对 (handle, buffer)：前向钩子的句柄，以及它往里存东西的缓冲区"
    ),
    "the first item should be the handle that register_forward_hook returned": (
        "第一项应是 register_forward_hook 返回的句柄"
    ),
    "after 6 calls with maxlen=3 the buffer holds {} tensors, expected 3: use collections.deque(maxlen=maxlen), "
    "which drops the oldest entry itself": (
        "调用 6 次、maxlen=3 之后，缓冲区里有 {} 个张量，应为 3 个：请用 collections.deque(maxlen=maxlen)，"
        "它会自己丢掉最旧的一项"
    ),
    "the buffer should hold tensors (one output row per call)": "缓冲区里应存张量（每次调用存输出的一行）",
    "each kept tensor should be the first row of the output, shape (5,); got {}": (
        "保存的每个张量都应是输出的第一行，形状为 (5,)；实际为 {}"
    ),
    "the kept rows turned to zeros when the output was changed in place after the hook ran: you kept a view "
    "of the output. Keep a copy: out[0].detach().clone()": (
        "钩子运行之后输出被原地修改，保存的行随之变成了零：你保存的是输出的视图。请保存副本：out[0].detach().clone()"
    ),
    "the kept rows are not the first output rows of the last 3 calls, oldest first": (
        "保存的行不是最近 3 次调用的输出第一行（按从旧到新的顺序）"
    ),
    "the 3 kept rows hold {} bytes alive, but 3 rows of 5 float32 need {}: a row sliced from the output shares "
    "the whole batch's storage. Keep a copy: out[0].detach().clone()": (
        "保存的 3 行让 {} 字节的内存无法释放，而 3 行各 5 个 float32 只需要 {} 字节：从输出切出的一行与整个批次共用存储。"
        "请保存副本：out[0].detach().clone()"
    ),
    "detach the kept rows: they should not hold the autograd graph": "请对保存的行调用 detach：它们不应拖住 autograd 图",
    "the last 3 first rows, copied: 60 bytes kept after 6 calls, and no hook left behind": (
        "最近 3 次的第一行，都是副本：调用 6 次后只保存了 60 字节，也没有留下钩子"
    ),
    "make_hook should return the hook function, got {}": "make_hook 应返回钩子函数，实际返回了 {}",
    "10 compiled training steps ran and your hook logged {} values: it should append one per call": (
        "运行了 10 个编译后的训练步，你的钩子记录了 {} 个值：每次调用应追加一个"
    ),
    "the logged values are not the norms of the layer's output at each step (out.detach().norm())": (
        "记录的值不是每一步这一层输出的范数（out.detach().norm()）"
    ),
    "Dynamo compiled {} graphs in 10 steps: it guards the length of the list your hook appends to, so every "
    "step compiled again (up to the recompile limit). Hint: wrap the hook in torch.compiler.disable.": (
        "Dynamo 在 10 步里编译了 {} 个图：它为你的钩子所追加的列表的长度设置了守卫，所以每一步都重新编译"
        "（直到达到重新编译上限）。提示：用 torch.compiler.disable 包装这个钩子。"
    ),
    "10 norms logged in 10 compiled steps, without compiling again at every step": (
        "10 个编译后的训练步记录了 10 个范数，没有每一步都重新编译"
    ),
    # --- nb13 ----------------------------------------------------------------------------------------
    "frozen_gradcam should return a tensor, got {}": "frozen_gradcam 应返回张量，实际为 {}",
    "the map for {} has shape {}, expected {} (N, H, W)": "{} 的图形状为 {}，应为 {} (N, H, W)",
    "the map for {}, class {}, differs from Grad-CAM on the same model unfrozen. Hint: weights = gradient averaged "
    "over height and width, then ReLU of the weighted sum over channels.": (
        "{} 在类别 {} 上的图与未冻结的同一模型上的 Grad-CAM 不同。提示：权重 = 梯度在高和宽上的平均，"
        "然后取各通道加权和的 ReLU。"
    ),
    "the model is no longer frozen: make the captured activation require grad, not the parameters": (
        "模型不再是冻结的了：应让捕获的激活值需要梯度，而不是参数"
    ),
    "frozen parameters got a .grad": "冻结的参数得到了 .grad",
    "Grad-CAM on a fully frozen model matches the unfrozen one, and the model stays frozen with no hooks": (
        "完全冻结的模型上的 Grad-CAM 与未冻结的一致，模型保持冻结，也没有留下钩子"
    ),
    "log floats (e.g. norm.item()), got {}": "请记录 float（例如 norm.item()），实际为 {}",
    "4 steps ran and the scaler skipped one (NaN gradients): 3 steps were taken, you logged {} values. Hint: an "
    "optimizer step pre-hook runs only when optimizer.step() really runs, and a hook on a parameter also fires on "
    "the skipped step.": (
        "运行了 4 步，缩放器跳过了其中一步（梯度为 NaN）：真正更新了 3 步，你记录了 {} 个值。提示：优化器的 step 预钩子"
        "只在 optimizer.step() 真正执行时运行，而参数上的钩子在被跳过的那一步也会触发。"
    ),
    "your norms are {} times the true ones: you logged scaled gradients. The step pre-hook runs after scaler.step() "
    "has unscaled them; read p.grad there.": (
        "你的范数是真实值的 {} 倍：你记录的是缩放后的梯度。step 预钩子在 scaler.step() 取消缩放之后运行；请在那里读取 p.grad。"
    ),
    "with {} you logged {} values for 3 steps taken: a fused optimizer runs its step hooks on the step the scaler "
    "skips too (it skips the update inside its kernel). Skip a norm that is not finite (math.isfinite).": (
        "使用 {} 时，实际执行了 3 步，你却记录了 {} 个值：融合优化器在缩放器跳过的那一步上也会运行它的 step 钩子"
        "（它在自己的算子里跳过更新）。请跳过不是有限值的范数（math.isfinite）。"
    ),
    "with {} your norms are {} times the true ones: a fused optimizer unscales the gradients inside its own step, so "
    "its step pre-hook still sees them scaled. A step post-hook sees them unscaled with both kinds of optimizer.": (
        "使用 {} 时，你的范数是真实值的 {} 倍：融合优化器在自己的 step 内部才取消缩放，所以它的 step 预钩子看到的仍是"
        "缩放后的梯度。step 后钩子对两类优化器看到的都是取消缩放后的梯度。"
    ),
    "your norms differ from the total gradient norm (ratios {}). Hint: the 2-norm over all parameters of the "
    "optimizer, e.g. the norm of the stack of each p.grad's norm.": (
        "你的范数与总梯度范数不同（比值 {}）。提示：对优化器的所有参数求 2-范数，例如把每个 p.grad 的范数堆叠起来再求范数。"
    ),
    "{} hook(s) still attached after handle.remove(): return the handle of your hook": (
        "调用 handle.remove() 之后仍有 {} 个钩子挂着：请返回你的钩子的句柄"
    ),
    "3 unscaled norms for 3 steps taken; the skipped NaN step left no entry": (
        "真正更新的 3 步记录了 3 个未缩放的范数；被跳过的 NaN 那一步没有留下记录"
    ),
    # --- a widget whose kernel is gone (hookviz.widgets.common.restart_notice) ---------------------------
    "This widget is no longer connected to a running kernel (it was restarted or shut down, or the notebook was "
    "just opened): its controls do nothing now. Run this cell again (Shift+Enter), or Run ▸ Run All Cells, to "
    "get a live widget.": (
        "这个控件已不再连接到正在运行的内核（内核已重启或关闭，或者笔记本刚刚打开）：现在它的控件不起作用。"
        "请再次运行这个单元格（Shift+Enter），或者 Run ▸ Run All Cells，以得到一个可用的控件。"
    ),
    # --- a forgotten `return` (hookviz.exercises.missing_return and the checkers that use it) -------------
    "`{}` has no `return` statement, so calling it gives None": "`{}` 里没有 `return` 语句，所以调用它得到的是 None",
    "`{}` returned None": "`{}` 返回了 None",
    "If your code already computes the right value, only the `return` is missing: a value a function computes "
    "but does not return is lost. End the function with `return <that value>`.": (
        "如果你的代码已经算出了正确的值，那么缺的只是 `return`：函数算出却没有返回的值会丢失。请在函数末尾加上 `return <那个值>`。"
    ),
    "something is None where a value was expected: a function (or a hook factory) without `return` gives None. "
    "Check that each function you wrote ends with `return ...`.": (
        "需要一个值的地方得到了 None：没有 `return` 的函数（或钩子工厂函数）返回 None。请检查你写的每个函数是否以 `return ...` 结尾。"
    ),
    "a forward hook replaces the output only through the value it returns": "前向钩子只能通过返回值替换输出",
    "a full backward hook changes grad_input only through the tuple it returns": (
        "完整反向钩子只能通过返回的元组改变 grad_input"
    ),
    "a pre-hook changes the module's input only through the value it returns": "预钩子只能通过返回值改变模块的输入",
    "a pre-hook registered with with_kwargs=True changes the call only by returning (args, kwargs)": (
        "用 with_kwargs=True 注册的预钩子只能通过返回 (args, kwargs) 改变这次调用"
    ),
    "a tensor hook changes the gradient only through the value it returns (None keeps the gradient as it was, so "
    "autograd never saw your rescaled tensor)": (
        "张量钩子只能通过返回值改变梯度（返回 None 表示梯度保持原样，所以 autograd 从未看到你缩放后的张量）"
    ),
    "attach should return one handle per parameter": "attach 应该为每个参数返回一个句柄",
    "attach should return the handle of the hook it registered": "attach 应该返回它注册的钩子的句柄",
    "attach should return the list of handles it registered": "attach 应该返回它注册的句柄列表",
    "attach(model) should return the list of handles it registered": "attach(model) 应该返回它注册的句柄列表",
    "attention_weights should return the captured weights": "attention_weights 应该返回捕获到的注意力权重",
    "channel_ablation should return the drops as a tensor": "channel_ablation 应该以张量形式返回下降值",
    "contrastive_cam should return the map as a tensor": "contrastive_cam 应该以张量形式返回热力图",
    "count_calls should return the dict {{class name: calls}}": "count_calls 应该返回字典 {{类名: 调用次数}}",
    "count_saved_bytes should return the number of bytes as an int": "count_saved_bytes 应该以 int 返回字节数",
    "dead() should return the list of dead channels": "dead() 应该返回死通道的列表",
    "frozen_gradcam should return the map as a tensor": "frozen_gradcam 应该以张量形式返回热力图",
    "logit_lens should return a list of tensors (one per layer)": "logit_lens 应该返回张量列表（每层一个）",
    "make_hook must return the hook function it builds": "make_hook 必须返回它构造的钩子函数",
    "make_mixup_hook must return the hook function it builds": "make_mixup_hook 必须返回它构造的钩子函数",
    "make_renaming_hook(...) should return the hook function it builds": "make_renaming_hook(...) 应该返回它构造的钩子函数",
    "make_safe_hook(store) should return the hook function it builds": "make_safe_hook(store) 应该返回它构造的钩子函数",
    "make_sampled_hook must return the forward hook it builds": "make_sampled_hook 必须返回它构造的前向钩子",
    "mix_targets must return the mixed targets": "mix_targets 必须返回混合后的目标",
    "patch_position should return the logits": "patch_position 应该返回 logits",
    "return the dict {{layer name: output shape}} that your hooks filled": "返回你的钩子填好的字典 {{层名: 输出形状}}",
    # --- nb16 (the hook atlas: its checkers and its table's controls) ----------------------------------
    "search": "搜索",
    "category": "类别",
    "e.g. deepcopy forward": "例如 deepcopy forward",
    "not answered yet: set `answer` to a set of situation names": "还没有作答：把 `answer` 设为情形名称的集合",
    "the answer is a set of strings: names from the table's situation column": (
        "答案是字符串的集合：表格 situation 列中的名称"
    ),
    "not a situation of the atlas: {}; the names are in the table's situation column": (
        "图鉴中没有这个情形：{}；名称见表格的 situation 列"
    ),
    "{} situation(s) missing and {} too many. Hint: filter the table with kind 'backward' and read the fires column": (
        "缺了 {} 个情形，多了 {} 个。提示：在表格中选择种类 'backward'，看 fires 列"
    ),
    "right: {} situations in which a full backward hook stays silent": "正确：完整反向钩子在 {} 种情形下不触发",
    "one_shot should be a function": "one_shot 应该是一个函数",
    "one_shot should return the handle it registered": "one_shot 应该返回它注册的钩子的句柄",
    "fn ran {} times over two forward passes; it should run once": "两次前向传播中 fn 运行了 {} 次；它应该只运行一次",
    "the first output should be fn's return value: pass it on": "第一次的输出应该是 fn 的返回值：把它传下去",
    "the second output should be the layer's own output": "第二次的输出应该是层自己的输出",
    "a hook is still attached to the layer after it ran": "钩子运行之后仍然挂在层上",
    "the tensor hook should change the first gradient only": "张量钩子应该只改变第一次的梯度",
    "a hook is still attached to the tensor after it ran": "钩子运行之后仍然挂在张量上",
    "two one-shot pre-hooks ran {}; each should run once, on the first forward": (
        "两个一次性预钩子的运行记录为 {}；每个都应该只在第一次前向传播时运行一次"
    ),
    "a pre-hook is still attached to the layer after it ran": "预钩子运行之后仍然挂在层上",
    "one_shot works for forward, pre- and tensor hooks, and leaves nothing attached": (
        "one_shot 对前向钩子、预钩子和张量钩子都有效，并且没有留下任何钩子"
    ),
}

#: Computed parts of messages that are English prose themselves (a checker's model names and case labels):
#: :func:`hookviz.i18n.translate` puts the translation in when a whole ``{}`` value is one of these keys.
#: Only such phrases belong here, never a bare word that could also be a layer's name ("head", "layer").
NAMES: dict[str, str] = {
    "the tiny transformer": "课程自带的小型 Transformer",
    "a 4-head model": "一个 4 头的模型",
    "inf weight in features.4": "features.4 中有一个 inf 权重",
    "NaN in the input": "输入中有 NaN",
    "a model whose modules run in another order": "一个模块运行顺序与定义顺序不同的模型",
    "x + 1 (saves nothing)": "x + 1（什么也不保存）",
}


# --- the hook doctor (hookviz.diagnose): the report's words, each rule's message and fix. Kind ids, module
# names, hook names, code and Python's own error text stay as written (hook names and errors in code font) ---
_DOCTOR: dict[str, str] = {
    "no findings": "没有发现问题",
    "severity": "严重程度",
    "kind": "种类",
    "where": "位置",
    "see": "参见",
    "what happens": "会发生什么",
    "fix": "怎么改",
    "error": "错误",
    "warning": "警告",
    "info": "提示",
    # registration
    "the {} hooks {} on these modules were made in a loop and read the loop variable {} when they run: every one of "
    "them sees its last value ({}), not the value of its own module.": (
        "这些模块上的 `{0}` 钩子 `{1}` 是在循环中创建的，运行时才读取循环变量 `{2}`：它们看到的都是这个变量的最后一个值"
        "（`{3}`），而不是各自模块的值。"
    ),
    "bind the value when the hook is made: a factory function, functools.partial or a default argument (name=name)": (
        "在创建钩子时就把值绑定下来：用工厂函数、`functools.partial` 或默认参数（`name=name`）"
    ),
    "the same {} hook {} is attached more than once: it runs once per copy (a cell run twice, or a registration "
    "inside the training loop).": (
        "同一个 `{0}` 钩子 `{1}` 被挂了不止一次：挂了几份就运行几次（单元格运行了两次，或者在训练循环里注册）。"
    ),
    "register once, before the loop, keep the handle and remove it in a finally": (
        "在循环之前只注册一次，保存句柄，并在 `finally` 中移除它"
    ),
    "{} is a legacy backward hook (register_backward_hook): it fires on the last autograd node of the module's forward "
    "only, so grad_input can be the gradient of that one operation.": (
        "`{}` 是旧式反向钩子（`register_backward_hook`）：它只在模块前向的最后一个 autograd 节点上触发，所以 "
        "`grad_input` 可能只是那一个运算的梯度。"
    ),
    "register_full_backward_hook, with the same signature": "改用 `register_full_backward_hook`，签名不变",
    "a global legacy backward hook (register_module_backward_hook) sees the last autograd node of each module only.": (
        "全局旧式反向钩子（`register_module_backward_hook`）只看到每个模块的最后一个 autograd 节点。"
    ),
    "register_module_full_backward_hook": "改用 `register_module_full_backward_hook`",
    "in eval mode under torch.no_grad() these TransformerEncoderLayers can run as one fused kernel and call none of "
    "their submodules: your global forward hooks then see nothing inside them.": (
        "在 eval 模式下、`torch.no_grad()` 之中，这些 `TransformerEncoderLayer` 可能作为一个融合内核运行，不调用任何子模块："
        "这时你的全局前向钩子看不到它们内部的任何东西。"
    ),
    "register the hooks on the submodules you want (that keeps the layer off its fast path), or "
    "torch.backends.mha.set_fastpath_enabled(False) around the run": (
        "把钩子注册在你想看的子模块上（这样该层就不走快速路径），或者在运行期间使用 "
        "`torch.backends.mha.set_fastpath_enabled(False)`"
    ),
    "with a src_key_padding_mask, in eval mode under torch.no_grad(), this encoder packs the batch into a nested "
    "tensor: these hooks then receive a NestedTensor, on which output.shape and slicing fail.": (
        "带 `src_key_padding_mask`、在 eval 模式下且在 `torch.no_grad()` 之中时，这个编码器会把批次打包成嵌套张量："
        "这些钩子收到的就是 `NestedTensor`，在它上面 `output.shape` 和切片都会失败。"
    ),
    "pad it back in the hook (output.to_padded_tensor(0.0) when output.is_nested), or build the encoder with "
    "enable_nested_tensor=False": (
        "在钩子里把它填充回普通张量（`output.is_nested` 时用 `output.to_padded_tensor(0.0)`），或者用 "
        "`enable_nested_tensor=False` 构建编码器"
    ),
    "under this GradScaler the gradient hooks here run during backward(), before unscale_: they see gradients "
    "multiplied by the scale (65,536 at first); norms logged are that much too big and clipping there is undone by "
    "unscaling.": (
        "在这个 `GradScaler` 下，这里的梯度钩子在 `backward()` 期间、`unscale_` 之前运行：它们看到的梯度乘上了缩放系数"
        "（起初是 65,536）；记录的范数大了这么多倍，在那里做的裁剪也会被取消缩放抵消。"
    ),
    "call scaler.unscale_(optimizer) and clip with clip_grad_norm_ after backward(); log in an optimizer step "
    "pre-hook": (
        "在 `backward()` 之后调用 `scaler.unscale_(optimizer)`，再用 `clip_grad_norm_` 裁剪；在优化器的 step 预钩子中记录"
    ),
    # failures
    "this module has a full backward hook (or backward pre-hook), which makes its output a view made by "
    "BackwardHookFunction; the in-place operation that follows it (out += identity, ReLU(inplace=True)) makes the "
    "forward fail: {}": (
        "这个模块有完整反向钩子（或反向预钩子），这使它的输出成为由 `BackwardHookFunction` 生成的视图；紧随其后的原地运算"
        "（`out += identity`、`ReLU(inplace=True)`）会让前向失败：`{}`"
    ),
    "take the gradient with a tensor hook on the output, registered from a forward hook; or make the next operation "
    "out-of-place": "改用张量钩子取梯度：在前向钩子中给输出注册张量钩子；或者把后面的运算改成非原地的",
    "backward() fails: {}: {}": "`backward()` 失败：`{0}: {1}`",
    "a tensor hook returns None or a tensor of the gradient's shape and dtype": (
        "张量钩子要么返回 `None`，要么返回与梯度形状和 dtype 相同的张量"
    ),
    "return a new tensor from the hook instead of editing the output in place": "让钩子返回一个新张量，不要原地修改输出",
    "look the error up in the clinic's index by symptom": "在错误诊所笔记本的“按症状查找”索引中查这个错误",
    # every call of a hook
    "the backward hook {} reads a `.grad`, but it runs before this step's parameter gradients are accumulated: it "
    "sees None, zeros or last step's gradient.": (
        "反向钩子 `{}` 读取了 `.grad`，但它在这一步的参数梯度累加之前运行：它看到的是 `None`、零或者上一步的梯度。"
    ),
    "register_post_accumulate_grad_hook on the parameter (it runs after .grad is written)": (
        "在参数上用 `register_post_accumulate_grad_hook`（它在 `.grad` 写入之后运行）"
    ),
    "the forward hook {} edits the module's output in place: when a layer saved that output for backward (ReLU, Tanh, "
    "Sigmoid ...), backward() fails with 'modified by an inplace operation'; elsewhere the edit silently changes "
    "what later hooks see.": (
        "前向钩子 `{}` 原地修改了模块的输出：如果某层为反向传播保存了这个输出（`ReLU`、`Tanh`、`Sigmoid`……），"
        "`backward()` 会以 `modified by an inplace operation` 失败；在其他情况下，这个修改会悄悄改变后面的钩子看到的值。"
    ),
    "return a new tensor (output * 2, output.clamp(...)) instead of editing in place": (
        "返回一个新张量（`output * 2`、`output.clamp(...)`），不要原地修改"
    ),
    "the forward pre-hook {} edits the module's input in place: that tensor is the previous layer's output (or your "
    "batch), so the edit changes it for every other reader, and backward() fails when an operation saved it.": (
        "前向预钩子 `{}` 原地修改了模块的输入：这个张量是上一层的输出（或者你的批次），所以修改会影响其他所有读取它的地方；"
        "如果有运算保存了它，`backward()` 会失败。"
    ),
    "return new arguments instead: return (args[0] * 2,) (a pre-hook's return value replaces the arguments)": (
        "改为返回新的参数：`return (args[0] * 2,)`（前向预钩子的返回值会替换参数）"
    ),
    "return a new gradient instead of editing the argument: `return grad * 0.5` in a tensor hook, "
    "`return tuple(None if g is None else g * 0.5 for g in grad_input)` in a backward hook": (
        "返回新的梯度，不要修改参数：张量钩子中写 `return grad * 0.5`，反向钩子中写 "
        "`return tuple(None if g is None else g * 0.5 for g in grad_input)`"
    ),
    "the hook {} returns a RemovableHandle (a lambda returning output.register_hook(...)): what a forward hook returns "
    "replaces the output, so the next layer receives the handle.": (
        "钩子 `{}` 返回了一个 `RemovableHandle`（一个返回 `output.register_hook(...)` 的 lambda）：前向钩子的返回值会"
        "替换输出，于是下一层收到的是这个句柄。"
    ),
    "a def that registers the tensor hook and returns nothing": "改用 def：在里面注册张量钩子，不返回任何值",
    "the forward hook {} returns {} where the module returned a {} of {}: the returned value replaces the whole "
    "output, so the code after the module unpacks the wrong thing.": (
        "前向钩子 `{0}` 返回了 `{1}`，而模块返回的是含 {3} 个元素的 `{2}`：返回值会替换整个输出，所以模块后面的代码"
        "解包到的是错误的东西。"
    ),
    "return the same structure, changing only the entry you mean: (hidden * 2, *rest)": (
        "返回同样的结构，只改你要改的那一项：`(hidden * 2, *rest)`"
    ),
    "the forward hook {} returns a tensor that needs no gradient (output.detach()?): it replaces the output, so no "
    "gradient flows back through this module and the layers before it stop learning.": (
        "前向钩子 `{}` 返回了一个不需要梯度的张量（`output.detach()`？）：它替换了输出，于是没有梯度能反向流过这个模块，"
        "它之前的各层不再学习。"
    ),
    "a hook that stores returns nothing: stored.append(output.detach()) without `return`": (
        "只做保存的钩子不返回任何值：写 `stored.append(output.detach())`，不写 `return`"
    ),
    "the tensor hook {} returns a tensor of shape {} ({}) for a gradient of shape {} ({}): what a tensor hook returns "
    "replaces the gradient, and backward() refuses another size or type.": (
        "张量钩子 `{0}` 对形状为 {3}（{4}）的梯度返回了形状为 {1}（{2}）的张量：张量钩子的返回值会替换梯度，"
        "而 `backward()` 不接受别的形状或类型。"
    ),
    "the tensor hook {} returns a {} for a gradient of shape {} ({}): what a tensor hook returns replaces the "
    "gradient, and backward() refuses another size or type.": (
        "张量钩子 `{0}` 对形状为 {2}（{3}）的梯度返回了一个 `{1}`：张量钩子的返回值会替换梯度，"
        "而 `backward()` 不接受别的形状或类型。"
    ),
    "return None (compute summaries separately) or a tensor of the same shape and dtype": (
        "返回 `None`（摘要另外计算），或者返回形状和 dtype 都相同的张量"
    ),
    "the post-accumulate-grad hook {} edits the parameter itself in place: it receives the parameter, not its "
    "gradient, so the weights change and .grad does not.": (
        "梯度累加后钩子 `{}` 原地修改了参数本身：它收到的是参数，不是参数的梯度，所以改变的是权重，`.grad` 没有变。"
    ),
    "edit param.grad inside the hook (param.grad.mul_(0.5))": "在钩子里修改 `param.grad`（`param.grad.mul_(0.5)`）",
    "the post-accumulate-grad hook {} returns a {} (a lambda returns its expression, p.grad.mul_(0.5) included): "
    "PyTorch requires None from these hooks, and backward() fails with 'post accumulate grad hooks should return "
    "None'.": (
        "梯度累加后钩子 `{0}` 返回了一个 `{1}`（lambda 会返回它的表达式的值，`p.grad.mul_(0.5)` 也不例外）："
        "PyTorch 要求这类钩子返回 `None`，`backward()` 会以 `post accumulate grad hooks should return None` 失败。"
    ),
    "return nothing: a def whose body edits param.grad (a lambda returns what its expression gives)": (
        "不要返回任何值：改用 def，在函数体中修改 `param.grad`（lambda 会返回表达式的值）"
    ),
    "return the new value (return grad_input, return output, return grad): a hook returning None changes nothing": (
        "返回新值（`return grad_input`、`return output`、`return grad`）：返回 `None` 的钩子什么也不改变"
    ),
    "end the hook with `return {}`": "在钩子末尾加上 `return {}`",
    "the {} hook {} raises {}: {}": "`{0}` 钩子 `{1}` 抛出了 `{2}: {3}`",
    "run the hook on its own to see why; an exception in a hook stops the whole forward/backward": (
        "单独运行这个钩子，看看原因；钩子里的异常会中断整个前向或反向传播"
    ),
    "use the signature of the kind you register: forward (module, args, output), pre-hook (module, args), full "
    "backward (module, grad_input, grad_output), tensor (grad)": (
        "使用你所注册的钩子种类的签名：前向钩子 `(module, args, output)`，前向预钩子 `(module, args)`，完整反向钩子 "
        "`(module, grad_input, grad_output)`，张量钩子 `(grad)`"
    ),
    "with with_kwargs=True: forward hook (module, args, kwargs, output), pre-hook (module, args, kwargs)": (
        "使用 `with_kwargs=True` 时：前向钩子 `(module, args, kwargs, output)`，前向预钩子 `(module, args, kwargs)`"
    ),
    "the hook's input is the tuple of positional arguments: take args[0]": "钩子收到的输入是位置参数组成的元组：取 `args[0]`",
    "the module was called with keywords only: register with with_kwargs=True and find the argument by name "
    "(inspect.signature(module.forward).bind(*args, **kwargs))": (
        "这个模块只用关键字参数调用：注册时加上 `with_kwargs=True`，再按名字找参数"
        "（`inspect.signature(module.forward).bind(*args, **kwargs)`）"
    ),
    "an entry of a hook's tuple is None when there is nothing: skip None entries": (
        "钩子收到的元组中，没有值的项是 `None`：跳过这些项"
    ),
    "store into a dict or list the hook mutates, or declare nonlocal / global": (
        "存进钩子去修改的字典或列表，或者声明 `nonlocal` / `global`"
    ),
    "hook only the tensors and parameters that require grad": "只给需要梯度的张量和参数挂钩子",
    "read parameter gradients in register_post_accumulate_grad_hook, which runs after .grad is written": (
        "在 `register_post_accumulate_grad_hook` 中读取参数梯度，它在 `.grad` 写入之后运行"
    ),
    "keep None entries of grad_input as None: tuple(None if g is None else g * s for g in grad_input)": (
        "`grad_input` 中的 `None` 项保持为 `None`：`tuple(None if g is None else g * s for g in grad_input)`"
    ),
    "in the forward hook, output.requires_grad_(True) before output.register_hook (or give the input "
    "requires_grad=True)": (
        "在前向钩子中先调用 `output.requires_grad_(True)`，再调用 `output.register_hook`（或者给输入设置 "
        "`requires_grad=True`）"
    ),
    # after the run
    "the {} hook {} ran {} time(s) in the forward and {} more during backward(): activation checkpointing recomputes "
    "this module's forward, hooks included.": (
        "`{0}` 钩子 `{1}` 在前向中运行了 {2} 次，在 `backward()` 期间又运行了 {3} 次：激活检查点会重新计算这个模块的前向，"
        "钩子也跟着重跑。"
    ),
    "record only outside backward (torch._C._current_graph_task_id() == -1), or clear the records before each step": (
        "只在反向传播之外记录（`torch._C._current_graph_task_id() == -1`），或者在每一步之前清空记录"
    ),
    "{} ({}) is called {} times in one forward: its hooks fire on every call, and a record keyed by module keeps only "
    "the last call's.": (
        "`{0}`（`{1}`）在一次前向中被调用了 {2} 次：它的钩子每次调用都会触发，以模块为键的记录只保留最后一次调用的结果。"
    ),
    "{} ({}) is called {} times in one forward: the global hooks fire for it on every call, and a record keyed by "
    "module keeps only the last call's.": (
        "`{0}`（`{1}`）在一次前向中被调用了 {2} 次：全局钩子每次调用都会为它触发，以模块为键的记录只保留最后一次调用的结果。"
    ),
    "one module object per use (or record a list of calls)": "每处使用一个单独的模块对象（或者把每次调用记进列表）",
    "the hooks on {} ({}) never fired: {} is a container that is never called.": (
        "`{0}` 上的钩子（`{1}`）从未触发：`{2}` 是一个从不被调用的容器。"
    ),
    "the hooks on {} ({}) never fired: MultiheadAttention hands out_proj's weights to a function and never calls "
    "out_proj.": (
        "`{0}` 上的钩子（`{1}`）从未触发：`MultiheadAttention` 把 `out_proj` 的权重交给一个函数，从不调用 `out_proj`。"
    ),
    "the hooks on {} ({}) never fired: the forward never called it (a direct .forward() call, a functional op or an "
    "unused branch).": (
        "`{0}` 上的钩子（`{1}`）从未触发：前向从未调用它（直接调用了 `.forward()`、用了函数式运算，或者是没有走到的分支）。"
    ),
    "hook a module that is called (see the module calls with hookviz.HookTimeline)": (
        "把钩子挂在会被调用的模块上（用 `hookviz.HookTimeline` 查看模块的调用）"
    ),
    "hook each element, or the module whose forward runs the loop": "给每个元素挂钩子，或者挂在由其 forward 运行这个循环的模块上",
    "hook self_attn itself (its output is (attended, weights))": "直接给 `self_attn` 挂钩子（它的输出是 `(attended, weights)`）",
    "hook only the parts that get gradients (the trainable ones after the frozen part)": (
        "只给能得到梯度的部分挂钩子（冻结部分之后那些可训练的部分）"
    ),
    "use torch.utils.checkpoint(..., use_reentrant=False)": "改用 `torch.utils.checkpoint(..., use_reentrant=False)`",
    "return the result from forward() (return self.result), or give diagnose() the model whose forward does": (
        "让 `forward()` 返回结果（`return self.result`），或者把 forward 有返回值的那个模型交给 `diagnose()`"
    ),
    "give loss_fn= a differentiable loss (cross_entropy(out, y), out.pow(2).mean()): no argmax, .detach(), .item() or "
    "torch.no_grad() inside it": (
        "给 `loss_fn=` 一个可微的损失（`cross_entropy(out, y)`、`out.pow(2).mean()`）：里面不要用 `argmax`、"
        "`.detach()`、`.item()` 或 `torch.no_grad()`"
    ),
    # what the hooks stored
    "the hook {} stores {} without a copy (weight.detach() shares its memory): the optimizer updates it in place, so "
    "every stored snapshot will equal the final value.": (
        "钩子 `{0}` 保存了 `{1}`，却没有复制（`weight.detach()` 与它共享内存）：优化器会原地更新它，所以保存的每个快照"
        "最终都等于最后的值。"
    ),
    "store weight.detach().clone()": "保存 `weight.detach().clone()`",
    "the hook {} stores a tensor that is still part of the autograd graph: it keeps the graph (and its saved "
    "activations) alive as long as you keep it, and memory grows every step.": (
        "钩子 `{}` 保存的张量仍是 autograd 计算图的一部分：只要你留着它，计算图（及其保存的激活）就一直占着内存，"
        "内存每一步都在增长。"
    ),
    "store output.detach() (and .cpu() for long runs)": "保存 `output.detach()`（长时间运行时再加 `.cpu()`）",
    "the hook {} stores the output without a copy (output.detach() shares its memory), and an in-place operation "
    "after the module (ReLU(inplace=True), out += identity) edits that memory: the stored activation is not what the "
    "module returned.": (
        "钩子 `{}` 保存输出时没有复制（`output.detach()` 与它共享内存），而模块之后的原地运算（`ReLU(inplace=True)`、"
        "`out += identity`）修改了这块内存：保存的激活已不是模块返回的值。"
    ),
    "store output.detach().clone() (detach() alone shares the output's memory)": (
        "保存 `output.detach().clone()`（只用 `detach()` 仍与输出共享内存）"
    ),
    # a torch.compile wrapper
    "this is a torch.compile wrapper: the doctor runs the original module eagerly. Hooks registered after the first "
    "compiled call may not be seen by the compiled code until it recompiles.": (
        "这是一个 `torch.compile` 包装器：诊断程序以 eager 方式运行原始模块。第一次编译调用之后注册的钩子，"
        "在重新编译之前编译后的代码可能看不到。"
    ),
    "register hooks before compiling (or diagnose the model before torch.compile)": (
        "在编译之前注册钩子（或者在 `torch.compile` 之前诊断模型）"
    ),
}

# The gradient hooks edited in place: the kind is English prose ("backward pre hook"), one key per kind.
for _kind, _zh in {
    "tensor hook": "张量钩子",
    "backward hook": "反向钩子",
    "backward pre hook": "反向预钩子",
    "backward legacy hook": "旧式反向钩子",
    "global backward hook": "全局反向钩子",
    "global backward pre hook": "全局反向预钩子",
    "global backward legacy hook": "全局旧式反向钩子",
}.items():
    _DOCTOR[
        f"the {_kind} {{}} edits the gradient it receives in place, and then fails: {{}}: {{}} (a gradient can be an "
        "expanded view, one memory cell for many elements, which PyTorch refuses to write into)."
    ] = (
        f"{_zh} `{{0}}` 原地修改了它收到的梯度，随后失败：`{{1}}: {{2}}`（梯度可能是扩展出来的视图，许多元素共用一个内存单元，"
        "PyTorch 拒绝向其中写入）。"
    )
    _DOCTOR[
        f"the {_kind} {{}} edits the gradient it receives in place: PyTorch's documentation says a hook must not modify "
        "its argument. The edit works or not by accident: it can change another tensor's gradient that shares the "
        "memory, and it fails when the gradient is an expanded view."
    ] = (
        f"{_zh} `{{}}` 原地修改了它收到的梯度：PyTorch 文档规定钩子不得修改它的参数。这样的修改成不成功全凭偶然："
        "它可能改掉共享同一块内存的另一个张量的梯度，而当梯度是扩展视图时它会失败。"
    )

# A hook that computes a new value and returns None: the kind and what it would replace, one key per pair.
for _kind, _zh, _what, _what_zh in (
    ("tensor", "张量钩子", "the gradient", "梯度"),
    ("forward", "前向钩子", "the output", "输出"),
    ("forward pre", "前向预钩子", "the arguments", "参数"),
    ("backward", "反向钩子", "grad_input", "`grad_input`"),
    ("backward pre", "反向预钩子", "grad_output", "`grad_output`"),
    ("backward legacy", "旧式反向钩子", "grad_input", "`grad_input`"),
    ("global forward", "全局前向钩子", "the output", "输出"),
    ("global forward pre", "全局前向预钩子", "the arguments", "参数"),
    ("global backward", "全局反向钩子", "grad_input", "`grad_input`"),
    ("global backward pre", "全局反向预钩子", "grad_output", "`grad_output`"),
    ("global backward legacy", "全局旧式反向钩子", "grad_input", "`grad_input`"),
):
    _DOCTOR[
        f"the {_kind} hook {{}} computes {{}} and never uses it, and returns None: only what a hook returns replaces "
        f"{_what}, so the new value is lost and the hook changes nothing."
    ] = (
        f"{_zh} `{{0}}` 算出了 `{{1}}` 却从未使用，并返回了 `None`：只有钩子的返回值才会替换{_what_zh}，所以新值丢失了，"
        "这个钩子什么也没有改变。"
    )

# A gradient hook that never fired: why, with or without reentrant checkpointing.
for _why, _why_zh in (
    ("the parameter does not require grad", "这个参数不需要梯度"),
    ("no output of the model requires grad, so there was no backward pass", "模型没有任何输出需要梯度，所以没有反向传播"),
    ("no gradient reached it in backward()", "`backward()` 中没有梯度到达它"),
):
    for _end, _end_zh in ((".", "。"), (" (reentrant checkpointing cut this segment out of the graph).",
                                         "（可重入检查点把这一段从计算图中切掉了）。")):
        _DOCTOR[f"the {{}} hook {{}} never fired: {_why}{_end}"] = f"`{{0}}` 钩子 `{{1}}` 从未触发：{_why_zh}{_end_zh}"

# No backward pass: the forward returned None, or the loss_fn cut the graph; which gradient hooks went unchecked.
for _unchecked, _unchecked_zh in (
    ("(no gradient hook is attached, so none was left unchecked)", "（没有挂梯度钩子，所以没有漏检的）"),
    ("(the gradient hooks at {} were not checked)", "（`{}` 处的梯度钩子没有检查）"),
):
    _DOCTOR[
        "the model's forward returned None, so no backward pass could run: the forward checks ran, the gradient checks "
        f"could not {_unchecked}."
    ] = f"模型的 `forward` 返回了 `None`，所以无法进行反向传播：前向检查已运行，梯度检查无法运行{_unchecked_zh}。"
    _DOCTOR[
        "the model's output requires grad, but the loss_fn you gave returns a tensor that does not (argmax, detach, "
        ".item() or no_grad inside it): your loss_fn cut the graph, not the model, so no backward pass could run "
        f"{_unchecked}."
    ] = (
        "模型的输出需要梯度，但你给的 `loss_fn` 返回的张量不需要（里面用了 `argmax`、`detach`、`.item()` 或 `no_grad`）："
        f"切断计算图的是你的 `loss_fn`，不是模型，所以无法进行反向传播{_unchecked_zh}。"
    )

MESSAGES.update(_DOCTOR)

# --- the setup check (hookviz.check_setup / hookviz.doctor): its row names and its fixes ----------------------
MESSAGES.update({
    "widget front end": "小部件前端",
    "cuda available": "CUDA 可用",
    "torch threads": "torch 线程数",
    "MISSING": "缺失",
    "Python {} is too old: install Python {} or newer (SETUP.md), then make the course's environment again.": (
        "Python {0} 太旧了：请安装 Python {1} 或更新的版本（见 SETUP.md），然后重新建立课程的环境。"
    ),
    "missing {}: run `make setup` in the course folder (or `pip install -e .` in your environment; see SETUP.md).": (
        "缺少 {}：在课程文件夹中运行 `make setup`（或者在你自己的环境中运行 `pip install -e .`；见 SETUP.md）。"
    ),
    "missing {}: run the notebook's first cell (the Colab guard installs hookviz with --no-deps), or `!pip install {}` "
    "in a cell.": (
        "缺少 {0}：运行笔记本的第一个单元格（Colab 保护单元格会用 `--no-deps` 安装 hookviz），或者在单元格中运行 "
        "`!pip install {1}`。"
    ),
    "JupyterLab cannot draw the widgets of notebook 06 (no @jupyter-widgets/jupyterlab-manager): `make lab` installs "
    "it (package jupyterlab_widgets); in your own environment `pip install jupyterlab_widgets`, then restart "
    "JupyterLab.": (
        "JupyterLab 画不出笔记本 06 的小部件（缺少 `@jupyter-widgets/jupyterlab-manager`）：`make lab` 会安装它"
        "（`jupyterlab_widgets` 包）；在你自己的环境中运行 `pip install jupyterlab_widgets`，然后重启 JupyterLab。"
    ),
    "on Colab: no `make` needed - run each notebook's first cell (it installs hookviz, keeping Colab's torch); the "
    "widgets of notebook 06 need Colab's widget manager: run `from google.colab import output; "
    "output.enable_custom_widget_manager()` once per runtime if they do not show; save your work with File > Save a "
    "copy in Drive (a runtime reset loses it).": (
        "在 Colab 上：不需要 `make`，运行每个笔记本的第一个单元格即可（它会安装 hookviz，并保留 Colab 的 torch）；"
        "笔记本 06 的小部件需要 Colab 的小部件管理器：如果它们不显示，每个运行时运行一次 "
        "`from google.colab import output; output.enable_custom_widget_manager()`；用“文件 > 在云端硬盘中保存一份副本”"
        "（`File > Save a copy in Drive`）保存你的作业（重置运行时会丢失它）。"
    ),
})

# --- the student copies' short tracebacks (hookviz.exercises.short_traceback): the frames and the error
# stay as Python prints them ---------------------------------------------------------------------------------
MESSAGES.update({
    "Traceback (your code; frames inside libraries folded):": "回溯（只列出你的代码；库内部的调用帧已折叠）：",
    "{} frames inside {}": "{1} 内部的 {0} 个调用帧",
    "{} frame inside {}": "{1} 内部的 {0} 个调用帧",
})

# --- the hook doctor's refusals (hookviz.diagnose raises DiagnosisError): why it cannot run and what to give ---
MESSAGES.update({
    "diagnose() needs `inputs`, the arguments of one forward call: a tensor, a tuple of positional arguments or a "
    "dict of keyword arguments, e.g. hookviz.diagnose(model, torch.randn(8, 1, 8, 8))": (
        "`diagnose()` 需要 `inputs`，即一次前向调用的参数：一个张量、一个由位置参数组成的元组，或一个由关键字参数组成的字典，"
        "例如 `hookviz.diagnose(model, torch.randn(8, 1, 8, 8))`"
    ),
    "diagnose() got `inputs` of type {}; give a tensor, a tuple of positional arguments or a dict of keyword "
    "arguments": "`diagnose()` 收到的 `inputs` 类型是 `{}`；请给一个张量、一个由位置参数组成的元组，或一个由关键字参数组成的字典",
    "diagnose() got `inputs` of type {} (a NumPy array: torch.as_tensor(x) turns it into a tensor); give a tensor, a "
    "tuple of positional arguments or a dict of keyword arguments": (
        "`diagnose()` 收到的 `inputs` 类型是 `{}`（NumPy 数组：用 `torch.as_tensor(x)` 把它变成张量）；请给一个张量、"
        "一个由位置参数组成的元组，或一个由关键字参数组成的字典"
    ),
    "`kwargs` must be a dict of keyword arguments, got {}": "`kwargs` 必须是由关键字参数组成的字典，收到的却是 `{}`",
    "diagnose() needs the model (an nn.Module) as its first argument, got {}; call hookviz.diagnose(model, inputs)": (
        "`diagnose()` 的第一个参数必须是模型（一个 `nn.Module`），收到的却是 `{}`；请调用 `hookviz.diagnose(model, inputs)`"
    ),
    "diagnose() was called inside torch.inference_mode(): no tensor made there can have a gradient, so no backward "
    "pass can run (and hooks would be judged on a graph that does not exist). Call hookviz.diagnose(model, inputs) "
    "outside the `with torch.inference_mode():` block.": (
        "`diagnose()` 是在 `torch.inference_mode()` 之中调用的：在那里创建的张量都不能有梯度，所以无法进行反向传播"
        "（钩子会在一个并不存在的计算图上被评判）。请在 `with torch.inference_mode():` 块之外调用 "
        "`hookviz.diagnose(model, inputs)`。"
    ),
    "the model's {} (and {} more) is an inference tensor: the model was built or loaded inside "
    "torch.inference_mode(), so it cannot take part in a backward pass. Build or load it outside the `with "
    "torch.inference_mode():` block (torch.no_grad() is enough for evaluation).": (
        "模型的 `{0}`（另有 {1} 个）是推理张量：模型是在 `torch.inference_mode()` 之中构建或加载的，所以不能参与反向传播。"
        "请在 `with torch.inference_mode():` 块之外构建或加载它（评估时用 `torch.no_grad()` 就够了）。"
    ),
    "loss_fn must be a function that turns the model's output into a scalar tensor, got {}; e.g. loss_fn=lambda out: "
    "out.logits.sum(), or leave it out": (
        "`loss_fn` 必须是一个把模型输出变成标量张量的函数，收到的却是 `{}`；例如 `loss_fn=lambda out: out.logits.sum()`，"
        "或者不传它"
    ),
})

# --- the hook atlas's table (hookviz.atlas.AtlasTable, notebook 16): the headers, yes/no, the categories, the
# counts, what a replacement changed and each situation's question (its tooltip). Kinds, situation names, types
# and errors stay as written ------------------------------------------------------------------------------------
MESSAGES.update({
    "situation": "情形",
    "fires": "是否触发",
    "calls": "调用次数",
    "receives": "收到的参数",
    "returns": "返回替代值的效果",
    "measured on": "测得的版本",
    "taught in": "讲解位置",
    "runs in": "运行于",
    "left": "失败后留下的状态",
    # where a hook's first call ran (the runs in column) and what a failed trigger left behind (the left column)
    "caller thread, grad on": "调用方线程，梯度开启",
    "caller thread, grad off": "调用方线程，梯度关闭",
    "caller thread, inference mode": "调用方线程，推理模式",
    "other thread, grad on": "另一个线程，梯度开启",
    "other thread, grad off": "另一个线程，梯度关闭",
    "other thread, inference mode": "另一个线程，推理模式",
    ".grad set on {} of {} leaves": "{1} 个叶子张量中有 {0} 个已有 .grad",
    "{} of {} buffers changed": "{1} 个缓冲区中有 {0} 个被改变",
    ".grad set on {} of {} leaves; {} of {} buffers changed": (
        "{1} 个叶子张量中有 {0} 个已有 .grad；{3} 个缓冲区中有 {2} 个被改变"
    ),
    "yes": "是",
    "no": "否",
    "lifecycle": "生命周期",
    "shapes": "形状",
    "repetition": "重复",
    "timing": "时机",
    "failure": "失败",
    "context": "上下文",
    "variations": "变体",
    "{} of {} rows": "共 {1} 行，显示 {0} 行",
    "… {} more rows": "…… 另有 {} 行未显示",
    # what returning a replacement changed
    "nothing": "没有改变任何东西",
    "error: {}": "出错：{}",
    "the gradient DDP writes": "DDP 写入的梯度",
    "the gradients (x.grad, weight.grad)": "梯度（x.grad、weight.grad）",
    "the leaf's .grad": "叶子张量的 .grad",
    "the leaves' .grad": "各叶子张量的 .grad",
    "the loaded weights and missing / unexpected keys": "加载的权重，以及缺失 / 多余的键",
    "the lr that was loaded": "加载进来的 lr",
    "the module's output": "模块的输出",
    "the parameter and step()'s return": "参数和 step() 的返回值",
    "the state_dict keys": "state_dict 的键",
    "what the module holds": "模块持有的内容",
    # the situations' questions (the tooltips)
    "a non-tensor positional argument: module(x, 'tag')": "一个非张量的位置参数：module(x, 'tag')",
    "all parameters have requires_grad=False (the input still requires grad)": (
        "所有参数都是 requires_grad=False（输入仍然需要梯度）"
    ),
    "an earlier hook of the same kind registers this one during the trigger": "触发过程中，先注册的同类钩子注册了这个钩子",
    "an earlier hook of the same kind removes this one during the trigger": "触发过程中，先注册的同类钩子移除了这个钩子",
    "an exception left the block; saved_tensors_hooks is entered afterwards": (
        "一个异常离开了该块；之后进入 saved_tensors_hooks"
    ),
    "blocks nested; saved_tensors_hooks entered after the inner one ended (inside the outer)": (
        "块嵌套；内层块结束后（仍在外层块中）进入 saved_tensors_hooks"
    ),
    "calling torch.jit.trace(module, x) (hooks counted after tracing)": (
        "调用 torch.jit.trace(module, x)（只统计跟踪之后的钩子调用）"
    ),
    "forward returns None": "forward 返回 None",
    "forward returns a dict of tensors": "forward 返回由张量组成的字典",
    "forward returns a tuple of two tensors": "forward 返回由两个张量组成的元组",
    "forward under torch.autocast('cpu', dtype=torch.bfloat16)": "在 torch.autocast('cpu', dtype=torch.bfloat16) 下运行 forward",
    "forward under torch.inference_mode()": "在 torch.inference_mode() 下运行 forward",
    "frozen parameters and an input that does not require grad": "参数被冻结，输入也不需要梯度",
    "load_state_dict() from another model after the hook was registered": "注册钩子之后，从另一个模型 load_state_dict()",
    "save_on_cpu is entered inside the block": "在该块内进入 save_on_cpu",
    "saved_tensors_hooks is entered after the block ended": "该块结束之后进入 saved_tensors_hooks",
    "saved_tensors_hooks is entered inside the block": "在该块内进入 saved_tensors_hooks",
    "the block is entered while saved_tensors_hooks are active": "在 saved_tensors_hooks 生效期间进入该块",
    "the hook raises ValueError on its first call; the trigger runs again": (
        "钩子在第一次调用时抛出 ValueError；之后再运行一次触发操作"
    ),
    "the hook removes itself on its first call, and another hook of the same kind is registered after it": (
        "钩子在第一次调用时移除自己，并且在它之后还注册了另一个同类钩子"
    ),
    "the hook removes itself on its first call; the trigger runs twice": "钩子在第一次调用时移除自己；触发操作运行两次",
    "the hooked object is copy.deepcopy'd and the copy is triggered": "用 copy.deepcopy 复制挂着钩子的对象，再触发副本",
    "the module is called as module(x, scale=2.0)": "以 module(x, scale=2.0) 的方式调用模块",
    "the module is in eval() mode": "模块处于 eval() 模式",
    "the module's forward raises": "模块的 forward 抛出异常",
    "the plain case: one trigger": "最普通的情况：触发一次",
    "the same function is registered twice": "同一个函数注册了两次",
    "the same module is applied twice: module(module(x))": "同一个模块被应用两次：module(module(x))",
    "the trigger runs twice": "触发操作运行两次",
    "the whole trigger runs under torch.no_grad()": "整个触发操作在 torch.no_grad() 下运行",
    "torch.autograd.grad(loss, params) (no .backward(), no input grad)": (
        "torch.autograd.grad(loss, params)（不调用 .backward()，也不对输入求梯度）"
    ),
    "torch.func.functional_call(module, params, (x,))": "用 torch.func.functional_call(module, params, (x,)) 调用模块",
    "torch.func.grad over functional_call (gradient w.r.t. x)": "对 functional_call 使用 torch.func.grad（对 x 求梯度）",
    "torch.utils.checkpoint.checkpoint(module, x, use_reentrant=False)": (
        "用 torch.utils.checkpoint.checkpoint(module, x, use_reentrant=False) 调用模块"
    ),
    "torch.utils.checkpoint.checkpoint(module, x, use_reentrant=True)": (
        "用 torch.utils.checkpoint.checkpoint(module, x, use_reentrant=True) 调用模块"
    ),    # the variations category
    "the module is cast with .to(torch.float64) after the hook was registered (input float64)": (
        "注册钩子之后，用 .to(torch.float64) 转换模块的类型（输入也是 float64）"
    ),
    "the hook is on model.linear, then the child is replaced: model.linear = nn.Linear(3, 3)": (
        "钩子挂在 model.linear 上，随后替换这个子模块：model.linear = nn.Linear(3, 3)"
    ),
    "one forward, then backward(retain_graph=True) twice": "一次前向传播，之后调用两次 backward(retain_graph=True)",
    "backward(create_graph=True)": "调用 backward(create_graph=True)",
    "the module is an nn.Embedding(10, 3) called with integer indices": "模块是 nn.Embedding(10, 3)，用整数索引调用",
    "the module is an nn.GRUCell(3, 3) called 3 times in a loop: h = cell(x, h)": (
        "模块是 nn.GRUCell(3, 3)，在循环中调用 3 次：h = cell(x, h)"
    ),
    "the module is an nn.LSTM(3, 3) on an unbatched sequence; it returns (y, (h, c))": (
        "模块是 nn.LSTM(3, 3)，输入一个不带批次维度的序列；它返回 (y, (h, c))"
    ),
    "the hook is on an nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)) container": (
        "钩子挂在 nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)) 容器上"
    ),
    "the hook is on an nn.ModuleList of two Linear layers that forward loops over": (
        "钩子挂在一个包含两个 nn.Linear 层的 nn.ModuleList 上，forward 用循环逐层调用它们"
    ),
    "the leaf w is used twice in the graph: y = w * v * w": "叶子张量 w 在计算图中被使用两次：y = w * v * w",
    "the hooked leaf is a module's parameter, then module.load_state_dict(...) (copies in place) before the graph "
    "is built": "挂着钩子的叶子张量是模块的参数，构建计算图之前调用 module.load_state_dict(...)（原地复制）",
    "the hooked leaf is a module's parameter, then module.load_state_dict(..., assign=True) before the graph is "
    "built": "挂着钩子的叶子张量是模块的参数，构建计算图之前调用 module.load_state_dict(..., assign=True)",
})

# --- the widgets (hookviz.widgets): options, captions, status lines, and the words drawn in their pictures and
# charts (those only where a Chinese font is installed: hookviz.render.figure_text). Layer names, types, shapes
# and numbers stay as written ------------------------------------------------------------------------------------
MESSAGES.update({
    # the attention explorers
    "mean of heads": "各头的平均",
    "head {}": "注意力头 {}",
    "head {} (heads 0-{})": "注意力头 {0}（共 0-{1} 号）",
    "sample {}": "样本 {}",
    "{} queries (rows) x {} keys (columns)": "{} 个查询（行）× {} 个键（列）",
    "not shown: {} (state.not_shown says why)": "未显示：{}（原因见 state.not_shown）",
    "mean": "平均",
    "rows: queries · columns: keys · scale 0-1": "行：查询 · 列：键 · 刻度 0-1",
    # the layer explorer
    "all types": "全部类型",
    "loss": "损失",
    "top logit": "最大的 logit",
    "index": "按序号",
    "top-k": "前 k 个",
    "not called": "未被调用",
    "label {}": "标签 {}",
    "labels {}": "标签 {}",
    "all {} channels": "全部 {} 个通道",
    "channels {}-{} of {}": "共 {2} 个通道中的 {0}-{1}",
    "channels {} of {}": "共 {1} 个通道中的 {0}",
    "all {} channels, largest mean first: {}": "全部 {0} 个通道，均值最大的在前：{1}",
    "{} of {} channels, largest mean first: {}": "共 {1} 个通道中的 {0} 个，均值最大的在前：{2}",
    "page {} (by index)": "第 {} 页（按序号）",
    "page {} (top-k by mean)": "第 {} 页（按均值取前 k 个）",
    "{} positions x {} features as a heat map (a row per position)": "{} 个位置 × {} 个特征，画成热图（每个位置一行）",
    "{} positions x {} classes as a heat map (a row per position)": "{} 个位置 × {} 个类别，画成热图（每个位置一行）",
    "{} values as a heat strip": "{} 个值，画成热度条",
    "range [{}, {}]": "取值范围 [{}, {}]",
    "called {} times; showing the last call": "被调用了 {} 次；显示最后一次调用",
    "batch_first=False: dimension 0 may be the sequence, not the sample": "batch_first=False：第 0 维可能是序列，而不是样本",
    "output is a {} of {}; showing element [{}] (elements: {})": "输出是含 {1} 个元素的 {0}；显示元素 [{2}]（各元素：{3}）",
    "{} NaN and {} Inf values (magenta)": "{} 个 NaN 值和 {} 个 Inf 值（品红色）",
    "all values are 0 (a dead layer for this sample?)": "所有值都是 0（对这个样本来说是一个死层？）",
    "all values equal {}": "所有值都等于 {}",
    "cell = class": "格子 = 类别",
    "cell = index": "格子 = 序号",
    "no gradient for {}": "{} 没有梯度",
    "no gradient reached this layer": "没有梯度到达这一层",
    "d({})/d(output) of {}": "{1} 的 d({0})/d(output)",
    # the hook timeline
    "forward": "前向",
    "backward": "反向",
    "{} of {} hook calls": "共 {1} 次钩子调用，显示 {0} 次",
    "firing order": "触发顺序",
    # the training monitor
    "loss {}": "损失 {}",
    "step {}": "第 {} 步",
    "no steps yet": "还没有训练步",
    "training…": "训练中…",
    "stopped": "已停止",
    "stopped by an error: {}": "因出错而停止：{}",
    "no steps yet: press Train, or call monitor.run(steps)": "还没有训练步：点“训练”，或调用 monitor.run(steps)",
    "steps must be a whole number from 1 to 1000000, not {}": "步数必须是 1 到 1000000 之间的整数，而不是 {}",
    "layer {} was removed from the model in step {}: it has no statistics from step {} on": (
        "层 {0} 在第 {1} 步从模型中被移除：从第 {2} 步起没有它的统计数据"
    ),
    "a layer {} ({}) is back in step {}: watched from step {}": "层 {0}（{1}）在第 {2} 步回来了：从第 {3} 步起重新观察",
    "layer {} was replaced in step {} (by a new {}): the new module is watched from step {}": (
        "层 {0} 在第 {1} 步被替换（换成了新的 {2}）：从第 {3} 步起观察新模块"
    ),
    "feature maps of {}": "{} 的特征图",
    "no probe sample: pass probe=...": "没有探针样本：请传入 probe=...",
    "press Train: maps appear while it trains": "点“训练”：训练时会显示特征图",
    "{} at step {}": "{0}，第 {1} 步",
    "(cell = output index)": "（格子 = 输出序号）",
    "gradient of {}: no steps yet": "{} 的梯度：还没有训练步",
    "|gradient| of {}, last {} steps": "{0} 的 |梯度|，最近 {1} 步",
    "log10 |gradient| (-3 = 0.001)": "log10 |梯度|（-3 = 0.001）",
    # the pictures and charts (hookviz.render)
    "loss, up to step {}": "损失，截至第 {} 步",
    "step": "步",
    "no gradient yet": "还没有梯度",
    "no values to draw": "没有可画的值",
    "log": "对数",
    "count": "计数",
    "NaN {} · Inf {} · {} values": "NaN {} · Inf {} · 共 {} 个值",
    "exact zeros: {} (not drawn)": "精确的零：{} 个（未画出）",
    "input": "输入",
    "position": "位置",
    "class": "类别",
    "feature": "特征",
    "rows: {} 0-{}": "行：{} 0-{}",
    "{} values in rows of {}": "{} 个值，每行 {} 个",
    "columns: {} 0-{}": "列：{} 0-{}",
    "value i: row i // {}, column i % {}": "第 i 个值：第 i // {0} 行，第 i % {1} 列",
    "mean of {}x{} blocks": "{}x{} 块的平均",
    "mean |gradient|, last steps": "平均 |梯度|，最近几步",
    "activation mean": "激活均值",
    "activation std": "激活标准差",
    "no non-zero gradient": "没有非零梯度",
    "|activation| over steps: {}": "|激活| 随训练步的变化：{}",
    "log10 |gradient|: {}": "log10 |梯度|：{}",
    "log10 |gradient|": "log10 |梯度|",
    "log10 |gradient|, {}% zeros not shown": "log10 |梯度|，{}% 的零未画出",
    # notebook 14's own figures (hookviz.render.figure_text in its cells)
    "key position": "键的位置",
    "query position": "查询的位置",
    "layer 1 · head 0 (batch mean)": "第 1 层 · 注意力头 0（批次平均）",
    "layer 0 · head 2 (batch mean)": "第 0 层 · 注意力头 2（批次平均）",
    "patched position": "修补的位置",
    "fraction restored": "恢复的比例",
    "embedding": "嵌入",
    "block {}": "块 {}",
})

# --- the setup check's warning about another torch release (hookviz.doctor.release_warning): its sentences; the
# notebook sections stay as ids --------------------------------------------------------------------------------
MESSAGES.update({
    "oldest supported": "支持的最旧版本",
    "Google Colab (scripts/colab_pins.txt)": "Google Colab 的版本（scripts/colab_pins.txt）",
    "the course's pin": "课程固定的版本",
    "newest pip serves here": "这里 pip 能装到的最新版本",
    "torch {} is not a release number this course knows; it is proven on {}.": (
        "torch {0} 不是本课程认识的版本号；课程在这些版本上验证过：{1}。"
    ),
    "torch {} is outside the releases this course supports ({} to {}; every notebook is proven on {}): notebooks "
    "may fail or show other outputs there, and notebook 16 has no stored hook atlas for it. These sections teach "
    "behaviour that changes between releases:": (
        "torch {0} 不在本课程支持的版本范围内（{1} 到 {2}；每个笔记本都在 {3} 上验证过）：在它上面笔记本可能失败或显示"
        "不同的输出，笔记本 16 也没有为它保存的钩子图鉴。下面这些小节讲的行为在不同版本之间会变化："
    ),
    "the stored outputs were made with torch {}; torch {} is in the supported range ({} to {}), so every notebook "
    "runs and its checks hold": (
        "保存的输出是用 torch {0} 生成的；torch {1} 在支持的范围内（{2} 到 {3}），所以每个笔记本都能运行，其中的检查也都成立"
    ),
    "These sections behave differently on {} than in the stored outputs (each cell prints a table by release and "
    "checks yours):": "下面这些小节在 {} 上的表现与保存的输出不同（相关单元格会按版本打印一张表，并检查你的版本）：",
    "Notebook 16 has no stored hook atlas for torch {}: its §1 check stops there.": (
        "笔记本 16 没有为 torch {} 保存的钩子图鉴：它 §1 的检查会在那里停下。"
    ),
    "The hook atlas of {} differs from {}'s in: {}.": "{0} 的钩子图鉴与 {1} 的不同之处在于：{2}。",
    "The hook atlas of {} matches {}'s entry for entry.": "{0} 的钩子图鉴与 {1} 的逐条相同。",
})

# --- the release differences (hookviz.releases.DIFFERENCES) as release_warning lists them: what is measured, and
# each release's result; torch, Dynamo and node names, quoted messages and code stay as written ------------------
MESSAGES.update({
    "Does register_full_backward_pre_hook's docstring list a bare Tensor as a return value?": (
        "register_full_backward_pre_hook 的文档字符串是否把单个 Tensor 列为可返回的值？"
    ),
    "no: 'hook(module, grad_output) -> tuple[Tensor] or None'": "否：'hook(module, grad_output) -> tuple[Tensor] or None'",
    "yes: '-> tuple[Tensor, ...], Tensor or None' (returning one still fails)": (
        "是：'-> tuple[Tensor, ...], Tensor or None'（可真的返回单个张量仍然会失败）"
    ),
    "a forward pre-hook added after the first compiled call to net.b, whose forward hook Dynamo traced:": (
        "在第一次编译调用之后给 net.b 加一个前向预钩子（Dynamo 追踪时 net.b 已有一个前向钩子）："
    ),
    "skipped silently, no recompile": "被悄悄跳过，不会重新编译",
    "Does a full backward pre-hook alone, on a module whose inputs need no grad, give the full hook's warning?": (
        "模块的输入都不需要梯度时，单独一个完整反向预钩子是否也会给出完整反向钩子的那条警告？"
    ),
    "yes: UserWarning 'Full backward hook is firing ...'": "是：UserWarning 'Full backward hook is firing ...'",
    "no: only full hooks warn": "否：只有完整反向钩子会警告",
    "a pre-hook with .item() on nn.TransformerEncoderLayer itself, graphs compiled:": (
        "nn.TransformerEncoderLayer 本身挂一个调用 .item() 的预钩子时，编译出的图："
    ),
    "1: the hook's sum; the layer's forward runs uncompiled": "1 个：钩子里的求和；该层的 forward 不经编译运行",
    "2: the hook's sum, then the whole forward": "2 个：钩子里的求和，然后是整个 forward",
    "torch.export.export(model, args, strict=True), a forward pre-hook on the root module:": (
        "以 strict=True 调用 torch.export.export，根模块上有一个前向预钩子："
    ),
    "BackendCompilerFailed: 'Tried to emit a second graph during export'": (
        "报错 BackendCompilerFailed：'Tried to emit a second graph during export'"
    ),
    "exported, the hook's mul in the graph": "导出成功，钩子里的乘法在图中",
    "noticed: Dynamo compiles again and the pre-hook runs": "会被发现：Dynamo 重新编译，预钩子会运行",
    "the first line of the reason Dynamo records when it gives up (counters['unimplemented']):": (
        "Dynamo 放弃编译时记录的原因的第一行（counters['unimplemented']）："
    ),
    "graphs compiled for TwoLayer with a @torch.compiler.disable forward hook on net.a:": (
        "net.a 上有一个 @torch.compiler.disable 前向钩子时，TwoLayer 编译出的图："
    ),
    "1: relu + net.b; net.a's linear runs uncompiled": "1 个：relu + net.b；net.a 的线性层不经编译运行",
    "2: net.a's linear, then relu + net.b": "2 个：net.a 的线性层，然后是 relu + net.b",
    "the graphs Dynamo compiles for TwoLayer with an .item() forward hook on net.a:": (
        "net.a 上有一个调用 .item() 的前向钩子时，Dynamo 为 TwoLayer 编译出的图："
    ),
    "2: the hook's mean; relu + net.b (net.a's linear runs uncompiled)": (
        "2 个：钩子里的 mean；relu + net.b（net.a 的线性层不经编译运行）"
    ),
    "3: net.a's linear; the hook's mean; relu + net.b": "3 个：net.a 的线性层；钩子里的 mean；relu + net.b",
    "a tensor hook registered inside the compiled function (graphs compiled, graph breaks):": (
        "在被编译的函数内部注册的张量钩子（编译出的图数、图中断数）："
    ),
    "2 graphs, 1 break: 'Compilation of intermediate hooks requires compiled autograd'": (
        "2 个图，1 次中断：'Compilation of intermediate hooks requires compiled autograd'"
    ),
    "1 graph, no break: the hook is traced": "1 个图，没有中断：钩子被追踪进图",
    "torch.jit.script and torch.jit.trace warn '`torch.jit.<name>` is deprecated. Please switch to `torch.compile` or "
    "`torch.export`.' as:": (
        "torch.jit.script 和 torch.jit.trace 以下面的类别发出警告 '`torch.jit.<name>` is deprecated. Please switch to "
        "`torch.compile` or `torch.export`.'："
    ),
    "no warning: not deprecated yet": "没有警告：尚未弃用",
    "the error names the node whose saved output was edited in place: '... which is output 0 of <name>, ...':": (
        "报错信息点名那个保存的输出被原地修改的节点：'... which is output 0 of <name>, ...'："
    ),
    "the error names the full backward hook's autograd function: 'Output 0 of <name> is a view ...':": (
        "报错信息点名完整反向钩子的 autograd 函数：'Output 0 of <name> is a view ...'："
    ),
    "graphs compiled in 12 steps for the nn.Sequential MLP with a @torch.compiler.disable forward hook:": (
        "nn.Sequential MLP 带一个 @torch.compiler.disable 前向钩子时，12 步中编译出的图："
    ),
    "0: nothing of the model is compiled, it runs eagerly": "0 个：模型没有任何部分被编译，以 eager 方式运行",
    "1: the first layer's linear": "1 个：第一层的线性层",
    "graphs compiled in 6 steps for the nn.Sequential MLP, hook on its first layer: .item() hook / @disable hook:": (
        "nn.Sequential MLP 的第一层上有钩子时，6 步中编译出的图：调用 .item() 的钩子 / @disable 钩子："
    ),
    "1 / 0: the first layer's linear runs uncompiled": "1 / 0 个：第一层的线性层不经编译运行",
    "2 / 1: the first layer's linear is compiled": "2 / 1 个：第一层的线性层被编译",
    "graphs compiled in 20 steps for the MLP with the @torch.compiler.disable deque hook:": (
        "MLP 带 @torch.compiler.disable 的 deque 钩子时，20 步中编译出的图："
    ),
    "under FSDP2 on gloo (CPU), each process's slice of the weight's gradient after backward is:": (
        "在 gloo（CPU）上用 FSDP2 时，反向传播之后每个进程持有的那一片权重梯度是："
    ),
    "the SUM over the processes: gloo's reduce-scatter sums for ReduceOp.AVG": (
        "各进程之和：gloo 的 reduce-scatter 对 ReduceOp.AVG 做的是求和"
    ),
    "the average over the processes": "各进程的平均值",
    "a forward pre-hook added after the first compiled call to an nn.Linear compiled directly, which had a forward "
    "hook when traced:": "在第一次编译调用之后，给一个直接编译的 nn.Linear（追踪时已有一个前向钩子）加一个前向预钩子：",
    "skipped silently: the guard covers only forward hooks": "被悄悄跳过：守卫只覆盖前向钩子",
    "noticed: any module hook at tracing time makes Dynamo guard the module's hooks": (
        "会被发现：追踪时模块上有任何钩子，Dynamo 都会给该模块的钩子加守卫"
    ),
})

# --- what a widget shows when a typed value cannot be taken (hookviz.widgets.common.refusal) -------------------
MESSAGES.update({
    "refused: {}": "已拒绝：{}",  # the refused values' messages: STORED_OUTPUTS below
})

# --- the layer explorer's notes (hookviz.widgets.explorer: a layer it cannot show, a note on what it shows, why a
# layer has no gradient) and the capture's notes they quote (hookviz.capture); notes joined in one line are
# translated one by one (hookviz.i18n.tr_joined) and joined with "；" -------------------------------------------
MESSAGES.update({
    "not called: a {} only holds modules; its parent calls them one by one": (
        "未被调用：{} 只是存放模块的容器；由它的父模块逐个调用其中的模块"
    ),
    # hookviz.widgets.decoder_attention: how a recomputed pattern was checked (PatternCheck notes)
    "recomputed assuming a causal mask and a 1/√d scale, not checked ({} was not called, so hookviz could not "
    "compare it with what the module computed)": (
        "按因果掩码和 1/√d 缩放重新计算，未经核对（{0} 没有被调用，hookviz 无法把结果与模块实际算出的值比较）"
    ),
    "recomputed assuming a causal mask and a 1/√d scale, not checked (o_proj's input {} is not the heads' outputs "
    "side by side)": "按因果掩码和 1/√d 缩放重新计算，未经核对（o_proj 的输入 {0} 不是各头输出并排拼接的结果）",
    "shown with a causal mask, but its values cannot tell a causal pattern from one without a mask (both reproduce "
    "the module's output)": "按因果掩码显示，但从数值上分不出有没有掩码（两种模式都能重现模块的输出）",
    "no causal mask (every query sees every key), checked against the module's output": (
        "没有因果掩码（每个查询都能看到每个键），已与模块的输出核对"
    ),
    "hookviz shows no pattern for {}: softmax(q kᵀ/√d), with a causal mask or without one, does not reproduce what "
    "the module passed to o_proj (largest difference {} of its largest value). The module computes its attention "
    "some other way hookviz cannot see from q_proj and k_proj: a norm of q and k after the projections (Qwen3, "
    "OLMo-2), another scale, an attention or padding mask, a gate. To see its pattern, have the module compute the "
    "weights itself and return or keep them": (
        "hookviz 不显示 {0} 的注意力模式：无论加不加因果掩码，softmax(q kᵀ/√d) 都重现不了模块传给 o_proj 的值"
        "（最大差值为其最大值的 {1}）。这个模块用 hookviz 从 q_proj 和 k_proj 看不到的方式计算注意力：投影之后对 q 和 k "
        "做了归一化（Qwen3、OLMo-2）、用了别的缩放、注意力掩码或填充掩码、门控。要看它的注意力模式，请让模块自己算出权重并返回或保存"
    ),
    "hookviz shows no pattern for {}: q_proj's and k_proj's outputs {} and {} do not split into heads of {} the way "
    "Llama's attention does ({}: {})": (
        "hookviz 不显示 {0} 的注意力模式：q_proj 和 k_proj 的输出 {1} 和 {2} 无法像 Llama 的注意力那样拆成大小为 {3} "
        "的头（{4}：{5}）"
    ),
    "not called: MultiheadAttention uses this layer's weights directly, never calls it": (
        "未被调用：MultiheadAttention 直接使用这一层的权重，从不调用它"
    ),
    "not called in this pass (its parent may use its weights directly, or a fused fast path skipped it)": (
        "这次前向传播中未被调用（它的父模块可能直接使用了它的权重，或者一条融合的快速路径跳过了它）"
    ),
    "cannot show: shape {} has no batch dimension of {} first": "无法显示：形状 {0} 的第一维不是大小为 {1} 的批次维",
    "cannot show: shape {} has no batch dimension of {} first ({} has batch_first=False: its outputs are (sequence, "
    "batch, ...))": (
        "无法显示：形状 {0} 的第一维不是大小为 {1} 的批次维（{2} 设置了 batch_first=False：它的输出是 (sequence, batch, ...)）"
    ),
    "cannot show: the output is None (the module returns nothing to show)": "无法显示：输出是 None（模块没有返回可显示的东西）",
    "cannot show: the output is a {} with no tensor in it": "无法显示：输出是一个不含张量的 {}",
    "cannot show: complex values ({}); show .abs() or .real": "无法显示：复数值（{}）；请改为显示 .abs() 或 .real",
    "output is a {}; showing key {} (keys: {})": "输出是 {0}；显示键 {1}（各键：{2}）",
    "output is a {}; showing key {}": "输出是 {0}；显示键 {1}",
    "output is a {}; showing element [{}]": "输出是 {0}；显示元素 [{1}]",
    "nothing requires grad: every parameter is frozen and the input is not floating-point (integer tokens?), so "
    "there is no gradient to take": "没有任何东西需要梯度：所有参数都被冻结，输入又不是浮点数（整数词元？），所以没有梯度可求",
    "the model's output does not depend on anything that requires grad: its forward cuts the graph (a .detach(), a "
    "torch.no_grad() block or an integer step such as argmax inside it)": (
        "模型的输出不依赖任何需要梯度的东西：它的 forward 切断了计算图（其中有 .detach()、torch.no_grad() 块，"
        "或 argmax 这样的整数步骤）"
    ),
    "no gradients: the output does not require grad (torch.no_grad() or inference mode)": (
        "没有梯度：输出不需要梯度（在 torch.no_grad() 或推理模式下）"
    ),
    "no gradients: the output does not require grad (nothing before it requires grad)": (
        "没有梯度：输出不需要梯度（它之前没有任何东西需要梯度）"
    ),
    "output of type {} holds no tensor; nothing captured": "类型为 {} 的输出不含张量；什么也没有捕获",
    "outputs {} are the same tensor (aliased): a tensor hook sees the sum of their gradients, so no per-output "
    "gradient is captured for them": "输出 {} 是同一个张量（别名）：张量钩子看到的是它们梯度之和，所以不为它们逐个捕获梯度",
    "output {} is computed from output {}: a tensor hook on {} sees the gradient through both, so its own gradient is "
    "not captured": "输出 {0} 由输出 {1} 计算而来：{2} 上的张量钩子看到的是经过两者的梯度，所以不捕获它自己的梯度",
})

# --- the question box (hookviz.ask, hookviz.AskBox): its controls and status lines, and the labels of the answers'
# sources; the answers' titles and summaries are the course's own text, in the edition searched --------------------
MESSAGES.update({
    "question": "问题",
    "ask": "提问",
    "e.g. why does my hook fire twice?": "例如：为什么我的钩子触发了两次？",
    "Type a question in your own words, in English or Chinese, and press Enter.": (
        "用自己的话输入一个问题（英文或中文），然后按回车键。"
    ),
    "The question is empty: type what you want to know first.": "问题是空的：请先输入你想知道什么。",
    "1 answer to “{}”": "关于“{}”的 1 个回答",
    "{} answers to “{}”": "关于“{1}”的 {0} 个回答",
    "No section of the course matches “{}”. Try other words: the hook's name, the error message, what you expected to "
    "happen.": "课程中没有与“{}”匹配的章节。换些词试试：钩子的名字、错误消息、你预期会发生什么。",
    "question index": "问题索引",
    "FAQ": "常见问题",
    "clinic": "错误门诊",
    "atlas": "钩子图鉴",
    "section": "课程章节",
    "hookviz.ask searches the course's notebooks, and there are none next to this hookviz ({}): it was installed "
    "without the course repository. Clone the course and install it from there (pip install -e .), or pass root= the "
    "repository's folder to hookviz.search.build_index.": (
        "hookviz.ask 搜索的是课程的笔记本，而这个 hookviz（{}）旁边没有笔记本：它是在没有课程仓库的情况下安装的。"
        "请克隆课程仓库并在其中安装（pip install -e .），或者把仓库的文件夹作为 root= 传给 hookviz.search.build_index。"
    ),
    "{} is not the course repository: it has no notebooks/questions.yml": "{} 不是课程仓库：其中没有 notebooks/questions.yml",
})

# --- hookviz's exceptions that a learner triggers from a widget's state or that a notebook prints
# (ExplorerState.select, AttentionState.select), raised in the learner's language, and the text of a widget's static
# picture (StaticFallback.show_static). scripts/make_zh.py translates them where the English notebooks stored them ---
STORED_OUTPUTS: dict[str, str] = {
    "sample {} is out of range: the batch has {} samples (0 to {})": "样本 {0} 超出范围：这批数据有 {1} 个样本（0 到 {2}）",
    "page {} does not exist: layer {} has {} page(s)": "第 {0} 页不存在：层 {1} 只有 {2} 页",
    "head {} does not exist: {} has {} heads (0 to {})": "第 {0} 个头不存在：{1} 有 {2} 个头（0 到 {3}）",
    "order must be 'index' or 'topk', not {}": "order 必须是 'index' 或 'topk'，而不是 {}",
    "layer {} cannot be shown: {}": "层 {0} 无法显示：{1}",
    "layer {} is the same module as {} (one module shared under two names); the layer list shows it once, as {}: "
    "choose {}": "层 {0} 与 {1} 是同一个模块（一个模块以两个名字共享）；层列表只以 {2} 的名字显示它一次：请选择 {3}",
    "no layer named {} in {}; closest: {}": "{1} 中没有名为 {0} 的层；最接近的是：{2}",
    "no layer named {} in {}": "{1} 中没有名为 {0} 的层",
    "no attention layer named {}; closest: {}": "没有名为 {0} 的注意力层；最接近的是：{1}",
    "no attention layer named {}": "没有名为 {} 的注意力层",
    "static view of {}": "静态视图：{}",
    # hookviz.widgets.common.check_int: a widget argument that must be a whole number
    "{} must be a whole number (an int), not {}": "{0} 必须是整数（int），而不是 {1}",
    "{} must be at least {}, not {}": "{0} 至少要是 {1}，而不是 {2}",
    "the default is 512": "默认值是 512",
    "the default is 40": "默认值是 40",
    "1 turns samples into statistics every step": "设为 1 则每一步都把样本汇总成统计量",
    "1 records every step": "设为 1 则每一步都记录",
    "None shows the mean of the heads": "设为 None 则显示各头的平均",
    # the doctor's report when it is printed after a notebook's own words ("the doctor on this model: no findings")
    "no findings": "没有发现问题",
}
MESSAGES.update(STORED_OUTPUTS)
