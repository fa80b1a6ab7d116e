"""The Coder's prompts: fixed system text, the first turn's facts, each run's outcome, the summary request."""

from __future__ import annotations

from symphony_mcp.code.types import CodeRun

SYSTEM_PROMPT = """You are a programmer solving a task on the user's computer by running code, one block at a time.
Each turn, write a short thought, then exactly one fenced code block in {languages} (```python or ```bash).
The block runs at once in a confined sandbox (working directory {workdir}; only it and {writable}
are writable; no network unless allowed); its exit code and output come back as the next turn.
Work in small steps: inspect before you change, check your changes by reading them back.
When the task is complete and checked, answer with a thought and the word DONE on its own line.
If it cannot be completed, answer FAIL (you tried and could not) or INFEASIBLE (it cannot be done here),
on its own line, after a thought that says why. Never write a code block and a verdict in one answer.
You have {budget} turns; on the last one only DONE, FAIL or INFEASIBLE is accepted."""

SUMMARY_PROMPT = """Summarise the work of a coding agent for the agent that asked for it, in at most {words} words:
what it did, what it found, what changed on disk (paths, values), and why it stopped. Plain prose, no code."""

_OUTPUT_CHARS = 4_000  # of each stream shown to the model per turn; the transcript keeps the run's own cap


def first_turn(task: str, facts: list[str]) -> str:
    listed = "\n".join(f"- {fact}" for fact in facts)
    return f"Task: {task}\n\nEnvironment:\n{listed}\n\nThe current screen is attached."


def run_outcome(run: CodeRun, step: int, budget: int) -> str:
    """What the model sees after its block ran."""
    status = "ok" if run.exit_code == 0 else "error"
    if run.killed:
        status = f"killed ({run.kill_reason or 'limit'})"
    lines = [f"Status: {status}; exit code {run.exit_code}; {run.duration_seconds:.2f} s."]
    streams = (("stdout", run.stdout, run.stdout_truncated), ("stderr", run.stderr, run.stderr_truncated))
    for name, text, truncated in streams:
        if text or truncated:
            shown, cut = _tail(text)
            note = " (truncated)" if truncated or cut else ""
            lines.append(f"{name}{note}:\n{shown}")
    lines.append(_turns_left(step, budget))
    return "\n".join(lines)


ANSWER_AGAIN = "with a thought, then one code block or a verdict."  # after a refused answer (models/reask.py)


def unusable(step: int, budget: int) -> str:
    return f"No usable answer was given; nothing ran. {_turns_left(step, budget)}"


def _turns_left(step: int, budget: int) -> str:
    if step + 1 >= budget:
        return "Next is your last turn: answer DONE, FAIL or INFEASIBLE only."
    return f"Turn {step + 1} of {budget} next."


def _tail(text: str) -> tuple[str, bool]:
    """The start and end of long output: errors usually sit at the end."""
    if len(text) <= _OUTPUT_CHARS:
        return text, False
    half = _OUTPUT_CHARS // 2
    return f"{text[:half]}\n[... {len(text) - _OUTPUT_CHARS} characters left out ...]\n{text[-half:]}", True
