"""Ask the judge whether /tmp/answer.txt is right; reward 1 when it answers PASS."""

import json
import os
import urllib.request

with open("/tmp/answer.txt") as handle:
    answer = handle.read().strip()
body = {
    "model": os.environ["EVAL_MODEL"],
    "messages": [{"role": "user", "content": f"Grade {answer!r} ({os.environ['GRADING_NOTE']})"}],
}
request = urllib.request.Request(
    os.environ["EVAL_BASE_URL"].rstrip("/") + "/chat/completions",
    data=json.dumps(body).encode(),
    headers={
        "Authorization": "Bearer " + os.environ["EVAL_API_KEY"],
        "Content-Type": "application/json",
    },
)
with urllib.request.urlopen(request, timeout=120) as response:
    verdict = json.load(response)["choices"][0]["message"]["content"]
print("VERDICT:", verdict)
reward = 1 if verdict.startswith("PASS") else 0
with open("/logs/verifier/reward.txt", "w") as handle:
    handle.write(f"{reward}\n")
