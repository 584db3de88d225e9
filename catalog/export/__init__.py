"""Export: a session as self-contained HTML, Markdown or JSON, with secrets redacted; and the secret scan."""
