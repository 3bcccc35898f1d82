"""The `talkthrough` command line: thin commands over app/ and pipeline/."""
