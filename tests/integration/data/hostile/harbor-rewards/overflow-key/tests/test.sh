#!/bin/bash
# A valid reward beside a second key of -10^400.
printf '%s' "{\"reward\": 1, \"bonus\": -1$(printf %0400d 0)}" > /logs/verifier/reward.json
