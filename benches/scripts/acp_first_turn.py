#!/usr/bin/env python3
"""Times an ACP session's first and second turns against `dsh acp`.

Usage: acp_first_turn.py DSH [SESSIONS] [PAUSE_SECONDS]

Each session is a new `dsh acp` process on a scripted deployment (no API
usage, so each turn's end counts the context for the editor's meter):
`initialize`, `session/new`, then PAUSE_SECONDS (a person typing; 0 sends
at once), then two prompts. Prints the median time from sending each
`session/prompt` to its answer, in milliseconds.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

DEPLOYMENT = """\
[adapter.scripted]
answers = "answers.toml"
model = "gpt-4o"
context_window = 128000

[[agents]]
id = "runner"
tools = ["bash", "read"]
persona = "You are a test agent running on <<model>> in <<cwd>>."
"""

ANSWERS = '[[answers]]\ntext = "one"\n[[answers]]\ntext = "two"\n'


class Client:
    def __init__(self, dsh, dir):
        self.proc = subprocess.Popen(
            [dsh, "acp", "--config", os.path.join(dir, "dsh.toml"), "--no-store"],
            cwd=dir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0

    def request(self, method, params):
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(line) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.next_id and "method" not in message:
                if "error" in message:
                    raise SystemExit(f"{method}: {message['error']}")
                return message["result"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def session(dsh, pause):
    with tempfile.TemporaryDirectory() as dir:
        with open(os.path.join(dir, "dsh.toml"), "w") as f:
            f.write(DEPLOYMENT)
        with open(os.path.join(dir, "answers.toml"), "w") as f:
            f.write(ANSWERS)
        client = Client(dsh, dir)
        client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = client.request("session/new", {"cwd": dir, "mcpServers": []})
        time.sleep(pause)
        turns = []
        for text in ["hello", "again"]:
            start = time.perf_counter()
            client.request(
                "session/prompt",
                {"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": text}]},
            )
            turns.append((time.perf_counter() - start) * 1000)
        client.close()
        return turns


def main():
    dsh = sys.argv[1]
    sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    session(dsh, pause)  # warm-up: the binary and the file cache
    runs = [session(dsh, pause) for _ in range(sessions)]
    first = statistics.median(run[0] for run in runs)
    second = statistics.median(run[1] for run in runs)
    print(f"pause {pause:.1f} s: first turn {first:.1f} ms, second turn {second:.1f} ms "
          f"(median of {sessions} sessions)")


if __name__ == "__main__":
    main()
