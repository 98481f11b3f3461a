"""Librarian backends: ``offline`` (extractive, deterministic), ``anthropic`` and ``openai``."""
