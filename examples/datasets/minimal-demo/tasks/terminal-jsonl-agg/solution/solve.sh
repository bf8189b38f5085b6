#!/bin/sh
# Reference solution: aggregate with python3 in the terminal.
set -eu
cd /attempt/workspace
python3 -c '
import json, sys
totals = {}
for line in open("data/events.jsonl"):
    if line.strip():
        event = json.loads(line)
        totals[event["user"]] = totals.get(event["user"], 0) + event["amount"]
json.dump(totals, open("totals.json", "w"), sort_keys=True)
'
