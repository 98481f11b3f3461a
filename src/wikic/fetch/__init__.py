"""Stage 1, fetch: pull configured sources (HTTP APIs, folders) into layer 0 snapshots."""
