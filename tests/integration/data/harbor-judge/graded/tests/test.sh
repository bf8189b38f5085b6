#!/bin/bash
# What the verifier was given, for the test to inspect (ageval masks host secrets in it).
env | sort
pattern="sk-""judge-"
found=$(grep -rIl --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr "$pattern" / 2>/dev/null | wc -l)
echo "FILES_WITH_KEY=$found"
echo "PROCESSES_WITH_KEY=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c "$pattern")"
python3 /tests/judge.py
