#!/bin/sh
if [ "$(cat /tmp/answer.txt)" = 42 ] && ! command -v bash >/dev/null; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
