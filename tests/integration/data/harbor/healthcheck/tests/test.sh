#!/bin/bash
if [ -f /tmp/ready ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
