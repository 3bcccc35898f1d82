"""What the stages write and the readers read, below both (``stages/`` and ``read/`` import it, it imports neither):
the wall-clock view, a recording's listing row from its manifest, the tokenizer, the search index's format, and
how a speaker's hints and voice matches read."""
