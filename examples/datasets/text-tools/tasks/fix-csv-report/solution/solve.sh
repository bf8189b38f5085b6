#!/bin/sh
set -eu
cd /attempt/workspace
sed -i 's/int(row\["amount"\])/float(row["amount"])/' report.py
python3 report.py data/sales.csv > report.txt
