#!/bin/bash
if [ "$(cat /srv/app/where.txt)" = /srv/app ] && [ "$PWD" = /srv/app ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
