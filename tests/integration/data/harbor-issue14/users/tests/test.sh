#!/bin/bash
# the image's default user is root: reward 1 only when the verifier runs as root
if [ "$(id -u)" = "0" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
