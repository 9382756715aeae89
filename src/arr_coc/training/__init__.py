"""Training the relevance model (``arr-coc train``). ``answer``: the answer objective (the VLM frozen)."""
