#!/bin/bash
# The reward says which judge the verifier was given: the layering of verifier env maps.
echo "judge: $JUDGE_MODEL"
if [ "$JUDGE_MODEL" = "good-judge" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
