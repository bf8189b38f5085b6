import csv
import sys

total = 0
with open(sys.argv[1]) as handle:
    for row in csv.DictReader(handle):
        total += int(row["amount"])  # bug: amounts have cents
print(f"total={total:.2f}")
