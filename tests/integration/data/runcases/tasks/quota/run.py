def run(ctx):
    ctx.invoke("solver", "first")
    ctx.invoke("solver", "second")
    ctx.exec("echo never reached > /attempt/workspace/second.txt")
