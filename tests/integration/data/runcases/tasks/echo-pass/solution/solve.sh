#!/bin/sh
echo "hello from the oracle" > /attempt/workspace/answer.txt
echo "wrote answer.txt"
