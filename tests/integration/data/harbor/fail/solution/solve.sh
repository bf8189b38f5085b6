#!/bin/bash
echo 41 > /tmp/answer.txt
