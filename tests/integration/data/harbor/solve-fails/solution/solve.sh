#!/bin/bash
echo partial > /tmp/answer.txt
echo "giving up" >&2
exit 3
