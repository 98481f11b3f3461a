"""wikic: compile API knowledge into a cited, incrementally built wiki."""

__version__ = "0.3.0"
