#!/bin/bash
echo 42 > /tmp/answer.txt
echo "the answer is in /tmp/answer.txt" > /logs/artifacts/note.txt
