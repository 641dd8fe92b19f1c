# ruff: noqa: E501 (a message and its translation stay on one line where they fit)
"""The old Python catalogue of hookviz's Chinese messages: empty, kept for a while so that work in progress that adds
entries here is not lost. :mod:`hookviz.i18n` merges whatever is listed here into the gettext catalogue
(``hookviz/locale/zh/LC_MESSAGES/hookviz.po``; an entry here wins); ``python scripts/i18n_catalog.py convert
--clear-legacy`` moves it into the ``.po`` file. New translations go into the ``.po`` file directly.
"""

from __future__ import annotations

MESSAGES: dict[str, str] = {}
NAMES: dict[str, str] = {}
STORED_OUTPUTS: dict[str, str] = {}

# --- issue 48 ---------------------------------------------------------------------------------------------------------
# Refusals of bad input by the public entry points (hookviz.guards, hookviz.llama, hookviz.releases, hookviz.atlas,
# hookviz.ask and its box, the monitor, remove_all_hooks, expect_error), the question box's notes, the setup check's
# font row, and the widgets' words added for issue 48. One block, so that it can be merged into the .po files.
MESSAGES.update({
    # hookviz.guards.check_number
    "{} must be a number, not {}": "{0} 必须是数字，而不是 {1}",
    "{} must be a finite number, not {}": "{0} 必须是有限的数字，而不是 {1}",
    "{} must be above {}, not {}": "{0} 必须大于 {1}，而不是 {2}",
    # hookviz.llama
    "{}: LlamaConfig has no field {} (transformers would keep a misspelled field and build the default model); "
    "closest: {}": "{0}：LlamaConfig 没有字段 {1}（transformers 会把拼错的字段当作普通属性保存，然后照默认配置建模型）；最接近的是：{2}",
    "{}: LlamaConfig has no field {} (transformers would keep a misspelled field and build the default model)": (
        "{0}：LlamaConfig 没有字段 {1}（transformers 会把拼错的字段当作普通属性保存，然后照默认配置建模型）"
    ),
    "how many prompts, e.g. make_copy_batch(64)": "要生成多少个提示，例如 make_copy_batch(64)",
    "{} must be below 2**63 (what torch's random generator takes), not {}": (
        "{0} 必须小于 2**63（torch 随机数生成器能接受的范围），而不是 {1}"
    ),
    "num_attention_heads ({}) must be a multiple of num_key_value_heads ({}): each key/value head serves the same "
    "number of query heads; choose num_key_value_heads that divide it": (
        "num_attention_heads（{0}）必须是 num_key_value_heads（{1}）的整数倍：每个键/值头服务相同数量的查询头；"
        "请选择能整除它的 num_key_value_heads"
    ),
    "{}: model must be a Hugging Face causal language model (load_tiny_llama(), random_llama()), not {}": (
        "{0}：model 必须是 Hugging Face 的因果语言模型（load_tiny_llama()、random_llama()），而不是 {1}"
    ),
    "{} must be token ids (an integer tensor, e.g. from make_copy_batch), not {}; use {}.long() for token ids stored "
    "as floats": "{0} 必须是词元编号（整数张量，例如 make_copy_batch 给出的），而不是 {1}；以浮点数保存的词元编号请用 {2}.long()",
    "{} must be 2-D (samples, tokens), not of shape {}; use {}[None] for one sample": (
        "{0} 必须是二维的（样本，词元），而不是形状 {1}；只有一个样本时请用 {2}[None]"
    ),
    "copy_accuracy: answers has {} rows for {} prompts: pass the answers of the same prompts (make_copy_batch gives "
    "both)": "copy_accuracy：answers 有 {0} 行，而提示有 {1} 个：请传入同一批提示的答案（make_copy_batch 会同时给出两者）",
    "{} is empty (shape {}): give at least one sample of one token": "{0} 是空的（形状 {1}）：请至少给出一个样本、一个词元",
    "{} holds token ids from {} to {}, and the model knows 0 to {}: give ids of its vocabulary (make_copy_batch gives "
    "the copy task's)": "{0} 里的词元编号从 {1} 到 {2}，而模型只认识 0 到 {3}：请给出它词表里的编号（make_copy_batch "
                        "给出的是复制任务的编号）",
    "{} must be at most {}, not {}": "{0} 最多只能是 {1}，而不是 {2}",
    "the course's model is tiny: 2 layers, hidden size 32": "课程的模型很小：2 层，隐藏层大小 32",
    "attn_implementation must be 'sdpa' or 'eager' (the course's CPU model runs with these), not {}; closest: {}": (
        "attn_implementation 必须是 'sdpa' 或 'eager'（课程的 CPU 模型用这两种运行），而不是 {0}；最接近的是：{1}"
    ),
    "attn_implementation must be 'sdpa' or 'eager' (the course's CPU model runs with these), not {}": (
        "attn_implementation 必须是 'sdpa' 或 'eager'（课程的 CPU 模型用这两种运行），而不是 {}"
    ),
    "hidden_act must be the name of an activation transformers knows, not {}; closest: {}": (
        "hidden_act 必须是 transformers 认识的激活函数名，而不是 {0}；最接近的是：{1}"
    ),
    "hidden_act must be the name of an activation transformers knows, not {}": (
        "hidden_act 必须是 transformers 认识的激活函数名，而不是 {}"
    ),
    "cache_of: mapping must be a hook's kwargs (a dict) or a model's output, not {}": (
        "cache_of：mapping 必须是钩子的 kwargs（一个 dict）或模型的输出，而不是 {}"
    ),
    "generate_greedy: model.generate() does not take the keyword argument(s) {}: check their spelling (they go to "
    "transformers' generate())": "generate_greedy：model.generate() 不接受关键字参数 {}：请检查拼写（它们会传给 transformers 的 generate()）",
    # hookviz.releases
    "version must be a string such as '2.10' (in quotes: a number loses its trailing zeros), not {}": (
        "version 必须是字符串，例如 '2.10'（要加引号：数字会丢掉末尾的 0），而不是 {}"
    ),
    "not a torch release: {} (expected e.g. '2.11' or '2.11.0')": "{} 不是 torch 的版本号（应当形如 '2.11' 或 '2.11.0'）",
    "torch {} is outside the releases the course measured ({} to {}): no row says what happens there; pass a release "
    "of that range, or None for the running torch": (
        "torch {0} 不在课程测量过的版本范围（{1} 到 {2}）内：没有哪一行说明那里会发生什么；请传入这个范围内的版本，"
        "或者传 None 表示当前运行的 torch"
    ),
    "expect_error: kind must be an exception class (or a tuple of them), not {}; e.g. expect_error(ValueError, 'bad')": (
        "expect_error：kind 必须是异常类（或由异常类组成的元组），而不是 {}；例如 expect_error(ValueError, 'bad')"
    ),
    "expect_error: fragment must be a string, the part of the message every release gives, not {}; e.g. "
    "expect_error(ValueError, 'bad')": (
        "expect_error：fragment 必须是字符串，即每个版本的错误消息里都有的那一段，而不是 {}；例如 expect_error(ValueError, 'bad')"
    ),
})

