"""One writer invocation with the prompt filled in from the task parameters."""


def run(ctx):
    ctx.invoke("writer", ctx.prompt("task.md").format(**ctx.params))
