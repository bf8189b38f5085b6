#!/usr/bin/env python3
"""An ACP agent that sends many client requests at once (standard library only).

On `session/prompt` it writes one file, then sends REQUESTS requests without waiting:
two of every three read that file (`fs/read_text_file`), the third starts a short terminal
(`terminal/create`, then `wait_for_exit` and `release` as the answers come). When every
request is answered it reports `reads=N terminals=N errors=N` and ends the turn.
"""

import json
import sys

REQUESTS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
FILE = "/attempt/workspace/flood.txt"


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class Flood:
    def __init__(self):
        self.next_id = 1000
        self.pending = {}
        self.counts = {"reads": 0, "terminals": 0, "errors": 0}
        self.prompt_id = None
        self.session = None

    def request(self, method, params, then):
        self.next_id += 1
        self.pending[self.next_id] = then
        send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})

    def start(self, prompt_id, session):
        self.prompt_id, self.session = prompt_id, session
        params = {"sessionId": session, "path": FILE, "content": "flood\n"}
        self.request("fs/write_text_file", params, lambda _: self.burst())

    def burst(self):
        for index in range(REQUESTS):
            if index % 3 == 2:
                params = {
                    "sessionId": self.session,
                    "command": "sh",
                    "args": ["-c", "sleep 0.2; echo t"],
                }
                self.request("terminal/create", params, self.created)
            else:
                params = {"sessionId": self.session, "path": FILE}
                self.request("fs/read_text_file", params, self.count("reads"))

    def count(self, name):
        def done(_):
            self.counts[name] += 1

        return done

    def created(self, result):
        params = {"sessionId": self.session, "terminalId": result["terminalId"]}
        self.request("terminal/wait_for_exit", params, lambda _: self.exited(params))

    def exited(self, params):
        self.request("terminal/release", params, self.count("terminals"))

    def answer(self, message):
        then = self.pending.pop(message["id"])
        if "error" in message:
            self.counts["errors"] += 1
        else:
            then(message.get("result") or {})
        if not self.pending and self.prompt_id is not None:
            text = " ".join(f"{key}={value}" for key, value in self.counts.items())
            chunk = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
            }
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": self.session, "update": chunk},
                }
            )
            send({"jsonrpc": "2.0", "id": self.prompt_id, "result": {"stopReason": "end_turn"}})
            self.prompt_id = None


def main():
    flood = Flood()
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if method is None:
            flood.answer(message)
        elif method == "initialize":
            result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"sessionId": "flood"}})
        elif method == "session/prompt":
            flood.start(message["id"], message["params"]["sessionId"])


if __name__ == "__main__":
    main()
