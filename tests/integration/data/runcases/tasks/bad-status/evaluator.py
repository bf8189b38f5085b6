def evaluate(ctx):
    return {"status": "MAYBE"}
