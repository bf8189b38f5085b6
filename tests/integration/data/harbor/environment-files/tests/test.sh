#!/bin/bash
if [ "$(cat /work/output.txt)" = HELLO ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
