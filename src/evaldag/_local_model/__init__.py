"""The local judge's model server: llama.cpp behind an OpenAI-compatible API (``server.py``)."""
