#!/bin/bash
echo 42 > /tmp/answer.txt