# --- issue 46: notebook 17's checkers (hookviz.exercises.nb17) --------------------------------------------------------
MESSAGES.update({
    "{} hook(s) left on the model: remove every hook you register before returning (try/finally)": (
        "模型上还留着 {} 个钩子：返回之前移除你注册的每一个钩子（try/finally）"
    ),
    "record_outputs should be a function": "record_outputs 应该是一个函数",
    "record_outputs should return a dict {{name: tensor}}": "record_outputs 应该返回字典 {{名字: 张量}}",
    "no output recorded for {}": "没有记录 {} 的输出",
    "the output of {} has shape {}, expected {}": "{0} 的输出形状是 {1}，应该是 {2}",
    "the output of '0' lost its negative values: the in-place ReLU after it rewrote the tensor you stored. detach() "
    "shares memory; store a copy": (
        "'0' 的输出丢掉了负值：它后面的原地 ReLU 改写了你保存的张量。detach() 共享内存；请保存一份副本"
    ),
    "the output of {} is not the module's output": "{} 的输出不是该模块的输出",
    "the recorded outputs should carry no graph (detach them)": "记录下的输出不应带有计算图（请 detach）",
    "record_outputs keeps copies that survive an in-place ReLU and leaves no hook": (
        "record_outputs 保存的副本不受原地 ReLU 影响，并且没有留下钩子"
    ),
    "per_sample_grad_norms should be a function": "per_sample_grad_norms 应该是一个函数",
    "per_sample_grad_norms should return a tensor of shape (N,): one norm per sample": (
        "per_sample_grad_norms 应该返回形状为 (N,) 的张量：每个样本一个范数"
    ),
    "your norms are {} times too small: with the default mean the gradient reaching the layer is divided by the "
    "batch size": "你的范数小了 {} 倍：使用默认的均值时，到达这一层的梯度已经除以了批次大小",
    "the norms differ from each sample's own gradient norm (largest relative error {})": (
        "这些范数与每个样本自己的梯度范数不同（最大相对误差 {}）"
    ),
    "per-sample gradient norms match torch.func's for a batch of {} samples": (
        "逐样本梯度范数与 torch.func 的结果一致（批次共 {} 个样本）"
    ),
    # the monitor and the one-tool-per-model refusals (hookviz.widgets.common, monitor, timeline)
    "how many steps the Train button runs, e.g. 1000": "“训练”按钮一次训练多少步，例如 1000",
    "seconds between two live redraws, e.g. 0.2": "两次实时重绘之间的秒数，例如 0.2",
    "seconds between two redraws of the charts, e.g. 3.0": "两次重绘图表之间的秒数，例如 3.0",
    "state must be a MonitorState (or None, to make one from model and step_fn), not {}": (
        "state 必须是 MonitorState（或 None，由 model 和 step_fn 新建一个），而不是 {}"
    ),
    "{}: called inside torch.inference_mode(), where no gradient can be computed and no backward hook can fire "
    "(torch.enable_grad() cannot lift it); call it outside `torch.inference_mode()` (torch.no_grad() is fine: the tool "
    "takes its own gradients)": (
        "{}：在 torch.inference_mode() 里被调用，那里算不出梯度，反向钩子也不会触发（torch.enable_grad() 也解除不了）；"
        "请在 `torch.inference_mode()` 之外调用（torch.no_grad() 没关系：这个工具会自己求梯度）"
    ),
    "{}: this {} is being used by {}: stop it first (monitor.stop(), then monitor.state.wait()), or give this tool its "
    "own copy of the model (copy.deepcopy(model))": (
        "{0}：这个 {1} 正被{2}使用：请先停止它（monitor.stop()，然后 monitor.state.wait()），"
        "或者给这个工具一份模型自己的副本（copy.deepcopy(model)）"
    ),
    "a monitor that trains it (made at line {} of {})": "一个正在训练它的监视器（创建于 {1} 的第 {0} 行）",
    "a running hookviz.diagnose()": "一个正在运行的 hookviz.diagnose()",
    "an AttentionExplorer": "一个 AttentionExplorer",
    "a LayerExplorer": "一个 LayerExplorer",
    "a HookTimeline": "一个 HookTimeline",
    # hookviz.atlas
    "{}: directory must be a folder path (a str or a pathlib.Path), not {}; leave it out for the atlases that ship "
    "with hookviz": "{0}：directory 必须是文件夹路径（str 或 pathlib.Path），而不是 {1}；要用 hookviz 自带的图鉴就不要传它",
    # hookviz.doctor (the setup check)
    "Chinese font": "中文字体",
    "the system's (Windows and macOS ship Chinese fonts)": "系统自带（Windows 和 macOS 都带有中文字体）",
    "this machine has no font that draws Chinese: a browser running on it shows the Chinese edition (notebooks/zh, "
    "the widgets under set_language('zh')) as empty boxes; hookviz's pictures carry their own font. Install one "
    "(Debian/Ubuntu: sudo apt-get install fonts-noto-cjk; Fedora: sudo dnf install google-noto-sans-cjk-fonts; conda: "
    "conda install -c conda-forge font-ttf-noto-cjk), then reload the page. A browser on another computer uses that "
    "computer's fonts (Windows and macOS have Chinese ones).": (
        "这台机器上没有能显示中文的字体：在这台机器上运行的浏览器会把中文版（notebooks/zh，以及 set_language('zh') 下的"
        "小部件）显示成空白方框；hookviz 画的图片自带字体，不受影响。请安装一个中文字体（Debian/Ubuntu：sudo apt-get "
        "install fonts-noto-cjk；Fedora：sudo dnf install google-noto-sans-cjk-fonts；conda：conda install -c "
        "conda-forge font-ttf-noto-cjk），然后刷新页面。在另一台电脑上运行的浏览器用的是那台电脑的字体（Windows 和 "
        "macOS 都带有中文字体）。"
    ),
    "release_warning: version must be a torch version string such as '2.11.0', not {}; environment_report()['torch'] "
    "is this machine's": "release_warning：version 必须是 torch 版本号字符串，例如 '2.11.0'，而不是 {}；"
                         "environment_report()['torch'] 是这台机器上的版本",
    "report must be a dict such as environment_report() returns (or None for this machine's), not {}": (
        "report 必须是 environment_report() 返回的那种 dict（或 None，表示这台机器的），而不是 {}"
    ),
    "the report has no Python version (python: {}): check this machine with hookviz.check_setup(), or pass "
    "environment_report()'s dict.": (
        "报告里没有 Python 版本（python: {}）：请用 hookviz.check_setup() 检查这台机器，或者传入 environment_report() 的 dict。"
    ),
    # hookviz.ask and its box
    "question must be a string (your question in your own words), not {}; e.g. hookviz.ask('why does my hook fire "
    "twice?')": "question 必须是字符串（用你自己的话写的问题），而不是 {}；例如 hookviz.ask('为什么钩子被调用了两次？')",
    "question is empty: type what you want to know, in English or Chinese, e.g. hookviz.ask('why does my hook fire "
    "twice?')": "问题是空的：请输入你想知道什么（英文或中文），例如 hookviz.ask('为什么钩子被调用了两次？')",
    "how many sections to show, e.g. k=3": "要显示多少个章节，例如 k=3",
    "root must be the course repository's folder (a str or a pathlib.Path), not {}; leave it out to search the course "
    "this hookviz belongs to": "root 必须是课程仓库的文件夹（str 或 pathlib.Path），而不是 {}；不传它就搜索这个 hookviz 所属的课程",
    "{} is not valid YAML at line {} ({}): fix the file (python -c \"import yaml; "
    "yaml.safe_load(open('notebooks/questions.yml'))\" shows where), or give root= another course repository": (
        "{0} 不是有效的 YAML，第 {1} 行有问题（{2}）：请修好这个文件"
        "（python -c \"import yaml; yaml.safe_load(open('notebooks/questions.yml'))\" 会指出位置），"
        "或者用 root= 指定另一个课程仓库"
    ),
    "{} must be a YAML list of entries (- id: ..., question: ..., proven_by: ...), not {}; fix the file, or give "
    "root= another course repository": (
        "{0} 必须是由条目组成的 YAML 列表（- id: ...、question: ...、proven_by: ...），而不是 {1}；"
        "请修好这个文件，或者用 root= 指定另一个课程仓库"
    ),
    "{}: {} must be a string, not {}": "{0}：{1} 必须是字符串，而不是 {2}",
    "root {}... cannot be a folder: {}": "root {0}…… 不可能是文件夹：{1}",
    "state must be an AskState (or None, to make one from k and language), not {}": (
        "state 必须是 AskState（或 None，由 k 和 language 新建一个），而不是 {}"
    ),
    "A long question: its first {} characters were read and its {} most telling words searched.": (
        "问题很长：只读取了前 {0} 个字符，并搜索了其中最有区分度的 {1} 个词。"
    ),
    "language must be 'en', 'zh' or None (found from the question), not {}": (
        "language 必须是 'en'、'zh' 或 None（根据问题自动判断），而不是 {}"
    ),
    "language={} is not a language the course is written in: use one of {}, or None to find it from the question": (
        "language={0} 不是课程使用的语言：请使用 {1} 之一，或者用 None 根据问题自动判断"
    ),
    # the monitor's fast charts (hookviz.render.pace_png), drawn in the learner's language like the detailed ones
    "mean |gradient| (log scale)": "平均 |梯度|（对数刻度）",
    # notebook 06's live-maps cell prints the layer whose maps it compares (not the monitor's live layer)
    "maps of layer:": "特征图所属的层：",
    # ExplorerState.select(page=-1) said "page 0 does not exist"
    "pages are counted from 0 here (the widget shows them from 1)": "这里的页码从 0 开始（小部件上显示的页码从 1 开始）",
    # hookviz.releases.differ / sections_that_differ / expected
    "differ: key must be a non-empty string naming the difference, not {}": "differ：key 必须是命名这个差异的非空字符串，而不是 {}",
    "differ: section must be 'NN_notebook#anchor' (e.g. '04_backward_hooks#full-backward'), not {}": (
        "differ：section 必须形如 'NN_notebook#anchor'（例如 '04_backward_hooks#full-backward'），而不是 {}"
    ),
    "differ: each row must be (since, what happens, value), e.g. ('2.8', 'no', False), not {}": (
        "differ：每一行必须是 (since, what happens, value)，例如 ('2.8', 'no', False)，而不是 {}"
    ),
    "differ: a row's release {} is outside the supported range ({} to {})": "differ：某一行的版本 {0} 不在支持的范围（{1} 到 {2}）内",
    "differ: the rows must be in release order, oldest first, each release once": "differ：各行必须按版本排序，最旧的在前，每个版本只出现一次",
    "key must be the name of a release difference (a string), not {}": "key 必须是某个版本差异的名字（字符串），而不是 {}",
    "{}: torch {} is outside the releases the course measured ({} to {}): no row says what happens there": (
        "{0}：torch {1} 不在课程测量过的版本范围（{2} 到 {3}）内：没有哪一行说明那里会发生什么"
    ),
    # hookviz.atlas
    "{}: directory {}... cannot be a folder: {}": "{0}：directory {1}…… 不可能是文件夹：{2}",
    "{}: directory {} cannot be a folder: {}": "{0}：directory {1} 不可能是文件夹：{2}",
    "{}: directory {} is a file, not a folder; leave it out for the atlases that ship with hookviz": (
        "{0}：directory {1} 是文件而不是文件夹；要用 hookviz 自带的图鉴就不要传它"
    ),
    "{}: directory {} does not exist; leave it out for the atlases that ship with hookviz": (
        "{0}：directory {1} 不存在；要用 hookviz 自带的图鉴就不要传它"
    ),
    "write_snapshot: entries must be a list of Entry (what run_atlas() returns), not {}": (
        "write_snapshot：entries 必须是由 Entry 组成的列表（run_atlas() 的返回值），而不是 {}"
    ),
    "{}: no stored atlas for torch {}: that is not a torch version such as '2.13.0'; stored: {}": (
        "{0}：没有 torch {1} 的图鉴：它不是形如 '2.13.0' 的 torch 版本号；已保存的有：{2}"
    ),
    "load_snapshot: {} is not a stored atlas ({}: {}); write it again with "
    "hookviz.atlas.write_snapshot(hookviz.atlas.run_atlas()), or pass another directory": (
        "load_snapshot：{0} 不是保存下来的图鉴（{1}：{2}）；请用 hookviz.atlas.write_snapshot(hookviz.atlas.run_atlas()) "
        "重新写一份，或者传入另一个 directory"
    ),
    "TrainingMonitor has no argument {}; closest: {}": "TrainingMonitor 没有参数 {0}；最接近的是：{1}",
    "TrainingMonitor has no argument {}": "TrainingMonitor 没有参数 {}",
    "the report's torch version is not a version string (torch: {}): check this machine with hookviz.check_setup(), "
    "or pass environment_report()'s dict.": (
        "报告里的 torch 版本不是版本号字符串（torch: {}）：请用 hookviz.check_setup() 检查这台机器，或者传入 environment_report() 的 dict。"
    ),
    "{} must be a torch release as a string, such as '2.13', not {}": "{0} 必须是字符串形式的 torch 版本，例如 '2.13'，而不是 {1}",
    "{}: directory {} is a file, not a folder": "{0}：directory {1} 是文件而不是文件夹",
    "write_snapshot: entries must come from one torch release (one run_atlas()), not from {}": (
        "write_snapshot：entries 必须来自同一个 torch 版本（一次 run_atlas()），而不是来自 {}"
    ),
    "version_span: versions must be a list of version strings such as ['2.8.0', '2.9.1'], not {}": (
        "version_span：versions 必须是版本号字符串组成的列表，例如 ['2.8.0', '2.9.1']，而不是 {}"
    ),
    "colab must be True, False or None (found from this machine), not {}": "colab 必须是 True、False 或 None（根据这台机器判断），而不是 {}",
    "main: argv must be a list of command-line words such as ['--check'], not {}": (
        "main：argv 必须是命令行参数组成的列表，例如 ['--check']，而不是 {}"
    ),
})
