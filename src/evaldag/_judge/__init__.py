"""LLM judges: settings, prompt contracts, the calls and the transports by name, the judge
records, the shared limit and the cache; given plain values (a prompt, a schema, judge settings),
not steps or scorers."""
