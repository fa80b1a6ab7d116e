"""Hard bounds on what a caller may send, in one place: the tool schemas state them and the cores enforce them.

Each is far above what a real host sends and far below what hurts the server (memory, one-line
trajectory files, seconds spent per call). Settings may lower some of them (e.g. the typed text
length), never raise them.
"""

from __future__ import annotations

# Free text
MAX_TYPED_TEXT = 100_000  # characters one `type` (or a replacement) may type; settings lower it (default 10,000)
MAX_DESCRIPTION = 2_000  # an element description or an on-screen phrase
MAX_INSTRUCTION = 20_000  # a task instruction
MAX_NOTE = 100_000  # a thought, plan, tool output or task note kept in the trajectory
MAX_OPEN_TARGET = 4_096  # a command line or path for open_app (PATH_MAX on Linux)
MAX_PATH = 4_096  # a file or directory path (PATH_MAX on Linux)
MAX_CODE = 100_000  # characters of one code block

# Names and ids
MAX_KEY_NAME = 64  # one key name ('ctrl', 'XF86AudioRaiseVolume', a character)
MAX_KEYS = 16  # keys in one combination or held together
MAX_KEY_PRESSES = 200  # keys pressed one after another in one hold_and_press
MAX_ID = 128  # a frame id, window id or task id
TASK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"  # a directory name; matched whole (no trailing newline)

# Numbers
MAX_COORDINATE = 100_000  # |x|, |y| and region sides, in any space (pixels)
MAX_MONITOR = 64  # monitor index (0 = all)
MAX_CLICKS = 10  # clicks in one click (2 = double)
MAX_SCROLL = 200  # wheel clicks in one scroll
MAX_DURATION = 10  # seconds a pointer move or drag may take
MAX_WAIT_SECONDS = 600  # seconds one call may wait; settings lower it (default 60)
MAX_CODE_SECONDS = 3_600  # seconds one code block may run; settings lower it (default 100)
MAX_MATCH_INDEX = 1_000  # which of several text matches
MAX_COUNTER = 2**53 - 1  # step numbers and record ids (the largest integer every JSON parser keeps exact)

# What messages and logs repeat of a caller's input
MAX_ECHO = 200  # characters of one echoed value
MAX_ERROR_MESSAGE = 4_000  # characters of one error message (listings included)
MAX_QUERY = 1_000  # a search query
MAX_URL = 4_096  # a URL the searcher opens (browsers take more; search links never need it)
MAX_TUTORIAL = 20_000  # characters of a tutorial the searcher returns
MAX_TRANSFER_BYTES = 8 * 1024 * 1024  # one file moved by upload_file / download_file through the host folder
MAX_INLINE_FILE_BYTES = 2 * 1024 * 1024  # one file carried in a tool call or result (messages are capped at 4 MiB)
MAX_INLINE_FILE_TEXT = (MAX_INLINE_FILE_BYTES + 2) // 3 * 4  # that file as base64 (or text) in the call

# What a remote machine (an OSWorld controller, an SSH agent) may answer: a machine the server drives is not trusted
# to bound its own answers, and one answer is held in memory whole
MAX_REMOTE_ANSWER = 256 * 1024 * 1024  # bytes of one answer (an 8K PNG screenshot is under 100 MiB)
MAX_REMOTE_LINE = 4 * 1024 * 1024  # bytes of one JSON line from an SSH agent (its answers carry data after the line)
