"""Run a stdio MCP server and copy every line the client sends it into a file.

Run:  python wire_tap.py LOGFILE COMMAND [ARG ...]

For tests that check what a client put on the wire (e.g. that Ctrl-C in the CLI
sent ``notifications/cancelled``) while a real server answers. Standard library
only; the server's stdout and stderr pass through untouched. When the client
closes stdin the server's stdin is closed too, and the tap exits with it.
"""

from __future__ import annotations

import subprocess
import sys


def main() -> int:
    log_path, command = sys.argv[1], sys.argv[2:]
    server = subprocess.Popen(command, stdin=subprocess.PIPE)
    assert server.stdin is not None
    with open(log_path, "ab", buffering=0) as log:
        for line in sys.stdin.buffer:
            log.write(line)
            try:
                server.stdin.write(line)
                server.stdin.flush()
            except BrokenPipeError:
                break
    server.stdin.close()
    try:
        return server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        return server.wait()


if __name__ == "__main__":
    sys.exit(main())
