"""Shared primitives every stage uses: errors, files, Markdown, value objects, configuration."""
