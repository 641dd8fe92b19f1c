"""Find it by asking: :func:`ask` searches the course for the sections that answer a question in your own words.

A learner types a question as they would ask it in a forum (``"my hook runs twice after I re-run the cell"``,
or in Chinese, ``"为什么钩子被调用了两次"``) and gets the few best sections of the course, each with its link
(notebook path and anchor) and a one-line summary. What is searched, in the language of the question:

- the **question index** (``notebooks/questions.yml``): real questions people asked in public threads, with
  the short answer and the cell that proves it (in Chinese, each entry's ``question_zh``, linked to the Chinese
  edition's section);
- the **FAQ** (notebook 10) and the **mistakes clinic** (notebook 11), section by section;
- every other notebook's **sections**: the markdown from one ``<a id="...">`` anchor to the next, under its
  heading (the Chinese edition, ``notebooks/zh/``, has the same sections and anchors in Chinese);
- the **hook atlas** (:mod:`hookviz.atlas`): one entry per hook kind and situation, with what was measured,
  linked to the section that teaches it (or to the atlas table of notebook 16).

Ranking is Okapi BM25 from the ``rank-bm25`` package; this module only turns text into words. Text is first put
in NFKC form (the full-width ``ｈｏｏｋ`` of a Chinese input method is ``hook``), and traditional characters are read
as the simplified ones of the course (為什麼 as 为什么). English is lower-cased and split into words (an
identifier such as ``register_forward_hook`` counts whole and as its parts), with a light suffix rule so that
``hooks``/``hook`` and ``fires``/``firing`` meet, a short list of
the words learners use for the course's (``delete`` for ``remove``, ``layer`` for ``module``), and a word after
"not"/"never" counted once more as ``not_<word>`` ("does not fire"). Chinese colloquial words become the course's
(:data:`_SYNONYMS_ZH`: 怎么 → 如何, 删/取消注册/注销 → 移除, 显存 → 内存), in the course's text and the question
alike; then it is split into single characters and pairs of neighbouring characters (no dictionary needed), and the
course's glossary terms also count as their English words, so ``删掉`` meets ``移除`` and ``remove()``. A section
found by several kinds of document (its text, its heading, a question of the index it proves, atlas entries it
teaches) ranks above one found by a single kind (:meth:`_Index.search`). A question that names nothing the course
is about, or that no section holds enough of, gets no answer rather than three unrelated ones (:data:`MIN_COVERAGE`),
and a pasted page costs no more than a question (:data:`MAX_CHARS`, :data:`MAX_WORDS`). The index is built
once per process, on first use, from the files of the course repository (no network). It needs the
notebooks, which live in the repository next to the ``hookviz`` package, not inside it: a ``hookviz``
installed on its own raises :class:`CourseNotFoundError`, which says so.

>>> answers = ask("my hook prints nothing when I call layer.forward(x)")
>>> answers[0].link
'notebooks/10_faq.ipynb#faq-not-firing'
"""

from __future__ import annotations

import html
import json
import os
import re
import threading
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, overload

from hookviz.i18n import LANGUAGES, tr, translate

__all__ = [
    "SOURCES",
    "Answer",
    "Answers",
    "CourseNotFoundError",
    "Document",
    "QuestionIndexError",
    "ask",
    "build_index",
    "check_k",
    "check_language",
    "check_question",
    "check_root",
    "course_root",
    "detect_language",
    "normalize",
    "tokenize",
]

#: Where an answer comes from, as :attr:`Answer.source` names it.
SOURCES = ("question index", "FAQ", "clinic", "atlas", "section")

#: The notebooks whose sections are the FAQ and the mistakes clinic (by file name prefix).
_SOURCE_OF_NOTEBOOK = {"10_": "FAQ", "11_": "clinic"}

#: The atlas entries that no notebook teaches link to the atlas table itself.
_ATLAS_TABLE = "16_hook_atlas.ipynb#atlas-table"

LINK_STYLE = "color:#1565c0;text-decoration:underline"


class CourseNotFoundError(FileNotFoundError):
    """The course's notebooks are not next to this ``hookviz`` package (it was installed without the repository)."""


# ---------------------------------------------------------------------------------------------- words
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[a-z0-9_]+(?:\.[a-z0-9_]+)*")
_HAS_CJK = re.compile(rf"[{_CJK}]")

#: English words that say nothing about the topic of a question.
_STOP_WORDS = frozenset(
    """a about after again all am an and any are as at be been being but by can could did do does doing done
    for from had has have having he her here his how i if in into is it its itself just me my myself no nor
    of on once or other our out over own same she should so some such than that the their them then there
    these they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours e g eg ie etc get got want wanted need please help anyone
    someone way ways thing things""".split()
)
#: Chinese particles: a pair of characters with one of them is never a word of its own (钩子的, 触发了).
_PARTICLES = frozenset("的了吗呢吧啊呀嘛哦")
#: How much a single Chinese character of a question counts against a pair of them (see :func:`_query_weight`).
_CHAR_WEIGHT = 0.3
#: Chinese characters that only carry grammar (particles, pronouns); pairs with them still count.
_STOP_CHARS = frozenset("的了吗呢吧啊么是我你他她它在和与及就都也还又把被这那哪个一有很啥嘛呀哦喔呗咧嗯哈诶欸咱俺您们")

