"""`sessdex serve`: the catalog as a local web app (search, projects, transcripts, usage, prompt history)."""
