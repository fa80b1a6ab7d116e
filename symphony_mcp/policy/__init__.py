"""The user's policy, without MCP: which tools are offered, what open_app may start, the audit log.

tools/policy.py applies it to every tool the server registers.
"""
