"""Onboarding beside the pipeline: scaffold a KB, infer sources.yaml, propose wiki.yaml (wikic plan)."""