#: Traditional characters and the simplified ones the Chinese edition writes: a question typed in traditional characters
#: (Taiwan, Hong Kong: 為什麼我的鉤子被調用了兩次) meets the course's words once :func:`_simplified` has put it in
#: simplified ones. The common characters only (those of questions about code, and the everyday ones around them), and
#: only characters that simplified text never uses (著, 乾, 瞭 are left: simplified text has them too), so that the
#: course's own text is never changed; Taiwan's words for the course's (記憶體 for 内存, 模組 for 模块) are in
#: :data:`_SYNONYMS_ZH`.
_TRADITIONAL_PAIRS = """
並并 亂乱 佈布 佔占 來来 係系 個个 們们 備备 傳传 傷伤 億亿 儘尽 優优 儲储 內内 兩两 冊册 凍冻 別别 刪删 則则 動动
務务 區区 卻却 厲厉 參参 問问 啟启 喚唤 單单 嗎吗 嘆叹 嚮向 嚴严 囉啰 圍围 園园 圓圆 圖图 團团 執执 報报 塊块 壓压
壞坏 夠够 夥伙 奧奥 奪夺 妳你 孫孙 學学 實实 寧宁 寫写 寬宽 寶宝 將将 專专 尋寻 對对 導导 屆届 層层 屬属 峯峰 島岛
師师 幫帮 幹干 幾几 庫库 廠厂 廢废 廣广 廳厅 張张 彈弹 彎弯 彙汇 後后 徑径 從从 復复 徵征 徹彻 惡恶 惱恼 愛爱 態态
慣惯 慮虑 憂忧 憶忆 應应 懶懒 懷怀 戰战 戲戏 戶户 拋抛 捨舍 捲卷 掃扫 掛挂 揚扬 換换 揮挥 損损 搖摇 撐撑 撥拨 擁拥
擇择 擊击 擋挡 擔担 據据 擬拟 擴扩 擷撷 擾扰 攔拦 攜携 攝摄 攤摊 敗败 敘叙 敵敌 數数 斂敛 斷断 於于 時时 晝昼 暈晕
暫暂 曆历 書书 會会 朧胧 東东 條条 棄弃 棧栈 業业 極极 榮荣 構构 槍枪 槓杠 樁桩 樂乐 樓楼 標标 樣样 樹树 橋桥 機机
檔档 檢检 櫃柜 欄栏 權权 歐欧 歡欢 歲岁 歷历 歸归 殘残 殺杀 殼壳 毀毁 氣气 氫氢 決决 沒没 淺浅 減减 測测 準准 溝沟
滅灭 滯滞 滾滚 滿满 漢汉 漲涨 漸渐 潔洁 濃浓 濕湿 濾滤 瀏浏 灑洒 灣湾 災灾 為为 無无 煩烦 熱热 燈灯 爐炉 爭争 爲为
爾尔 牀床 牆墙 牠它 犧牺 狀状 猶犹 獎奖 獨独 獲获 獻献 現现 瑪玛 環环 產产 畢毕 畫画 異异 當当 疊叠 瘋疯 療疗 發发
盜盗 盡尽 監监 盤盘 眾众 睏困 確确 碼码 礎础 礙碍 礦矿 祕秘 禍祸 禮礼 稅税 種种 稱称 穀谷 積积 穩稳 窩窝 窮穷 竊窃
競竞 筆笔 節节 範范 築筑 篩筛 簡简 簽签 籃篮 籌筹 籤签 糧粮 糾纠 紀纪 約约 紅红 紋纹 納纳 紐纽 純纯 紙纸 級级 紛纷
細细 紹绍 終终 組组 結结 絕绝 絡络 給给 統统 絲丝 綁绑 經经 綜综 綠绿 綫线 維维 綱纲 網网 緊紧 緒绪 線线 締缔 緣缘
編编 緩缓 緯纬 練练 縣县 縮缩 總总 織织 繞绕 繩绳 繪绘 繼继 續续 纏缠 罰罚 罷罢 羅罗 義义 習习 聖圣 聞闻 聯联 聰聪
聲声 職职 聽听 肅肃 脈脉 脫脱 腦脑 腫肿 腳脚 膚肤 膠胶 膽胆 臉脸 臟脏 臨临 與与 興兴 舉举 舊旧 艙舱 艦舰 艱艰 莊庄
華华 萬万 葉叶 蓋盖 蔣蒋 薦荐 藍蓝 藝艺 藥药 蘋苹 蘭兰 處处 虛虚 號号 蝦虾 蟲虫 蠟蜡 衆众 術术 衛卫 衝冲 裏里 補补
裝装 裡里 製制 複复 襪袜 襯衬 見见 規规 視视 親亲 覺觉 覽览 觀观 觸触 訂订 計计 訊讯 討讨 訓训 託托 記记 訣诀 訪访
設设 許许 訴诉 診诊 註注 詐诈 評评 詞词 詢询 試试 該该 詳详 誇夸 誌志 認认 誕诞 誘诱 語语 誠诚 誤误 說说 誰谁 課课
調调 談谈 請请 諒谅 論论 諮咨 諸诸 諾诺 謀谋 謂谓 謊谎 謎谜 講讲 謝谢 謹谨 證证 識识 譜谱 譯译 議议 護护 讀读 變变
讓让 讚赞 豈岂 豎竖 豐丰 豬猪 貓猫 貝贝 貞贞 負负 財财 貢贡 貨货 販贩 貪贪 貫贯 責责 貯贮 貴贵 貸贷 費费 貼贴 賀贺
資资 賊贼 賓宾 賞赏 賠赔 賣卖 質质 賬账 賴赖 賺赚 購购 賽赛 贈赠 贊赞 贏赢 趕赶 趙赵 趨趋 跡迹 踐践 蹤踪 躍跃 車车
軌轨 軍军 軟软 軸轴 較较 載载 輔辅 輕轻 輛辆 輩辈 輪轮 輯辑 輸输 輻辐 轄辖 轉转 轟轰 辦办 辭辞 辯辩 農农 迴回 這这
連连 週周 進进 遊游 運运 過过 達达 違违 遙遥 遞递 遠远 適适 遲迟 遷迁 選选 遺遗 還还 邊边 邏逻 郵邮 鄉乡 鄭郑 鄰邻
醜丑 醞酝 醫医 釀酿 釋释 針针 鈎钩 鈕钮 鈴铃 鉛铅 鉤钩 銀银 銅铜 銷销 鋒锋 鋪铺 錄录 錢钱 錦锦 錯错 錶表 鍊链 鍋锅
鍵键 鎖锁 鎮镇 鏈链 鏟铲 鏡镜 鐘钟 鐵铁 鑑鉴 鑒鉴 鑰钥 長长 門门 閃闪 閉闭 開开 閑闲 閒闲 間间 閘闸 閣阁 閥阀 閱阅
闆板 闊阔 闖闯 關关 闡阐 陣阵 陰阴 陸陆 陽阳 隊队 階阶 際际 隨随 險险 隱隐 隸隶 隻只 雖虽 雙双 雜杂 雞鸡 離离 難难
雲云 電电 霧雾 靈灵 靜静 韌韧 韓韩 響响 頁页 頂顶 項项 順顺 須须 預预 頑顽 頒颁 頓顿 頗颇 領领 頭头 頸颈 頻频 顆颗
題题 額额 顏颜 願愿 顛颠 類类 顧顾 顫颤 顯显 風风 颱台 飄飘 飛飞 飯饭 飼饲 飽饱 飾饰 餅饼 養养 餓饿 餘余 館馆 餵喂
饋馈 馬马 駐驻 駕驾 騎骑 騙骗 騰腾 驅驱 驗验 驚惊 骯肮 髒脏 體体 髮发 鬆松 鬍胡 鬥斗 鬧闹 鬱郁 魚鱼 魯鲁 鮮鲜 鳥鸟
鳳凤 鳴鸣 鹽盐 麗丽 麥麦 麵面 麼么 黃黄 點点 黨党 黴霉 齊齐 齒齿 齡龄 龍龙 龐庞 龜龟
"""
_TRADITIONAL = {ord(pair[0]): pair[1] for pair in _TRADITIONAL_PAIRS.split()}


#: Words a learner uses for what the course says another way (after :func:`_stem`): each maps to the course's word.
_SYNONYMS = {
    # a hook runs
    "run": "fir", "ran": "fir", "call": "fir", "trigger": "fir", "execut": "fir", "invok": "fir",
    # taking a hook off
    "delet": "remov", "unregister": "remov", "eras": "remov", "clear": "remov",
    # changing a value
    "modify": "chang", "alter": "chang", "edit": "chang", "rewrit": "chang", "tweak": "chang",
    # errors
    "throw": "rais", "thrown": "rais", "crash": "fail", "break": "fail", "broken": "fail",
    # the rest
    "pickl": "sav", "serializ": "sav", "serialis": "sav", "gradient": "grad", "argument": "arg",
    "layer": "modul", "param": "parameter", "attn": "attention",
}
#: Phrases a learner writes for one word of the course's.
_PHRASES = {"get rid of": "remove", "take off": "remove", "two times": "twice", "2 times": "twice",
            "deep copy": "deepcopy", "deep-copy": "deepcopy", "prints nothing": "not fire", "print nothing": "not fire",
            "nothing gets printed": "not fire", "nothing is printed": "not fire", "nothing happens": "not fire",
            "never called": "not fire", "never runs": "not fire", "never fires": "not fire",
            "stop firing": "not fire", "stops firing": "not fire", "stopped firing": "not fire",
            "micro batch": "microbatch", "micro-batch": "microbatch", "grad-cam": "gradcam", "grad cam": "gradcam"}
