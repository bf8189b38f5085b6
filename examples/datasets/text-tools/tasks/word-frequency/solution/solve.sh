#!/bin/sh
set -eu
cd /attempt/workspace
python3 - <<'PY'
import re
from collections import Counter
words = re.findall(r"[a-z']+", open("data/poem.txt").read().lower())
ranked = sorted(Counter(words).items(), key=lambda item: (-item[1], item[0]))[:5]
open("ranking.tsv", "w").write("".join(f"{w}\t{c}\n" for w, c in ranked))
PY
