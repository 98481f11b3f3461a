"""The search index (``.wikic/search.sqlite``), written by compile: the chunks of every file
(``chunks.py``), their FTS5 tables and what a lookup reads instead of the files (``store.py``),
the wiki's entities (``entities.py``), and the vectors that let a search match by meaning
(``dense.py``). ``lookup/`` reads it; a lookup that finds it stale brings it up to date through
the same writer."""
