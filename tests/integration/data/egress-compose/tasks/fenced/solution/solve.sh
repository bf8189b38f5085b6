#!/bin/sh
# Probes from behind the fence; the test fills in the outside servers' names and address.
cd /attempt/workspace
cat > probe.py <<'PY'
import json, os, sys, time, urllib.request
def get(url, proxy=True):
    handlers = [] if proxy else [urllib.request.ProxyHandler({})]
    try:
        with urllib.request.build_opener(*handlers).open(url, timeout=3) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except Exception as error:
        return type(error).__name__
store = "-"
for _ in range(20):
    store = get("http://store:8080/", proxy=False)
    if store == 200:
        break
    time.sleep(0.5)
allowed, denied_ip = sys.argv[1:]
print(json.dumps({
    "store": store,
    "allowed": get(f"http://{allowed}:8000/"),
    "denied_direct": get(f"http://{denied_ip}:8000/", proxy=False),
    "interfaces": sorted(os.listdir("/sys/class/net")),
}))
PY
python3 probe.py @ALLOWED@ @DENIED_IP@ > probe.json
getent hosts main > main.txt || true
