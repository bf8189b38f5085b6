#!/bin/sh
echo "forty-two" > /attempt/workspace/answer.txt
