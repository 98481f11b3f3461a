"""``python -m wikic`` runs the command line."""

from .entry import main

main()
