#!/bin/sh
# The answer goes to the workspace; a note is left behind in /root, outside it.
echo "forty-two" > /attempt/workspace/answer.txt
echo "the agent was here" > /root/left-behind.txt
