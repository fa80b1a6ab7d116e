"""A stand-in for WindowsAgentArena's in-VM server (app.py) and the process that runs it (process.py)."""
