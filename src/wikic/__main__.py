"""``python -m wikic`` runs the command line."""

from .cli.main import main

main()
