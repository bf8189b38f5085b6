#!/bin/bash
if [ -f /tmp/finished ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
