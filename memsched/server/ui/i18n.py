"""The debug UI's strings in English and Chinese, and how a request picks its language.

`?lang=zh` or `?lang=en` switches (and is remembered in a cookie); otherwise the browser's
Accept-Language decides. A key without a translation reads as the key itself, so a trace key that a
later stage adds still shows up, just untranslated.
"""

from __future__ import annotations

from collections.abc import Callable

LANGS = ("en", "zh")
COOKIE = "memsched_lang"

STRINGS: dict[str, tuple[str, str]] = {
    # chrome
    "title": ("memsched debug", "memsched 调试界面"),
    "users": ("Users", "用户"),
    "user": ("User", "用户"),
    "sessions": ("Sessions", "会话"),
    "session": ("Session", "会话"),
    "turns": ("turns", "轮"),
    "timeline": ("Timeline", "时间线"),
    "profile": ("Profile", "画像"),
    "bookmarks": ("Bookmarks", "书签"),
    "jobs": ("Jobs", "任务"),
    "no_users": (
        "No users yet. Talk to memsched, or import a conversation.",
        "还没有用户。先聊几句，或导入一段对话。",
    ),
    "no_turns": ("This session has no turns.", "这个会话还没有消息。"),
    "no_sessions": ("No sessions.", "没有会话。"),
    "older": ("Older turns", "更早的消息"),
    "newest": ("Newest", "最新"),
    "open_trace": ("trace", "追踪"),
    "no_trace": ("recorded without a trace (imported or added directly)", "无追踪（导入或直接写入）"),
    "pick_turn": (
        "Open a user message to see how its context was built.",
        "点开一条用户消息，查看它的上下文是怎样组装的。",
    ),
    "traced": ("traced", "有追踪"),
    "lang_switch": ("中文", "English"),
    "raw": ("Raw trace (JSON)", "原始追踪（JSON）"),
    "back": ("Back to the timeline", "返回时间线"),
    "not_found": ("Not found", "未找到"),
    "none": ("none", "无"),
    "yes": ("yes", "是"),
    "no": ("no", "否"),
    "login": ("Sign in", "登录"),
    "logout": ("Sign out", "退出"),
    "login_title": ("This service needs an API key", "此服务需要 API 密钥"),
    "login_help": (
        "The key is kept in an HttpOnly cookie for /ui only; the API still wants Authorization: Bearer.",
        "密钥只保存在 /ui 的 HttpOnly Cookie 中；API 仍需 Authorization: Bearer。",
    ),
    "login_failed": ("That key is not valid.", "密钥无效。"),
    # trace: stages
    "trace": ("Trace", "追踪"),
    "message": ("Message", "消息"),
    "reply": ("Reply", "回复"),
    "stage_blocking": ("1 · Blocking", "1 · 阻塞"),
    "stage_route": ("2 · Mode and signals", "2 · 模式与信号"),
    "stage_retrieval": ("3 · Candidates per layer", "3 · 各层候选"),
    "stage_paged": ("4 · Paged in", "4 · 调入的记忆"),
    "stage_budget": ("5 · Token budget", "5 · Token 预算"),
    "stage_llm": ("6 · Reply call", "6 · 回复调用"),
    "stage_jobs": ("7 · Jobs queued", "7 · 排队的任务"),
    "stage_timings": ("Timings", "耗时"),
    "stage_more": ("More in the trace", "追踪中的其他内容"),
    "no_blocking": ("Nothing blocked this turn.", "本轮没有阻塞。"),
    "no_candidates": (
        "No candidates: the recent window held everything.",
        "没有候选：最近窗口已包含全部内容。",
    ),
    "no_selected": ("Nothing was paged in from older history.", "没有从更早的历史中调入内容。"),
    "no_jobs": ("No jobs queued.", "没有排队的任务。"),
    "no_llm": ("No reply call (context only).", "没有调用回复模型（仅组装上下文）。"),
    # trace: fields
    "mode": ("Mode", "模式"),
    "signals": ("Signals", "信号"),
    "mood": ("Mood", "情绪"),
    "strategy": ("Strategy", "策略"),
    "cues": ("Cues", "线索"),
    "mode_scores": ("Mode scores", "模式得分"),
    "entry": ("Entry", "入口"),
    "at": ("At", "时间"),
    "p0_overhead_ms": ("Scheduler overhead", "调度开销"),
    "error": ("Error", "错误"),
    "turn": ("Turn", "消息"),
    "fused": ("Fused", "融合分"),
    "reason": ("Why", "原因"),
    "layers": ("Layers", "检索层"),
    "pages": ("Pages", "页"),
    "paging": ("Paging", "分页"),
    "recent": ("Recent window", "最近窗口"),
    "dropped": ("Dropped for budget", "因预算舍弃"),
    "budget": ("Budget", "预算"),
    "total": ("Total", "合计"),
    "free": ("free", "剩余"),
    "over_budget": ("over budget", "超出预算"),
    "model": ("Model", "模型"),
    "usage": ("Usage", "用量"),
    "kind": ("Kind", "类型"),
    "priority": ("Priority", "优先级"),
    "status": ("Status", "状态"),
    "attempts": ("Attempts", "尝试次数"),
    "payload": ("Payload", "参数"),
    "created_at": ("Created", "创建时间"),
    "finished_at": ("Finished", "完成时间"),
    "last_error": ("Last error", "最近错误"),
    "commands": ("Commands", "指令"),
    "summaries": ("Summaries", "摘要"),
    "overflow": ("overflow", "溢出"),
    "live_window": ("Live window", "当前窗口"),
    "topic_similarity": ("topic similarity", "话题相似度"),
    "topic_threshold": ("topic threshold", "话题阈值"),
    "local_time": ("local time", "当地时间"),
    "notes": ("notes", "备注"),
    "usage_prompt": ("prompt", "输入"),
    "prompt_tokens": ("prompt tokens", "输入 tokens"),
    "completion_tokens": ("completion tokens", "输出 tokens"),
    "total_tokens": ("total tokens", "总 tokens"),
    "full_history": ("whole history", "完整历史"),
    "saved_vs_full_history": ("saved vs whole history", "比完整历史节省"),
    "saved_by_summaries": ("saved by summaries", "摘要节省"),
    "live": ("live tokens", "当前窗口 tokens"),
    "overflow_limit": ("overflow limit", "溢出上限"),
    "paging_tools": ("Recall tool", "回忆工具"),
    "selected": ("selected", "已选入"),
    "ms": ("ms", "毫秒"),
    "tokens": ("tokens", "tokens"),
    # budget parts
    "system": ("system", "系统"),
    "memory": ("recalled memory", "召回记忆"),
    "index": ("bookmark index", "书签索引"),
    "new_message": ("new message", "新消息"),
    "other": ("framing", "格式开销"),
    # signals and modes the router knows (others read as their name)
    "recall": ("recall", "回忆"),
    "topic_shift": ("topic shift", "话题切换"),
    "late_night": ("late night", "深夜"),
    "command": ("command", "指令"),
    "casual": ("casual", "闲聊"),
    "conflict": ("conflict", "冲突"),
    "comfort": ("comfort", "安慰"),
    "intimacy": ("intimacy", "亲密"),
    "task": ("task", "任务"),
    # blocking kinds
    "barrier": ("P1 barrier", "P1 屏障"),
    "consistency": ("consistency command", "一致性指令"),
    # the reply call and the recall tool loop
    "paged_by_scheduler": ("Paged in by the scheduler (retrieval)", "调度器调入（检索）"),
    "recalled_by_model": ("Paged in by the model (recall tool)", "模型调入的页（recall 工具）"),
    "round_n": ("round {n}", "第 {n} 轮"),
    "truncated": ("cut to the recall budget", "按预算截断"),
    "upstream_calls": ("Upstream calls", "上游调用"),
    "rounds": ("rounds", "轮数"),
    "stream": ("streamed", "流式"),
    "outcome": ("outcome", "结果"),
    "client_tool_calls": ("client tool calls", "客户端工具调用"),
    "partial": ("partial reply", "回复不完整"),
    "counted": ("counted by memsched", "由 memsched 计数"),
    "finish_reason": ("finish reason", "结束原因"),
    "recall_calls": ("recall calls", "recall 调用"),
    "tool_calls": ("tool calls", "工具调用"),
    "reply_failed": ("reply failed", "回复失败"),
    "awaiting_tools": ("awaiting tool results", "等待工具结果"),
    "recalled_pages": ("recalled pages", "调入的页"),
    "index_pages": ("pages in the index", "索引中的页"),
    "index_tokens": ("index tokens", "索引 tokens"),
    "tools": ("tools", "工具"),
    # mood and strategy
    "carried": ("before", "之前"),
    "llm_label": ("LLM label of the last message", "LLM 对上一条消息的标注"),
    "corrected_by": ("corrected by", "修正来源"),
    "corrected": ("corrected", "已修正"),
    "rule_mode": ("rules' mode", "规则判定的模式"),
    "rule_mood": ("rules' mood", "规则判定的情绪"),
    "after": ("after", "之后"),
    "now": ("now", "当前"),
    "recalled": ("recalled", "召回"),
    "calm": ("calm", "平静"),
    "happy": ("happy", "开心"),
    "sad": ("sad", "难过"),
    "angry": ("angry", "生气"),
    "anxious": ("anxious", "焦虑"),
    "tired": ("tired", "疲惫"),
    "lonely": ("lonely", "孤单"),
    "neutral": ("neutral", "平静"),
    "hurt": ("hurt", "受伤"),
    "mode_reason": ("why this mode", "模式原因"),
    "mood_intensity": ("mood intensity", "情绪强度"),
    "evidence": ("evidence", "证据"),
    "apology": ("apology", "道歉"),
    "acceptance": ("acceptance", "接受"),
    "late_window": ("late-night window", "深夜时段"),
    "routine": ("routine", "作息"),
    "topic_summary": ("topic summary", "话题摘要"),
    # blocking event fields, commands
    "rule": ("rule", "规则"),
    "changed": ("changed", "变更"),
    "deleted_turn_ids": ("deleted turns", "删除的消息"),
    "old": ("old value", "原值"),
    "jobs_waited": ("jobs waited for", "等待的任务"),
    "ok": ("ok", "完成"),
    "show_all": ("Show all", "全部显示"),
    "sub_layers": ("sub-query and bookmark layers", "子查询与书签检索层"),
    # profile keys and bookmark kinds the code knows (others read as their name)
    "preferred_name": ("preferred name", "称呼"),
    "timezone": ("timezone", "时区"),
    "preference": ("preference", "偏好"),
    "plan": ("plan", "计划"),
    "decision": ("decision", "决定"),
    "fact": ("fact", "事实"),
    "event": ("event", "事件"),
    "llm": ("LLM", "LLM"),
    "merged": ("merged", "合并"),
    # profile, bookmarks, jobs pages
    "key": ("Key", "键"),
    "value": ("Value", "值"),
    "valid_from": ("Since", "生效于"),
    "superseded_at": ("Until", "失效于"),
    "sources": ("From turns", "来源消息"),
    "current_facts": ("Current facts", "当前事实"),
    "history": ("History", "历史"),
    "no_facts": ("No profile facts yet.", "还没有画像事实。"),
    "keywords": ("Keywords", "关键词"),
    "summary": ("Summary", "摘要"),
    "importance": ("Importance", "重要度"),
    "source": ("Source", "来源"),
    "when": ("When", "时间"),
    "no_bookmarks": (
        "No bookmarks yet (they are made in the background, one per full page).",
        "还没有书签（后台按整页生成）。",
    ),
    "queued": ("queued", "排队中"),
    "running": ("running", "运行中"),
    "done": ("done", "完成"),
    "failed": ("failed", "失败"),
    "gone": ("gone", "已清除"),
}


def pick(query_lang: str | None, cookie_lang: str | None, accept_language: str | None) -> str:
    """The language of a request: ?lang=, then the cookie, then Accept-Language, then English."""
    for lang in (query_lang, cookie_lang):
        if lang in LANGS:
            return str(lang)
    for part in (accept_language or "").split(","):
        tag = part.split(";")[0].strip().lower()
        if tag.startswith("zh"):
            return "zh"
        if tag.startswith("en"):
            return "en"
    return "en"


def translator(lang: str) -> Callable[[str], str]:
    """`t(key)` for one language; unknown keys come back as themselves."""
    index = LANGS.index(lang) if lang in LANGS else 0

    def t(key: str) -> str:
        found = STRINGS.get(key)
        return found[index] if found else key

    return t
