"""`python -m catalog` runs the sessdex CLI (its console-script entry, fast path included)."""

from catalog.entry import main

main()
