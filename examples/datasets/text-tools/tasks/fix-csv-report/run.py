"""Two roles in sequence: the writer fixes the script, the reviewer checks its output."""


def run(ctx):
    ctx.write_file("report.py", ctx.task_file(ctx.params["script"]).read_text())
    ctx.invoke("writer", ctx.prompt("fix.md").format(**ctx.params))
    result = ctx.exec("python3 report.py data/sales.csv > report.txt")
    if result.exit_code == 0:
        ctx.invoke("reviewer", ctx.prompt("review.md"))
