#!/bin/sh
mkdir -p /attempt/workspace/out && printf 'the report\n' > /attempt/workspace/out/report.txt
