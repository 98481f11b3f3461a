"""Stage 3, compile: plan pages from layer 1, draft them with a librarian, verify every citation, write the wiki."""
