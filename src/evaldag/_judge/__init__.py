"""LLM judges: settings, prompt contracts, transport, records, the shared limit and the cache."""
