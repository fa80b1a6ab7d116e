"""The registry of tool names: every tool the server registers, under the module that defines it (its group).

Settings that name tools or groups are checked against it before anything starts: the command line checks
them before a display, a server or a model call, so `serve`, `run` and `bench` refuse a typo at once, and the
server checks them again as it builds. The server also refuses to build when its tool modules register a
tool this registry lacks (or lack one it names), so the two cannot drift apart: a new tool is added here too.
"""

from __future__ import annotations

TOOLS_BY_MODULE: dict[str, tuple[str, ...]] = {
    "screen": ("screenshot", "screen_info"),
    "actions": (
        "click",
        "move_pointer",
        "drag_and_drop",
        "scroll",
        "type",
        "hotkey",
        "hold_and_press",
        "key_down",
        "key_up",
        "wait",
        "action_history",
    ),
    "elements": ("elements", "find_element"),
    "windows": ("list_windows", "focus_window", "close_window", "open_app"),
    "ocr": ("ocr", "find_text", "click_text", "locate_cursor", "highlight_text_span"),
    "grounding": ("locate", "model_status"),
    "memory": ("start_task", "end_task", "list_tasks", "record_step", "reflect", "memory_audit", "check_loop"),
    "code": ("run_code", "code_agent"),
    "files": ("upload_file", "download_file"),
    "search": ("search_tutorial", "search_docs"),
}
TOOL_NAMES: frozenset[str] = frozenset(name for names in TOOLS_BY_MODULE.values() for name in names)
# Groups a tool joins by its annotations (policy/tools.py); its module is a group too.
ANNOTATION_GROUPS = ("read-only", "destructive", "open-world")
GROUP_NAMES: frozenset[str] = frozenset({*TOOLS_BY_MODULE, *ANNOTATION_GROUPS})
