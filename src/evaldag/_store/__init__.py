"""Scores that last: Mastra's score rows in a SQL database (SQLite by default, any SQLAlchemy URL),
the schema evaldag creates and migrates, and eval results as rows and back."""
