#!/bin/bash
# /tmp/answer.txt is not a declared artifact: the separate verifier never sees it.
if [ "$(cat /tmp/answer.txt 2>/dev/null)" = "42" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
