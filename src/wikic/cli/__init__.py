"""The command line: a thin typer app over the stages, and a typer-free path for search and ask."""
