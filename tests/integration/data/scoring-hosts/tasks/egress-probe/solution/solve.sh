#!/bin/sh
echo "probed" > /attempt/workspace/answer.txt
