#!/bin/sh
echo done > answer.txt