#: A phrase (and "n't") counts where no letter, digit or underscore of the lower-cased text touches it: written out
#: rather than ``\b``, which Python reads in Unicode (钩子 are letters to it) and JavaScript in ASCII.
_PHRASE = re.compile(r"(?<![a-z0-9_])(" + "|".join(re.escape(p) for p in _PHRASES) + r")(?![a-z0-9_])")
_NEGATION = re.compile(r"n['’]t(?![a-z0-9_])")
#: Chinese words of the course (its glossary, i18n/zh/glossary.md) and the English word each stands for: a Chinese
#: question then also meets the identifiers that Chinese sections keep in English (``remove()``, ``register_*``),
#: and the Chinese words a learner uses for the course's ones (删掉 for 移除).
_TERMS_ZH = {
    "钩子": "hook", "前向": "forward", "反向": "backward", "梯度": "gradient", "张量": "tensor", "模块": "module",
    "层": "layer", "句柄": "handle", "注册": "register", "输出": "output", "输入": "input", "参数": "argument",
    "移除": "remove", "删掉": "remove", "删除": "remove", "去掉": "remove", "取下": "remove", "注销": "remove",
    "卸载": "offload", "触发": "fire", "运行": "run", "调用": "call", "执行": "run", "修改": "change",
    "改变": "change", "更改": "change", "替换": "replace", "复制": "copy", "拷贝": "copy", "副本": "copy",
    "保存": "save", "错误": "error", "报错": "error", "出错": "error", "异常": "exception", "两次": "twice",
    "冻结": "frozen", "注意力": "attention", "优化器": "optimizer", "叶子": "leaf", "激活": "activation",
    "编译": "compile", "全局": "global", "返回": "return", "元组": "tuple", "原地": "inplace", "权重": "weight",
    "深拷贝": "deepcopy", "深复制": "deepcopy", "批次": "batch", "微批次": "microbatch", "累加": "accumulate",
    "单元格": "cell", "检查点": "checkpoint", "注意力头": "head", "消融": "ablation", "修补": "patching",
    "引导向量": "steering", "嵌入": "embedding", "词元": "token", "解码器": "decoder", "编码器": "encoder",
    "损失": "loss", "特征": "feature", "量化": "quantization", "剪枝": "prune", "线程": "thread", "蒸馏": "distill",
    "分片": "shard", "混合精度": "amp", "可视化": "visualize", "重新编译": "recompile", "节点": "node",
    "计算图": "graph", "卷积": "conv", "残差流": "residual", "显著性": "saliency", "探针": "probe", "范数": "norm",
    "裁剪": "clip", "掩码": "mask", "填充": "padding", "推理": "inference", "评估": "eval", "缓存": "cache",
    "设备": "device", "分布式": "distributed", "预钩子": "pre", "完整": "full", "函数": "function", "内存": "memory",
    "泄漏": "leak", "加载": "load", "训练": "train", "形状": "shape", "顺序": "order", "拖慢": "slow",
    "开销": "overhead", "警告": "warning", "名字": "name", "偏置": "bias",
}
_TERM_ZH = re.compile("|".join(sorted(_TERMS_ZH, key=len, reverse=True)))
#: Chinese words a learner types for the course's own (colloquial forms, question words, near-synonyms), each mapped
#: to the word the Chinese edition uses, in the text of the course and of the question alike, before it is cut into
#: characters and pairs: "怎么删掉钩子" is then "如何移除钩子", the words of FAQ 3's title. A canonical word maps to
#: itself, so that a longer word holding a shorter key is never cut (保存 stays whole though 存 maps to it).
_SYNONYMS_ZH = {
    # question words say how a question is asked, not what about: they go (a short question of the index would
    # otherwise match every "怎么 ...?" on them)
    "如何": " ", "怎么": " ", "怎样": " ", "怎么样": " ", "咋": " ", "咋样": " ", "怎么才能": " ",
    "怎样才能": " ", "如何才能": " ", "有没有办法": " ", "有什么办法": " ", "什么办法": " ",
    "怎么办": " ", "咋办": " ", "怎么弄": " ", "怎么搞": " ", "怎么做": " ", "该怎么": " ",
    "为什么": " ", "为啥": " ", "为何": " ", "怎么回事": " ", "咋回事": " ", "什么原因": " ", "是什么": " ",
    "什么": " ", "能不能": " ", "可不可以": " ", "是不是": " ", "有没有": " ", "怎么写": " ", "咋写": " ",
    "如何写": " ", "该怎么写": " ", "要怎么写": " ", "咋整": " ", "怎么整": " ", "怎么破": " ", "咋破": " ",
    "咋弄": " ", "咋搞": " ", "咋做": " ", "干嘛": " ", "干啥": " ", "啥情况": " ", "什么情况": " ", "能否": " ",
    "可否": " ", "甚么": " ", "是啥": " ", "行不行": " ", "行吗": " ", "可行吗": " ", "对不对": " ", "对吗": " ",
    "突然": " ", "居然": " ", "竟然": " ", "好像": " ", "似乎": " ", "明明": " ",
    # what a thing is for
    "作用": "作用", "有啥用": "作用", "有什么用": "作用", "干嘛用": "作用", "干啥用": "作用", "是干嘛的": "作用",
    "干嘛的": "作用", "是干什么的": "作用", "干什么的": "作用", "干什么用": "作用", "做什么用": "作用",
    "用来干嘛": "作用", "用来干啥": "作用", "用来做什么": "作用", "原理": "机制", "是干嘛用的": "作用",
    "是干啥用的": "作用", "是用来干嘛的": "作用", "是用来做什么的": "作用", "是做什么用的": "作用",
    # should I
    "要不要": "应该", "需不需要": "应该", "需要不需要": "应该", "该不该": "应该", "应不应该": "应该", "用不用": "应该",
    # the words around a question in a forum post
    "请问": " ", "请教": " ", "求助": " ", "求教": " ", "求解": " ", "大佬们": " ", "大佬": " ", "各位": " ",
    "小白": " ", "新手": " ", "有人知道": " ", "谁知道": " ", "想问一下": " ", "想问下": " ", "想问": " ",
    "问一下": " ", "问下": " ", "到底": " ", "究竟": " ", "一下": " ", "在线等": " ", "谢谢": " ", "多谢": " ",
    "感谢": " ",
    # taking a hook off
    "移除": "移除", "删除": "移除", "删掉": "移除", "删": "移除", "去掉": "移除", "去除": "移除", "拿掉": "移除",
    "取下": "移除", "取消注册": "移除", "注销": "移除", "卸载": "卸载", "卸掉": "移除", "清除": "移除", "清掉": "移除",
    "摘掉": "移除", "撤销": "移除", "解除": "移除", "去除掉": "移除",
    # putting one on
    "注册": "注册", "挂上": "注册", "挂到": "注册", "挂在": "注册", "挂个": "注册", "挂一个": "注册", "装上": "注册",
    "加上": "注册", "加个": "注册", "加一个": "注册", "添加": "注册", "安装": "注册",
    # a hook that does not run
    "不触发": "不触发", "没触发": "不触发", "没有触发": "不触发", "没被调用": "不触发", "没有被调用": "不触发",
    "不被调用": "不触发", "没调用": "不触发", "没有调用": "不触发", "没执行": "不触发", "没有执行": "不触发",
    "不执行": "不触发", "没运行": "不触发", "没有运行": "不触发", "不运行": "不触发", "没反应": "不触发",
    "没有反应": "不触发", "不生效": "不触发", "没生效": "不触发", "没有生效": "不触发", "不起作用": "不触发",
    "不工作": "不触发", "失效": "不触发", "没用": "不触发", "没有用": "不触发", "不管用": "不触发",
    "一点反应都没有": "不触发", "没什么反应": "不触发", "毫无反应": "不触发", "没有任何反应": "不触发",
    "没动静": "不触发", "没有动静": "不触发", "没打印": "不触发", "没有打印": "不触发", "不打印": "不触发",
    "什么都没打印": "不触发", "啥都没打印": "不触发", "不好使": "不触发", "不灵": "不触发",
    # running one
    "触发": "触发", "跑": "运行", "跑了": "运行", "执行": "运行", "运行": "运行",
    # twice
    "两次": "两次", "两遍": "两次", "两回": "两次", "二次": "两次", "2次": "两次", "多次": "两次", "重复": "两次",
    # memory
    "内存": "内存", "显存": "内存", "显卡内存": "内存", "爆显存": "内存", "爆内存": "内存", "显存爆了": "内存",
    "内存爆了": "内存", "炸显存": "内存", "撑爆": "内存", "内存溢出": "内存", "内存不够": "内存", "涨": "增长",
    "上涨": "增长", "暴涨": "增长", "飙升": "增长",
    "越来越大": "增长", "一直增加": "增长", "泄露": "泄漏",
    # getting a value
    "获取": "获取", "拿到": "获取", "拿": "获取", "得到": "获取", "取得": "获取", "获得": "获取", "取出": "获取",
    "提取": "获取", "抽取": "获取", "抓取": "获取", "抓到": "获取", "取到": "获取", "抓出来": "获取", "取出来": "获取",
    "拿出来": "获取", "弄出来": "获取",
    # changing a value
    "修改": "修改", "改": "修改", "改掉": "修改", "更改": "修改", "改变": "修改", "篡改": "修改", "换掉": "替换",
    # the rest
    "网络": "模型", "特征图": "特征图", "激活图": "特征图", "feature map": "特征图", "中间层": "中间层",
    "隐藏层": "中间层", "中间的层": "中间层", "反传": "反向传播", "回传": "反向传播", "正向": "前向", "拷贝": "复制",
    "存下来": "保存", "存起来": "保存", "存下": "保存", "存储": "保存", "保存": "保存", "冻住": "冻结",
    "变慢": "拖慢", "很慢": "拖慢", "慢不慢": "拖慢", "影响速度": "拖慢", "报错": "报错", "出错": "报错",
    "抛异常": "抛出异常", "抛出异常": "抛出异常", "抛了异常": "抛出异常", "抛错": "抛出异常", "抛出错误": "抛出异常",
    "扔异常": "抛出异常", "崩了": "报错", "崩溃": "报错", "报了个错": "报错", "报了错": "报错", "勾子": "钩子",
    "钩子函数": "钩子", "回调函数": "钩子",
    "中间结果": "中间层输出", "中间输出": "中间层输出", "显卡": "gpu", "多卡": "多 gpu", "多显卡": "多 gpu",
    "单机多卡": "多 gpu", "清零": "置零", "归零": "置零", "不更新": "冻结", "不参与训练": "冻结", "固定住": "冻结",
    "序列化": "保存", "存模型": "保存模型", "注意力矩阵": "注意力权重", "注意力图": "注意力权重",
    "注意力分数": "注意力权重", "卡死": "卡住", "死锁": "卡住", "就地": "原地", "累积": "累加", "梯度截断": "梯度裁剪",
    "没效果": "不触发", "没有效果": "不触发", "无效": "不触发", "没作用": "不触发", "没有作用": "不触发",
    "存": "保存", "存在": "存在", "存活": "存活", "缓存": "缓存", "生存": "生存",
    "何时": "何时", "什么时候": "何时", "啥时候": "何时", "多久": "何时",
    "的时候": "时", "时候": "时", "谁先": "顺序", "先后": "顺序", "哪个先": "顺序", "先后顺序": "顺序",
    "调用顺序": "顺序",
    "好几个": "多个", "好多个": "多个", "很多个": "多个", "若干个": "多个", "若干": "多个",
    "老": "旧", "老是": "总是", "老版本": "旧版", "老版": "旧版", "老的": "旧版",
    "全是0": "全零", "全为0": "全零", "都是0": "全零", "都为0": "全零", "全0": "全零", "全是零": "全零",
    "都是零": "全零", "全为零": "全零", "都为零": "全零", "全部为0": "全零", "全部是0": "全零", "为0": "为零",
    "是0": "为零", "性能": "开销", "影响性能": "拖慢", "降低性能": "拖慢", "拖累": "拖慢", "卡顿": "拖慢",
    "变卡": "拖慢", "不匹配": "对不上", "匹配不上": "对不上", "改名": "重命名", "改名字": "重命名",
    "里面": "里", "里边": "里", "里头": "里", "以后": "之后", "以前": "之前", "完了": "之后", "完以后": "之后",
    "完之后": "之后", "批大小": "batch 大小", "批量大小": "batch 大小", "看看": "查看", "瞅瞅": "查看",
    "瞧瞧": "查看", "格子": "单元格", "重跑": "重新运行", "再跑一遍": "重新运行", "再跑一次": "重新运行",
    "又跑了一遍": "重新运行", "重复运行": "重新运行", "重复执行": "重新运行", "再运行一次": "重新运行",
    "再执行一次": "重新运行", "越挂越多": "叠加", "越来越多": "叠加", "区别": "区别", "差别": "区别", "差异": "区别",
    "不同之处": "区别",
    # what a learner says around the course's words
    "是个啥东西": " ", "啥东西": " ", "什么东西": " ", "是个啥": " ", "求科普": " ", "科普": " ",
    "定位": "找出", "排查": "找出", "查出": "找出", "揪出": "找出", "找到": "找出", "梯度爆炸": "梯度 inf",
    "哪几种": "每一种", "几种": "每一种", "种类": "每一种", "死掉": "死亡", "神经元": "单元",
    "with语句": "上下文管理器", "with 语句": "上下文管理器", "搬到": "卸载到", "挪到": "卸载到", "转移到": "卸载到",
    "放到": "卸载到",
    "已经": "已", "挂了哪些": "挂着什么", "挂了什么": "挂着什么", "挂着哪些": "挂着什么", "注册了哪些": "挂着什么",
    "注册了什么": "挂着什么",
    "有什么不同": "区别", "有啥不同": "区别", "哪里不同": "区别", "先执行": "顺序", "先运行": "顺序", "先触发": "顺序",
    "各头": "注意力头", "逐头": "注意力头", "每个头": "注意力头", "每一个头": "注意力头",
    # Taiwan's words (after :data:`_TRADITIONAL`)
    "记忆体": "内存", "显示记忆体": "内存", "显示卡": "gpu", "模组": "模块", "函式": "函数", "传回": "返回",
    "物件": "对象", "程式": "程序", "呼叫": "调用", "叫用": "调用", "执行绪": "线程", "资料": "数据", "预设": "默认",
    "档案": "文件", "储存格": "单元格", "储存": "保存", "变数": "变量", "网路": "模型", "最佳化器": "优化器",
    "最佳化": "优化", "演算法": "算法", "推论": "推理", "回圈": "循环", "介面": "接口", "除错": "调试",
    "侦错": "调试", "例外": "异常", "丢出例外": "抛出异常", "抛出例外": "抛出异常", "快取": "缓存", "暂存": "缓存",
}
_SYNONYM_ZH = re.compile("|".join(sorted(map(re.escape, _SYNONYMS_ZH), key=len, reverse=True)))
_DOUBLED = re.compile(r"([b-df-hj-np-tv-z])\1$")


