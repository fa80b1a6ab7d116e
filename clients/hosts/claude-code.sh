# Claude Code on the Linux machine whose desktop it drives (stdio; the server gets this DISPLAY):
claude mcp add --transport stdio --scope user --env DISPLAY=:0 symphony -- /opt/symphony-mcp/.venv/bin/symphony-mcp serve
# Or a running HTTP server (symphony-mcp serve --transport http --token ...), from here or another machine:
claude mcp add --transport http symphony-http http://127.0.0.1:8765/mcp --header "Authorization: Bearer YOUR_TOKEN"
