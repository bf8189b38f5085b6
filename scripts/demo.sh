#!/usr/bin/env bash
# Set everything up and run the main job: the minimal demo dataset with the built-in agents.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ageval lock examples/datasets/minimal-demo --task terminal-jsonl-agg
