#!/bin/sh
# Sharing the server's network namespace: its 127.0.0.1 is ours.
for i in 1 2 3 4 5 6 7 8 9 10; do
  python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9090/").status)' > /attempt/workspace/status.txt 2>/dev/null && break
  sleep 0.5
done