def _stem(word: str) -> str:
    """A light English stemmer, then :data:`_SYNONYMS`: plural, -ed and -ing endings and a final e go
    (``fires``, ``firing`` -> ``fir``), a doubled last consonant is made single (``running`` -> ``run``)."""
    if len(word) > 3 and word.isalpha():
        for suffix, replacement in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                if suffix == "s" and word.endswith(("ss", "us", "is")):
                    break
                word = word[: -len(suffix)] + replacement
                if suffix in ("ing", "ed") and _DOUBLED.search(word) and not word.endswith(("ll", "ss", "zz")):
                    word = word[:-1]
                break
        if word.endswith("e") and len(word) > 3:
            word = word[:-1]
    return _SYNONYMS.get(word, word)


#: How many times :func:`_course_words_zh` replaces the words of :data:`_SYNONYMS_ZH`.
_SYNONYM_ZH_PASSES = 2


def _course_words_zh(text: str) -> str:
    """``text`` with the Chinese words of :data:`_SYNONYMS_ZH` replaced by the course's, twice: a word of Taiwan's
    (呼叫 for 调用) then also completes a phrase (没有被呼叫 -> 没有被调用 -> 不触发)."""
    for _ in range(_SYNONYM_ZH_PASSES):
        text = _SYNONYM_ZH.sub(lambda m: _SYNONYMS_ZH[m.group()], text)
    return text


def tokenize(text: str) -> list[str]:
    """The words BM25 compares: English words (lower-cased, lightly stemmed, identifiers whole and in parts),
    and for Chinese the English words of its glossary terms, then every character and every pair of neighbouring
    characters.

    >>> tokenize("Hooks fire twice in register_forward_hook")
    ['hook', 'fir', 'twic', 'register_forward_hook', 'register', 'forward', 'hook']
    >>> tokenize("钩子触发两次")
    ['hook', 'fir', 'twic', '钩', '钩子', '子', '子触', '触', '触发', '发', '发两', '两', '两次', '次']
    """
    words: list[str] = []
    text = _course_words_zh(_simplified(normalize(_text(text, "tokenize"))))
    text = _PHRASE.sub(lambda m: _PHRASES[m.group()], _NEGATION.sub(" not", text.lower()))
    negated = False  # the previous word was "not", "never" or "no": the next one also counts as "not_<word>"
    for match in _TOKEN.finditer(text):
        token = match.group()
        if _HAS_CJK.match(token):
            words.extend(_stem(_TERMS_ZH[term]) for term in _TERM_ZH.findall(token))
            for i, char in enumerate(token):
                if char not in _STOP_CHARS:
                    words.append(char)
                if i + 1 < len(token) and not (_PARTICLES & {char, token[i + 1]}):
                    words.append(token[i : i + 2])
            continue
        parts = [p for p in re.split(r"[_.]+", token) if p]
        stems = [_stem(p) for p in parts]
        if len(parts) > 1:  # an identifier whole, parts stemmed (layer.forward meets module.forward); then the parts
            words.append("_".join(stems))
        kept = [stem for part, stem in zip(parts, stems, strict=True)
                if part not in _STOP_WORDS and len(part) > 1 and not part.isdigit()]
        words.extend(kept)
        if negated and kept:  # "does not fire", "never called": the pair says more than its two words
            words.append(f"not_{kept[0]}")
        negated = token in ("not", "never", "no") or (negated and not kept)
    return words


def _text(text: Any, who: str, name: str = "text") -> str:
    """``text`` when it is a string, else a clear ``TypeError`` naming ``who`` and the argument ``name``."""
    if not isinstance(text, str):
        raise TypeError(tr(f"{who}: {name} must be a string, not {type(text).__name__}"))
    return text


def normalize(text: str) -> str:
    """``text`` in Unicode NFKC form: the full-width letters, digits and signs a Chinese input method types
    (``ｈｏｏｋ``, ``（）``, ``，``) become their plain forms. Nothing else changes (:func:`tokenize` and :func:`ask`
    then also read traditional characters as the simplified ones of the course, :data:`_TRADITIONAL`).

    >>> normalize("ｈｏｏｋ 為什麼被調用了兩次？")
    'hook 為什麼被調用了兩次?'
    """
    return unicodedata.normalize("NFKC", _text(text, "normalize"))


def _simplified(text: str) -> str:
    """``text`` (after :func:`normalize`) with the traditional characters of :data:`_TRADITIONAL` simplified."""
    return text.translate(_TRADITIONAL)


def detect_language(question: str) -> str:
    """``"zh"`` when ``question`` has a Chinese character, else ``"en"``."""
    return "zh" if _HAS_CJK.search(_text(question, "detect_language", "question")) else "en"


# ---------------------------------------------------------------------------------------------- documents
@dataclass(frozen=True)
class Document:
    """One searchable piece of the course: a question of the index, a notebook section or an atlas entry.

    ``link`` is the notebook path from the repository root with the anchor (``notebooks/10_faq.ipynb#faq-copy``;
    no anchor for a notebook's introduction); ``text`` is what is searched; ``title`` and ``summary`` are shown.
    """

    source: str
    language: str
    title: str
    summary: str
    link: str
    text: str


