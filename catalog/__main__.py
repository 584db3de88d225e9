"""`python -m sessdex.catalog` runs the sessdex CLI (its console-script entry, fast path included)."""

from sessdex.catalog.cli.entry import main

main()
