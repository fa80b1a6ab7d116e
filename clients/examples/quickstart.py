"""symphony-mcp's first success: open a window, take a screenshot, find text on it and click it.

From the checkout, after scripts/install.sh, with the server's venv: .venv/bin/python clients/examples/quickstart.py
"""

import anyio
from mcp import Client, StdioServerParameters

# No DISPLAY given: the server starts its own virtual display. env={"DISPLAY": ":0"} uses your screen instead.
SERVER = StdioServerParameters(command=".venv/bin/symphony-mcp", args=["serve"])
HELLO = "xterm -fa Monospace -fs 14 -T demo -e 'echo Hello from symphony; sleep 600'"


async def main() -> None:
    async with Client(SERVER) as client:
        opened = await client.call_tool("open_app", {"target": HELLO})
        print("opened", opened.structured_content["new_windows"][0]["title"])
        shot = (await client.call_tool("screenshot", {})).structured_content
        print(f"screenshot {shot['image_width']}x{shot['image_height']} {shot['format']}, frame {shot['frame_id']}")
        for _ in range(10):  # the terminal may not have drawn its text yet
            found = await client.call_tool("find_text", {"phrase": "Hello from symphony"})
            if not found.is_error:
                break
            await anyio.sleep(0.5)
        else:
            raise SystemExit(found.content[0].text)  # what the server saw instead
        print("found at", found.structured_content["matches"][0]["center"])
        clicked = await client.call_tool("click_text", {"phrase": "Hello from symphony"})
        print(clicked.structured_content["summary"])


anyio.run(main)
