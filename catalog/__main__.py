"""`python -m catalog` runs the sessdex CLI."""

from catalog.cli import main

main()
