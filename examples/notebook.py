"""Notebook-style use: one long-lived client, each "cell" calls it. No event loop needed,
so this works as-is in Jupyter, where asyncio-based clients hit "event loop already running".

Run: python examples/notebook.py   (or paste the cells into a notebook)
"""

import sys
from pathlib import Path

import mcp_sync

# %% cell 1: connect once. Re-running this cell closes the client it made before (its server
# stops), even if the cell ends with `client` and Out[] still holds that one; other cells, and
# a loop's clients in one run, are left alone. mcp_sync.shared(target) would return the same
# client on every re-run instead.
client = mcp_sync.connect([sys.executable, str(Path(__file__).with_name("demo_server.py"))])
print(client.era, client.server_implementation)

# %% cell 2: explore
for prompt in client.prompts():
    print(prompt.name, [a.name for a in prompt.arguments])
print(client.get_prompt("haiku", {"topic": "threads"}).messages[0].text)

# %% cell 3: call
print(client.call_tool("add", {"a": 40, "b": 2}).structured_content)

# %% last cell: close (clients still open at interpreter exit are closed then, server included)
client.close()
