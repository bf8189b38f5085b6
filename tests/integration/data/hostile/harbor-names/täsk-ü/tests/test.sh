#!/bin/bash
if [ "$(cat /tmp/answer.txt)" = "grüße" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
