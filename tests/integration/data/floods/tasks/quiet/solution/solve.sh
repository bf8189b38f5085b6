#!/bin/sh
echo done > /attempt/workspace/done.txt
