"""Scores that last: the ``ScoreStore`` protocol and the store kinds locations open (``stores``),
Mastra's score rows in a SQL database (SQLite by default, or PostgreSQL), the schema evaldag
creates and migrates, and eval results as rows and back."""
