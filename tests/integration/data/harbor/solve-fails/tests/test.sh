#!/bin/bash
if [ -f /tmp/answer.txt ]; then echo 0.25 > /logs/verifier/reward.txt; fi
