#!/usr/bin/env python3
"""What making output terminal-safe costs: `terminal_text` on a 10,000-row listing, against encoding it.

Every line sessdex prints goes through `sessdex.catalog.tui.terminal_text.terminal_text` (in the CLI's line
writer). The baseline measured in the same run is `text.encode("utf-8")`, the least any write of that
text costs; the ratio says how many such encodings the sanitizer is worth.

    .venv/bin/python scripts/bench_terminal_text.py
"""

from __future__ import annotations

import timeit

from sessdex.catalog.tui.terminal_text import terminal_text

ROWS = 10_000
REPEAT = 30
ROW = "ab12cd34  3d ago    12  Fix the parser for the new tokenizer and add tests   ~/src/project-x\n"


def main() -> None:
    table = ROW * ROWS
    cases = {
        "ASCII listing": table,
        "non-ASCII listing": table.replace("Fix", "Fïx"),
        "1% of rows hostile (ESC ] 0)": table.replace("Fix", "Fix\x1b]0;x\x07", ROWS // 100),
    }
    print(f"{ROWS} rows per listing, best of {REPEAT}")
    for name, text in cases.items():
        baseline = min(timeit.repeat(lambda text=text: text.encode("utf-8"), number=1, repeat=REPEAT))
        sanitize = min(timeit.repeat(lambda text=text: terminal_text(text, keep_newlines=True), number=1,
                                     repeat=REPEAT))
        print(f"{name:32} {len(text) / 1e6:5.2f} MB  terminal_text {sanitize * 1000:6.2f} ms  "
              f"encode {baseline * 1000:6.2f} ms  ratio {sanitize / baseline:5.1f}x")


if __name__ == "__main__":
    main()
