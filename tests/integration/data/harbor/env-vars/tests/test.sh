#!/bin/bash
if [ "$(cat /tmp/answer.txt)" = "$EXPECTED" ] && [ "$GREETING" = hello ] && [ -z "$SOLUTION_WORD" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
