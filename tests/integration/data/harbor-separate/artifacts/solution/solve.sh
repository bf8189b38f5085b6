#!/bin/bash
echo out > /logs/artifacts/out.txt
echo 42 > /tmp/answer.txt
head -c 17000000 /dev/zero > /tmp/large.bin
mkdir -p /srv/data/sub
echo a > /srv/data/sub/a.txt
echo noise > /srv/data/debug.log
echo secret > /tmp/undeclared.txt
