"""Stage 2, transform: render layer 0 snapshots as layer 1 Markdown, and read layer 1."""
