def run(ctx):
    ctx.exec("echo started > /attempt/workspace/started.txt")
    ctx.exec("sleep 30 && echo finished > /attempt/workspace/finished.txt")  # the last one
