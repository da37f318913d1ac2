"""Retrieval: the core tools planners call and what answers them.

search.py fuses dense and keyword hits; lookups.py holds the typed answers of the named graph
queries and the in-memory indexes; locate.py estimates where a concept is; timeparse.py resolves
time arguments; schemas.py and dispatch.py define and validate the tools' arguments and call
them by name; formatting.py writes the compact lines of API.md; tools.py is the tools
themselves.
"""
