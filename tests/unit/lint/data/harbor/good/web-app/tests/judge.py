"""Asks the LLM judge (its endpoint is in [verifier.env]) whether the fix is right."""

import json
import os
import urllib.request

request = urllib.request.Request(
    os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1") + "/chat/completions",
    data=json.dumps({"model": "judge", "messages": []}).encode(),
)
print(urllib.request.urlopen(request).status)