_ANCHOR = re.compile(r"""<a\s+(?:id|name)=["']([^"']+)["']\s*>\s*</a>""")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"<[^>]+>")
_FENCE = re.compile(r"```.*?```", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"“(\[])|(?<=[。！？])")
_SUMMARY_LENGTH = 180


def _plain(markdown: str) -> str:
    """Markdown as plain text: no tags, link targets, emphasis or code marks (a ``*`` inside code stays)."""
    text = _TAG.sub("", _LINK.sub(r"\1", markdown))
    pieces = re.split(r"(`[^`\n]+`)", text)
    return "".join(p[1:-1] if p.startswith("`") else re.sub(r"\*+", "", p) for p in pieces).strip()


def _shorten(text: str, length: int = _SUMMARY_LENGTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= length else text[: length - 1].rstrip() + "…"


def _first_sentence(markdown: str) -> str:
    """The first sentence of the first paragraph of prose (not a heading, table, list marker or code)."""
    for paragraph in re.split(r"\n\s*\n", _FENCE.sub("", markdown)):
        lines = [line for line in paragraph.strip().splitlines() if not _HEADING.match(line)]
        text = " ".join(line.strip() for line in lines)
        text = re.sub(r"^(>\s*)?(([-*+]|\d+\.)\s+)?", "", text)
        if not text or text.startswith("|") or not _plain(text):
            continue
        plain = _plain(text)
        return _shorten(_SENTENCE_END.split(plain, maxsplit=1)[0])
    return ""


def _source_text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


@dataclass
class _Section:
    anchor: str
    heading: str  # the section's first heading, else the heading it stands under
    own_heading: bool
    parts: list[str]


def notebook_documents(
    path: Path, root: Path, language: str, asked: dict[str, list[str]] | None = None
) -> list[Document]:
    """The sections of one notebook: its introduction (the text before the first anchor, linked without an
    anchor) and every ``<a id>`` anchor's markdown up to the next anchor, titled by its first heading (or, for
    an anchor without one, by the heading it stands under). ``asked`` maps a link to the questions of the index
    that it answers: they join the section's text, so that the words learners use find it too."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    link = path.relative_to(root).as_posix()
    source = next((s for prefix, s in _SOURCE_OF_NOTEBOOK.items() if path.name.startswith(prefix)), "section")
    sections = [_Section("", "", False, [])]
    heading = ""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "markdown":  # code says little in a learner's words; its identifiers misled
            continue
        pieces = _ANCHOR.split(_source_text(cell))  # [before, anchor, after, anchor, after, ...]
        for i, piece in enumerate(pieces):
            if i % 2 == 1:
                sections.append(_Section(piece, heading, False, []))
                continue
            found = [_plain(text) for _, text in _HEADING.findall(piece)]
            if found and not sections[-1].own_heading:
                sections[-1].heading, sections[-1].own_heading = found[0], True
            if found:
                heading = found[-1]
            sections[-1].parts.append(piece)
    title = sections[0].heading or path.stem
    documents = []
    for section in sections:
        body = "\n".join(section.parts)
        if not body.strip() and not section.anchor:
            continue
        name = section.heading or title
        target = f"{link}#{section.anchor}" if section.anchor else link
        summary = _first_sentence(body) or name
        text = "\n".join([name, _plain(body), *(asked or {}).get(target, [])])
        documents.append(Document(source, language, name, summary, target, text))
        if section.own_heading:  # the heading alone: a question that is a section's title finds it
            documents.append(Document(source, language, name, summary, target, name))
    return documents


class QuestionIndexError(ValueError):
    """``notebooks/questions.yml`` cannot be read as the question index (bad YAML, or not a list of entries)."""


def _question_entries(path: Path) -> list[dict[str, Any]]:
    """The entries of the question index at ``path``; a :class:`QuestionIndexError` naming the file otherwise."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - PyYAML comes with the course's pins
        raise ImportError("hookviz.ask reads notebooks/questions.yml with PyYAML: pip install pyyaml") from exc
    try:
        entries = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = where.line + 1 if where is not None else "?"
        raise QuestionIndexError(tr(
            f"{path} is not valid YAML at line {line} ({getattr(exc, 'problem', None) or type(exc).__name__}): "
            "fix the file (python -c \"import yaml; yaml.safe_load(open('notebooks/questions.yml'))\" shows where), "
            "or give root= another course repository"
        )) from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise QuestionIndexError(tr(
            f"{path} must be a YAML list of entries (- id: ..., question: ..., proven_by: ...), not "
            f"{type(entries).__name__ if not isinstance(entries, list) else 'a list holding other things'}; "
            "fix the file, or give root= another course repository"
        ))
    return entries


def question_documents(path: Path, language: str = "en", sections: dict[str, str] | None = None) -> list[Document]:
    """The question index's entries that a cell proves (``proven_by``), each linked to that cell's section.

    In Chinese (``language="zh"``) the entry's ``question_zh`` is the title, linked to the Chinese edition's section
    (skipped where that notebook has no such section: ``sections`` maps each Chinese link to its summary, which the
    entry shows; the answer is written in English only). Its English question is searched too, for the identifiers
    a Chinese question keeps in English.
    """
    documents = []
    for entry in _question_entries(path):
        target = entry.get("proven_by")
        if not target:
            continue
        question, answer = str(entry.get("question", "")), str(entry.get("answer", ""))
        if language != "en":
            title = str(entry.get(f"question_{language}") or "")
            link = str(target).replace("notebooks/", f"notebooks/{language}/", 1)
            if title and sections is not None and link in sections:
                documents.append(Document("question index", language, title, sections[link], link,
                                          f"{title}\n{question}"))
            continue
        topic = str(entry.get("topic", "")).replace("-", " ")
        summary = _shorten(_SENTENCE_END.split(answer, maxsplit=1)[0]) if answer else question
        # the question and its answer's first sentence: the rest of a long answer (what was not run, the release
        # it was checked on) would make the entry match questions about other things
        documents.append(Document("question index", "en", question, summary, target,
                                  f"{question}\n{summary}\n{topic}"))
    return documents


def _registration(kind: str) -> str:
    """How an atlas kind is registered, short: ``Module.register_forward_hook``, ``register_module_forward_hook``."""
    from hookviz.catalogue import hook_kind

    parts = hook_kind(kind).register.split(".")
    return ".".join(parts[-2:]) if len(parts) > 1 and parts[-2][:1].isupper() else parts[-1]


def atlas_documents(language: str) -> list[Document]:
    """The hook atlas (as notebook 16's table merges the stored releases). An entry that a section teaches is one
    document (the kind, the situation's question, what was measured), linked to that section; the entries no
    section teaches are one document per situation, listing its kinds, linked to the atlas table: hundreds of
    near-identical entries would otherwise make the situations' words ("twice", "removed") look common."""
    from hookviz import atlas

    stored = {version: atlas.load_snapshot(version) for version in atlas.stored_versions()}
    table = atlas.AtlasTable(atlas.merge_versions(stored), teaches=atlas.teaching_links())
    folder = "notebooks" if language == "en" else f"notebooks/{language}"
    fields = ("fires", "calls", "runs in", "returns", "error", "left")
    documents = []
    untaught: dict[str, list[atlas.Entry]] = {}
    for entry, versions in table.rows:
        if not table.link(entry):
            untaught.setdefault(entry.situation, []).append(entry)
            continue
        cells = dict(zip(atlas.COLUMNS, table.shown_cells(entry, versions, language), strict=True))
        question = translate(entry.question, language)
        method = _registration(entry.kind)
        summary = "; ".join(f"{translate(f, language)}: {cells[f]}" for f in fields if cells[f] != atlas.NOT_APPLICABLE)
        summary += f"; torch {cells['measured on']}"
        category = translate(entry.category, language)
        words = f"{method} {entry.kind} hook {entry.situation} {question} {category} {entry.error}"
        documents.append(Document("atlas", language, f"{method} · {question}", summary,
                                  f"{folder}/{table.link(entry)}", words))
    for situation, entries in untaught.items():
        question = translate(entries[0].question, language)
        methods = [_registration(e.kind) for e in entries]
        summary = _shorten(", ".join(methods), 120) + f" ({len(methods)})"
        category = translate(entries[0].category, language)
        errors = " ".join(sorted({e.error for e in entries if e.error}))
        words = f"{question} {situation} {category} hook {' '.join(methods)} {errors}"
        documents.append(Document("atlas", language, question, summary, f"{folder}/{_ATLAS_TABLE}", words))
    return documents


# ---------------------------------------------------------------------------------------------- the index
def course_root() -> Path:
    """The course repository holding this ``hookviz`` (its ``notebooks/questions.yml``), or a clear error."""
    package = Path(__file__).resolve().parent
    root = package.parent
    if not (root / "notebooks" / "questions.yml").is_file():
        raise CourseNotFoundError(
            f"hookviz.ask searches the course's notebooks, and there are none next to this hookviz ({package}): "
            "it was installed without the course repository. Clone the course and install it from there "
            "(pip install -e .), or pass root= the repository's folder to hookviz.search.build_index."
        )
    return root


#: How much the other kinds of evidence for a section add to its best one (see :meth:`_Index.search`); chosen on
#: reworded questions of the index (tests/test_ask.py) and on others kept apart from them.
_AGREEMENT = 0.3
#: How much a match counts, by the source of the document, against a match with a section's own text (1): the index's
#: questions are real ones in learners' words, the FAQ and the clinic answer the most common ones; without the weight a
#: section written for one narrow question outranks them on the common words ("twice", "copy", "remove").
_SOURCE_WEIGHTS = {"question index": 1.5, "FAQ": 1.5, "clinic": 1.5}


#: What the course is about: a question that names none of these (after :func:`_stem`) nor an identifier
#: (``register_forward_hook``, ``torch.compile``) is not about the course ("what time is it", "你好"), however well
#: its generic words match a sentence somewhere in it.
_TOPIC_WORDS = frozenset(_stem(w) for w in """
    hook handle remove register fire call trigger execute forward backward pre post grad gradient autograd tensor
    module layer model network parameter param weight bias buffer input output activation feature map embedding
    attention head transformer llama decoder encoder token logit loss optimizer step train training eval inference
    no_grad leaf node graph compile export script jit onnx fx trace dynamo ddp fsdp zero deepspeed distributed
    dataparallel parallel gpu cuda cpu device memory leak oom nan inf checkpoint checkpointing pickle save load
    state_dict copy deepcopy clone detach inplace relu conv convolution linear lstm rnn gru sequential modulelist
    batch epoch twice error exception warning raise return tuple none shape dtype slow speed overhead thread
    visualize visualise visualization saliency gradcam cam captum steering probe ablation patching quantization
    quantize prune norm clip clipping accumulate accumulation freeze frozen requires_grad retain_grad pytorch torch
    huggingface transformers pack unpack saved hookviz atlas notebook cell kernel widget callback intermediate
    flop flops offload
    """.split())
#: The Chinese words of what the course is about, for the same check: a word of the first list names the course's
#: subject on its own (钩子, 梯度, 张量); those of the second are everyday words too (the 内存 of a phone, the 损失
#: of an investment, the 推理 of a detective novel, the 训练 of a football team), and a question needs two of them.
#: Looked for in the question after :func:`_simplified` and after :data:`_SYNONYMS_ZH` (显存 counts, though it
#: becomes 内存).
_TOPIC_ZH_ALONE = frozenset("""
    钩子 前向 反向 梯度 张量 句柄 特征图 中间层 激活值 优化器 计算图 反向传播 前向传播 自动求导 深拷贝 元组 词元
    卷积 归一化 显存 多卡 注意力权重 注意力头 热力图 叶子张量
    """.split())
_TOPIC_ZH_PAIRED = frozenset("""
    钩 模块 层 注册 移除 触发 输出 输入 参数 权重 偏置 激活 模型 训练 推理 内存 泄漏 损失 叶子 节点 检查点 编译 导出
    全局 返回 原地 复制 报错 错误 异常 警告 两次 冻结 注意力 嵌入 解码器 编码器 量化 剪枝 裁剪 累加 累积 可视化
    分布式 显卡 批次 回调 拖慢 保存 加载 调用 特征 快照 修改
    """.split())
_TOPIC_ZH = re.compile("|".join(sorted(_TOPIC_ZH_ALONE | _TOPIC_ZH_PAIRED, key=len, reverse=True)))
_CJK_RUN = re.compile(rf"[{_CJK}]+")


def _on_topic(text: str) -> bool:
    """Whether a question (its text after :func:`normalize` and :func:`_simplified`) names something the course is
    about: an English word of :data:`_TOPIC_WORDS` or an identifier (``register_forward_hook``, ``torch.compile``)
    that it types, a Chinese word of :data:`_TOPIC_ZH_ALONE`, or two of :data:`_TOPIC_ZH_PAIRED`."""
    english = tokenize(_CJK_RUN.sub(" ", text))
    if any(w in _TOPIC_WORDS or "_" in w for w in english) or re.search(r"[a-z0-9]\.[a-z_]", text.lower()):
        return True
    found = set(_TOPIC_ZH.findall(text + "\n" + _course_words_zh(text)))
    return bool(found & _TOPIC_ZH_ALONE) or len(found) >= 2


#: How many distinct words of a question are searched at most: rank-bm25 scores every document once per word, so a
#: pasted page (20,000 characters took 15 s) is cut to its most telling words, the ones rarest in the course.
MAX_WORDS = 48
#: How many characters of a question are read at most (a traceback's first lines say what the rest says again).
MAX_CHARS = 4000
#: The share of a question's weight that the best document must hold for the question to count as matched: each
#: word weighs its IDF in the course (a word the course never uses: see :meth:`_Index._unknown_weight`). Below it, "no
#: section matches". With :func:`_on_topic` (a question must name something the course is about) it keeps
#: "zzqqxx 无关" or "今天天气怎么样" from three unrelated answers. Chosen on the reworded questions of tests/test_ask.py
#: and tests/test_ask_zh.py (the lowest of them holds about 1.7 times as much) and on nonsense questions.
MIN_COVERAGE = 0.25


def _weight(document: Document) -> float:
    """How much a match with ``document`` counts (:data:`_SOURCE_WEIGHTS`); the index's questions in Chinese count
    as a section's text: they are the course's translation, not a learner's own words."""
    if document.source == "question index" and document.language != "en":
        return 1.0
    return _SOURCE_WEIGHTS.get(document.source, 1.0)


#: BM25's parameters for the Chinese index (``rank_bm25.BM25Okapi``'s keywords; the English one keeps the defaults).
#: rank-bm25 gives a word found in more than half of the documents (钩子, its English ``hook``, and their characters
#: 钩 and 子: four words for one) the IDF ``epsilon`` times the average IDF instead of a negative one; at the default
#: 0.25 that is more than a rarer word such as 用 weighs, and sections that say 钩子 often outranked the one that holds
#: the question's own words (Grad-CAM, NaN, detach). Chosen on tests/ask_zh_dev.yml.
_BM25_ZH = {"epsilon": 0.05}


def _query_weight(word: str) -> float:
    """How much a word of a question counts: a single Chinese character :data:`_CHAR_WEIGHT`, any other word 1."""
    return _CHAR_WEIGHT if len(word) == 1 and _HAS_CJK.match(word) else 1.0


def ranking_tables() -> dict[str, Any]:
    """What :func:`ask` reads a question with and ranks by, besides an index's documents and BM25 weights: the regular
    expressions (Python's patterns, which JavaScript reads the same), word lists, weights and limits of this module,
    as plain JSON values. ``scripts/build_site.py`` writes them into the site's ``ask-index.json``, and the site's
    search (``site/_static/hookviz-ask.js``) does with them what :func:`tokenize`, :func:`ask` and the index do here:
    a change to one of them reaches the site with the next build (tests/browser/test_site_browser.py checks the two
    rank alike)."""
    return {
        "patterns": {
            "token": _TOKEN.pattern, "has_cjk": _HAS_CJK.pattern, "cjk_run": _CJK_RUN.pattern,
            "phrase": _PHRASE.pattern, "negation": _NEGATION.pattern, "term_zh": _TERM_ZH.pattern,
            "synonym_zh": _SYNONYM_ZH.pattern,
            "topic_zh": _TOPIC_ZH.pattern, "doubled": _DOUBLED.pattern,
        },
        "stop_words": sorted(_STOP_WORDS),
        "stop_chars": "".join(sorted(_STOP_CHARS)),
        "particles": "".join(sorted(_PARTICLES)),
        "traditional": "".join(chr(code) + simple for code, simple in _TRADITIONAL.items()),
        "synonyms": [list(pair) for pair in _SYNONYMS.items()],
        "phrases": [list(pair) for pair in _PHRASES.items()],
        "terms_zh": [list(pair) for pair in _TERMS_ZH.items()],
        "synonyms_zh": [list(pair) for pair in _SYNONYMS_ZH.items()],
        "synonym_zh_passes": _SYNONYM_ZH_PASSES,
        "topic_words": sorted(_TOPIC_WORDS),
        "topic_zh_alone": sorted(_TOPIC_ZH_ALONE),
        "topic_zh_paired": sorted(_TOPIC_ZH_PAIRED),
        "char_weight": _CHAR_WEIGHT,
        "agreement": _AGREEMENT,
        "max_words": MAX_WORDS,
        "max_chars": MAX_CHARS,
        "min_coverage": MIN_COVERAGE,
    }


class _Index:
    """The documents of one language and their BM25 ranker (``rank_bm25.BM25Okapi``, its default k1 and b)."""

    def __init__(self, documents: list[Document]) -> None:
        import numpy as np
        from rank_bm25 import BM25Okapi  # not with `import hookviz`: numpy only, but loaded when first asked

        if not documents:
            raise CourseNotFoundError("the course has nothing to search: no notebooks, no question index")
        self.documents = documents
        parameters = _BM25_ZH if documents[0].language != "en" else {}
        self.bm25 = BM25Okapi([tokenize(d.text) for d in documents], **parameters)
        self.weights = np.asarray([_weight(d) for d in documents])
        self.max_idf = max(self.bm25.idf.values())
        #: the kind of evidence each document is: its source, and a section's heading alone apart from its text
        self.kinds = [f"{d.source} heading" if d.text == d.title else d.source for d in documents]

    def searched_words(self, words: list[str]) -> tuple[list[str], int]:
        """The distinct ``words`` the course uses, at most :data:`MAX_WORDS` of them (the rarest in the course,
        in the question's order), and how many of those were left out."""
        known = [w for w in dict.fromkeys(words) if w in self.bm25.idf]
        if len(known) <= MAX_WORDS:
            return known, 0
        rarest = set(sorted(known, key=lambda w: -self.bm25.idf[w])[:MAX_WORDS])
        return [w for w in known if w in rarest], len(known) - MAX_WORDS

    def _unknown_weight(self, word: str) -> float:
        """The weight of a word the course never uses: the most any word weighs for an English word (a misspelling,
        a word of another subject), the average for a Chinese character (often a colloquial one the course does not
        write), nothing for a pair of Chinese characters (it may straddle two words)."""
        if not _HAS_CJK.match(word):
            return self.max_idf
        return self.bm25.average_idf if len(word) == 1 else 0.0

    def coverage(self, words: list[str], index: int) -> float:
        """The share of the weight of ``words`` (each its IDF; see :data:`MIN_COVERAGE`) that document ``index``
        holds."""
        weights = {w: self.bm25.idf.get(w, self._unknown_weight(w)) for w in dict.fromkeys(words)}
        total = sum(weights.values())
        present = self.bm25.doc_freqs[index]
        return sum(weight for word, weight in weights.items() if word in present) / total if total > 0 else 0.0

    def scores(self, words: list[str]) -> Any:
        """Each document's score for the distinct ``words``: its BM25 score, each word's share weighed by
        :func:`_query_weight`, times the document's source weight (:data:`_SOURCE_WEIGHTS`)."""
        import numpy as np

        total = np.zeros(len(self.documents))
        for word in dict.fromkeys(words):
            total += self.bm25.get_scores([word]) * _query_weight(word)
        return total * self.weights

    def search(self, words: list[str], k: int, question: list[str] | None = None) -> list[tuple[Document, float]]:
        """The ``k`` best sections for ``words``, each with the document that matched best and its score.

        A section (a link) can be matched by several kinds of document: its own text, its heading alone, a question
        of the index that it proves, atlas entries that it teaches. Its score is the best document's score plus
        :data:`_AGREEMENT` times the best score of each *other* kind of document: sections that their title, their
        text, the index and the atlas agree on come first, while many atlas entries sharing one link count once.
        Each document's BM25 score is first multiplied by its source's weight (:data:`_SOURCE_WEIGHTS`). Only
        scores above zero count. Nothing is found when no document holds :data:`MIN_COVERAGE` of the weight of the
        ``question``'s words (default: ``words``).
        """
        import numpy as np

        words = list(dict.fromkeys(words))
        if not words:
            return []
        scores = self.scores(words)
        order = np.argsort(-scores, kind="stable")
        best = [int(i) for i in order[:10] if scores[i] > 0]
        if not best or max(self.coverage(question or words, i) for i in best) < MIN_COVERAGE:
            return []
        by_link: dict[str, dict[str, tuple[Document, float]]] = {}
        for i in order:
            if scores[i] <= 0:
                break
            document = self.documents[i]
            by_link.setdefault(document.link, {}).setdefault(self.kinds[i], (document, float(scores[i])))
        ranked = []
        for place, found in enumerate(by_link.values()):  # dicts keep the order of the best document's score
            (document, top), *others = sorted(found.values(), key=lambda item: -item[1])
            ranked.append((top + _AGREEMENT * sum(score for _, score in others), place, document))
        ranked.sort(key=lambda item: (-item[0], item[1]))
        return [(document, score) for score, _, document in ranked[:k]]


_BUILT: dict[Path, dict[str, _Index]] = {}
_LOCK = threading.Lock()


def course_documents(root: Path) -> dict[str, list[Document]]:
    """The documents the course's files give, by language (the atlas's come from the package itself)."""
    notebooks = root / "notebooks"
    if not (notebooks / "questions.yml").is_file():
        raise CourseNotFoundError(f"{root} is not the course repository: it has no notebooks/questions.yml")
    english = question_documents(notebooks / "questions.yml")
    asked: dict[str, list[str]] = {}
    for question in english:
        asked.setdefault(question.link, []).append(question.title)
    for path in sorted(notebooks.glob("[0-9][0-9]_*.ipynb")):
        english += notebook_documents(path, root, "en", asked)
    chinese = []
    for path in sorted((notebooks / "zh").glob("[0-9][0-9]_*.ipynb")):
        chinese += notebook_documents(path, root, "zh")
    # the index's questions in Chinese: documents of their own, and words of the sections they are asked of
    summaries = {d.link: d.summary for d in reversed(chinese)}  # a section's first document: its own text
    questions = question_documents(notebooks / "questions.yml", "zh", summaries)
    asked_zh: dict[str, list[str]] = {}
    for question in questions:
        asked_zh.setdefault(question.link, []).append(question.title)
    chinese = questions + [
        replace(d, text=f"{d.text}\n" + "\n".join(asked_zh[d.link])) if d.link in asked_zh and d.text != d.title else d
        for d in chinese
    ]
    return {"en": english, "zh": chinese}


#: The course's documents, shipped inside the package (``scripts/make_zh.py`` rewrites it from the notebooks; a
#: test fails when it is stale), so that ``hookviz.ask`` works where hookviz is installed without the course's
#: notebooks, as on Google Colab.
PACKAGED_DOCUMENTS = Path(__file__).resolve().parent / "assets" / "course_index.json.gz"


def packaged_documents_text(root: Path) -> bytes:
    """What :data:`PACKAGED_DOCUMENTS` holds for the course at ``root`` (gzip with a fixed time: the same bytes on
    every machine)."""
    import dataclasses
    import gzip

    payload = {language: [dataclasses.asdict(d) for d in documents]
               for language, documents in course_documents(root).items()}
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return gzip.compress(text, compresslevel=9, mtime=0)


def write_packaged_documents(root: Path) -> Path:
    """Rewrite :data:`PACKAGED_DOCUMENTS` from the course at ``root``; returns its path."""
    PACKAGED_DOCUMENTS.write_bytes(packaged_documents_text(root))
    return PACKAGED_DOCUMENTS


def _packaged_documents() -> dict[str, list[Document]]:
    import gzip

    payload = json.loads(gzip.decompress(PACKAGED_DOCUMENTS.read_bytes()).decode("utf-8"))
    return {language: [Document(**fields) for fields in documents] for language, documents in payload.items()}


_BUILT: dict[Path | None, dict[str, _Index]] = {}
_LOCK = threading.Lock()


def build_index(root: Path | str | None = None) -> dict[str, _Index]:
    """The search index of each language (``{"en": ..., "zh": ...}``), built on first use and kept for the rest of
    the process. From the course at ``root`` (default: :func:`course_root`); where hookviz runs without the
    course's files (Colab), from the copy shipped in the package. Reads files only."""
    root = check_root(root)
    if root is None:
        try:
            root = course_root()
        except CourseNotFoundError:
            if not PACKAGED_DOCUMENTS.is_file():
                raise
            root = None
    else:
        root = Path(root).resolve()
    with _LOCK:
        if root not in _BUILT:
            documents = _packaged_documents() if root is None else course_documents(root)
            _BUILT[root] = {
                "en": _Index(documents["en"] + atlas_documents("en")),
                "zh": _Index(documents["zh"] + atlas_documents("zh")),
            }
        return _BUILT[root]


# ---------------------------------------------------------------------------------------------- answers
#: How a source is named to the learner (the key is the English name; hookviz.i18n translates it).
_SOURCE_LABELS = {source: source for source in SOURCES}


@dataclass(frozen=True)
class Answer:
    """One section of the course that answers the question.

    ``title``: what matched (a section's heading, a question as it was asked, an atlas entry); ``link``: the
    notebook path from the repository root and the anchor (``notebooks/10_faq.ipynb#faq-copy``); ``source``:
    one of :data:`SOURCES`; ``score``: the BM25 score (higher is better, comparable within one question only);
    ``summary``: one line; ``language``: the edition the link points into.
    """

    title: str
    link: str
    source: str
    score: float
    summary: str
    language: str

    @property
    def notebook(self) -> str:
        """The notebook's path from the repository root (``notebooks/10_faq.ipynb``)."""
        return self.link.split("#", 1)[0]

    @property
    def anchor(self) -> str:
        """The anchor in the notebook (``faq-copy``; ``""`` for a notebook's introduction)."""
        return self.link.split("#", 1)[1] if "#" in self.link else ""

    @property
    def href(self) -> str:
        """The link relative to its edition's notebook folder (``10_faq.ipynb#faq-copy``): clicked in a notebook
        of that edition, it opens the section (the anchors are the same in both editions)."""
        folder = "notebooks/" if self.language == "en" else f"notebooks/{self.language}/"
        return self.link.removeprefix(folder)

    def __str__(self) -> str:
        return f"{self.title}  [{self.source}]\n   {self.link}\n   {self.summary}"


class Answers(Sequence[Answer]):
    """The sections :func:`ask` found, best first: a read-only list of :class:`Answer`.

    Shown in a notebook as a numbered list of clickable links (``_repr_html_``), in plain text as the titles, links
    and summaries. The labels are in the language of the answers (that of the question, or ``language=``).
    """

    def __init__(self, question: str, language: str, answers: Sequence[Answer], note: str = "") -> None:
        self.question = question
        self.language = language
        self._answers = tuple(answers)
        #: what the learner should know about how the question was read (a long one is cut), in English; "" if nothing
        self.note = note

    @overload
    def __getitem__(self, index: int) -> Answer: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Answer]: ...

    def __getitem__(self, index: int | slice) -> Answer | Sequence[Answer]:
        return self._answers[index]

    def __len__(self) -> int:
        return len(self._answers)

    def __iter__(self) -> Iterator[Answer]:
        return iter(self._answers)

    @property
    def links(self) -> list[str]:
        """The answers' links, best first."""
        return [a.link for a in self._answers]

    def heading(self, language: str | None = None) -> str:
        """``3 answers to “...”`` (or that no section matched), in ``language`` (default: the answers')."""
        language = check_language(language) or self.language
        shown = _shorten(self.question, 120)  # a pasted page is not repeated whole
        if not self._answers:
            heading = translate(f"No section of the course matches “{shown}”. Try other words: the hook's "
                                "name, the error message, what you expected to happen.", language)
        else:
            count = len(self._answers)
            heading = translate(f"{count} answer{'s' if count != 1 else ''} to “{shown}”", language)
        if self.note:
            heading += (" " if language == "en" else "") + translate(self.note, language)
        return heading

    def source_label(self, answer: Answer, language: str | None = None) -> str:
        """``answer.source`` as the learner reads it in ``language`` (default: the answers')."""
        return translate(_SOURCE_LABELS[answer.source], check_language(language) or self.language)

    def to_text(self, language: str | None = None) -> str:
        """The answers as plain text: heading, then each title, source, link and summary."""
        language = check_language(language)
        lines = [self.heading(language)]
        for number, answer in enumerate(self._answers, 1):
            lines.append(f"{number}. {answer.title}  [{self.source_label(answer, language)}]")
            lines.append(f"   {answer.link}")
            lines.append(f"   {answer.summary}")
        return "\n".join(lines)

    def to_html(self, language: str | None = None, heading: bool = True) -> str:
        """The answers as an HTML list of links relative to the notebook folder, with source and summary (after
        :meth:`heading`, unless ``heading=False``); the labels in ``language`` (default: the answers')."""
        language = check_language(language)
        head = f"<div style='margin:2px 0'>{html.escape(self.heading(language))}</div>" if heading else ""
        items = []
        for answer in self._answers:
            href, label = html.escape(answer.href, quote=True), html.escape(self.source_label(answer, language))
            items.append(
                f"<li style='margin:4px 0'><a href=\"{href}\" style=\"{LINK_STYLE}\">{html.escape(answer.title)}</a>"
                f" <span style='color:#555'>· {label} · <code>{href}</code></span><br>"
                f"<span>{html.escape(answer.summary)}</span></li>"
            )
        body = f"<ol style='margin:0;padding-left:1.6em'>{''.join(items)}</ol>" if items else ""
        return f"<div class='hookviz-answers' style='line-height:1.4;white-space:normal'>{head}{body}</div>"

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        return self.to_html()


