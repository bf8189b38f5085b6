def evaluate(ctx):
    raise RuntimeError("the evaluator broke")
