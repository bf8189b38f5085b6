import requests


def evaluate(ctx):
    return {"score": float(requests.get("https://example.com").ok)}
