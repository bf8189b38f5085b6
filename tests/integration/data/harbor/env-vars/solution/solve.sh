#!/bin/bash
echo "$GREETING $SOLUTION_WORD $DEBIAN_FRONTEND" > /tmp/answer.txt
