"""Text utilities without a model: entity names as words and extractive summaries.

names.py tokenizes names, finds singular forms and head nouns and decides when two names can
name one thing; extractive.py picks the few texts that best represent many, with their
embeddings, for a summary without an LLM or to trim an LLM's input. Pure functions over strings
and vectors: they read no store and call no LLM.
"""
