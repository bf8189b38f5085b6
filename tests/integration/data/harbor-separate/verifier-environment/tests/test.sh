#!/bin/bash
# [verifier.environment] without an image: the task's image, with its own workdir and env.
ok=1
check() { if eval "$1"; then echo "ok: $1"; else echo "FAILED: $1"; ok=0; fi; }
check '[ "$(cat /logs/artifacts/status.txt)" = done ]'
check '[ "$(pwd)" = /opt ]'
check '[ "$GRADER" = strict ]'
check '[ -z "${TASK_VAR:-}" ]'
echo $ok > /logs/verifier/reward.txt
