#!/bin/bash
# A fresh environment: only /logs/artifacts and the declared artifacts are restored.
ok=1
check() { if eval "$1"; then echo "ok: $1"; else echo "FAILED: $1"; ok=0; fi; }
check '[ "$(cat /logs/artifacts/out.txt)" = out ]'
check '[ "$(cat /tmp/answer.txt)" = 42 ]'
check '[ "$(wc -c < /tmp/large.bin)" = 17000000 ]'
check '[ "$(cat /srv/data/sub/a.txt)" = a ]'
check '[ ! -e /srv/data/debug.log ]'
check '[ ! -e /tmp/undeclared.txt ]'
check '[ ! -e /solution ]'
check '[ ! -e /logs/agent/oracle.txt ]'
echo $ok > /logs/verifier/reward.txt
