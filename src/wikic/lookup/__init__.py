"""Stage 5, lookup: search, ask, evaluate and serve the compiled wiki to agents."""
