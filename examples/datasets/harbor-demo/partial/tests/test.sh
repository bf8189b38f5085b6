#!/bin/bash
# Half marks when the answer is there: a fractional reward has a score but no pass/fail.
if [ "$(cat /tmp/answer.txt 2>/dev/null)" = "42" ]; then echo 0.5 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
