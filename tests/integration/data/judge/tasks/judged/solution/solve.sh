#!/bin/sh
echo "a haiku about caches" > /attempt/workspace/answer.txt
