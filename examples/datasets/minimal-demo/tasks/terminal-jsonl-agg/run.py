"""Run stage of terminal-jsonl-agg: one solver invocation, then a recorded look at the result."""


def run(ctx):
    prompt = ctx.prompt("task.md").format(**ctx.params)
    ctx.invoke("solver", prompt)
    ctx.exec(f"ls -l /attempt/workspace/{ctx.params['output']}")
