#!/bin/bash
# A reward of 10^400: a JSON integer no float can hold.
printf '%s' "{\"reward\": 1$(printf %0400d 0)}" > /logs/verifier/reward.json
