def run(ctx):
    ctx.invoke("solver", "Count the rows of table t in the database at db:5432.")
