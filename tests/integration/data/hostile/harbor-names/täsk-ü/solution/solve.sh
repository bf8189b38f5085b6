#!/bin/bash
printf "grüße" > /tmp/answer.txt
