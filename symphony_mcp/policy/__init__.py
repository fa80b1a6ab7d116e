"""The user's policy, without MCP: which tools are offered, what open_app may start, the audit log.

The call pipeline (tools/pipeline.py) applies it to every tool the server registers.
"""
