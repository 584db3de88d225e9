"""`python -m sessdex.catalog` runs the sessdex CLI, as the `sessdex` console script does."""

from sessdex.catalog.cli.entry import main

main()
