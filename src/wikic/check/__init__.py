"""Stage 4, check: lint the compiled knowledge base, and trace a wiki sentence to its API URL."""