# ---------------------------------------------------------------------------------------------- ask
def check_language(language: Any) -> str | None:
    """``language`` as :func:`ask` takes it: ``"en"``, ``"zh"`` (``"zh-CN"`` and the like too) or ``None``."""
    if language is None:
        return None
    if not isinstance(language, str):
        raise TypeError(tr(f"language must be 'en', 'zh' or None (found from the question), not {language!r}"))
    code = re.split(r"[-_.@]", language.strip().lower(), maxsplit=1)[0]
    if code not in LANGUAGES:
        raise ValueError(tr(
            f"language={language!r} is not a language the course is written in: use one of "
            f"{', '.join(repr(x) for x in LANGUAGES)}, or None to find it from the question"
        ))
    return code


def check_k(k: Any) -> int:
    """``k`` as :func:`ask` takes it: a whole number (an ``int``, a numpy or torch integer), at least 1."""
    from hookviz.guards import check_int

    return check_int(k, "k", minimum=1, fix="how many sections to show, e.g. k=3")


def check_question(question: Any) -> str:
    """``question`` when it is a string (blank or not), else the ``TypeError`` :func:`ask` raises."""
    if not isinstance(question, str):
        raise TypeError(tr(
            f"question must be a string (your question in your own words), not {type(question).__name__}; "
            "e.g. hookviz.ask('why does my hook fire twice?')"
        ))
    return question


