"""`python -m agevalx`: the `ageval` command, for a Python whose scripts are not on PATH."""

from agevalx.cli import console

console()
