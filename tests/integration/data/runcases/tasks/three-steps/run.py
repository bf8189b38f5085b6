def run(ctx):
    for step in range(3):
        ctx.invoke("stepper", f"step {step}")
        ctx.exec(f"echo {step} >> /attempt/workspace/after-invocations.txt")