def check_root(root: Any) -> Path | None:
    """``root`` as :func:`build_index` takes it: ``None`` or a folder path (a ``str`` or a path-like)."""
    if root is None:
        return None
    if not isinstance(root, (str, os.PathLike)) or not str(root).strip():
        raise TypeError(tr(
            f"root must be the course repository's folder (a str or a pathlib.Path), not {root!r}; "
            "leave it out to search the course this hookviz belongs to"
        ))
    path = Path(root).expanduser()
    try:
        path.exists()
    except OSError as error:  # a name too long for the file system
        raise ValueError(tr(f"root {str(root)[:80]!r}... cannot be a folder: {error.strerror}")) from None
    return path


def ask(question: str, k: int = 3, language: str | None = None, *, root: Path | str | None = None) -> Answers:
    """The ``k`` sections of the course that best answer ``question``, asked in your own words.

    ``question`` may be English or Chinese (full-width letters and signs too); ``language`` (``"en"``, ``"zh"`` or
    ``None``: Chinese when the question has a Chinese character) chooses the edition searched and linked
    (``notebooks/`` or ``notebooks/zh/``). Each :class:`Answer` has a ``title``, a ``link`` (notebook path and anchor),
    its ``source`` (question index, FAQ, clinic, atlas or section), a ``score`` and a one-line ``summary``; shown
    in a notebook, the links are clickable. Fewer than ``k`` come back when fewer sections share a word with
    the question, and none when no section holds enough of it (:data:`MIN_COVERAGE`: nonsense gets "no section
    matches"). A long question costs no more than a short one: its first :data:`MAX_CHARS` characters are read and
    its :data:`MAX_WORDS` most telling words searched (:attr:`Answers.note` says so). The course's index is built on
    the first call (a second or two) and kept.

    >>> hookviz.ask("why does my hook fire twice?")[0].link
    'notebooks/10_faq.ipynb#faq-twice'
    >>> hookviz.ask("my hook prints nothing when I call layer.forward(x)")[0].link
    'notebooks/10_faq.ipynb#faq-not-firing'
    >>> hookviz.ask("钩子为啥被调了两次？")[0].link
    'notebooks/zh/10_faq.ipynb#faq-twice'
    >>> len(hookviz.ask("zzqqxx 无关"))
    0
    """
    check_question(question)
    if not question.strip():
        raise ValueError(tr(
            "question is empty: type what you want to know, in English or Chinese, e.g. "
            "hookviz.ask('why does my hook fire twice?')"
        ))
    k = check_k(k)
    root = check_root(root)
    text = _simplified(normalize(question.strip()))
    chosen = check_language(language) or detect_language(text)
    index = build_index(root)[chosen]
    read = text[:MAX_CHARS]
    words = tokenize(read)
    searched, left_out = index.searched_words(words)
    found = index.search(searched, k, question=words) if _on_topic(read) else []
    answers = [Answer(d.title, d.link, d.source, score, d.summary, d.language) for d, score in found]
    note = ""
    if len(text) > MAX_CHARS or left_out:
        note = (f"A long question: its first {min(len(text), MAX_CHARS):,} characters were read and its "
                f"{len(searched)} most telling words searched.")
    return Answers(question.strip(), chosen, answers, note=note)
