# harbor-canary GUID 7d3c9f1e: this line is a canary
#!/bin/bash
words=(one two)
if [[ ${#words[@]} == 2 && -n "${BASH_VERSION}" ]]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
