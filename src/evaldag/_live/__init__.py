"""Live scoring: an app function's calls sampled and filtered as Mastra samples an agent's, scored
by a background worker through the scorers' DAGs, the rows saved in a score store as LIVE."""
