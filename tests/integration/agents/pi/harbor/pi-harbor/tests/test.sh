#!/bin/bash
if [ "$(cat /srv/pi.txt 2>/dev/null)" = "made-by-pi" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
