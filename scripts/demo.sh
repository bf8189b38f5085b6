#!/usr/bin/env bash
# Set everything up and run the main job: the minimal demo dataset with the built-in scripted
# agent (no API key, no network), then the same command again to show it is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-docker.sh
.venv/bin/ageval run examples/datasets/minimal-demo --task terminal-jsonl-agg
