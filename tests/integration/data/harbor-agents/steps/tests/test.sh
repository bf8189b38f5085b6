#!/bin/bash
# Slow on purpose: the fault tests interrupt a verification.
sleep 1.5
words="$(tr '\n' ' ' < /srv/out.txt 2>/dev/null)"
greeting="$(cat /srv/greeting.txt 2>/dev/null)"
echo "words: $words; greeting: $greeting"
if [ "$words" = "one two three " ] && [ "$greeting" = "from-task-env" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
