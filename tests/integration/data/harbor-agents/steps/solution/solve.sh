#!/bin/bash
printf 'one\ntwo\nthree\n' > /srv/out.txt
echo "$STEPS_GREETING" > /srv/greeting.txt
