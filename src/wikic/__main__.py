"""``python -m wikic`` runs the command line."""

from .cli import main

main()
