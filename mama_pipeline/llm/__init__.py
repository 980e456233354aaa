"""The shared LLM client, its cache and the embedded judge server."""
