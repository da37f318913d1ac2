"""LLM access: the client protocol the memory writes text with, the Ollama client, and the guard.

client.py defines what an LLM is to the memory (summarize, synthesize, extract entities), the
typed answers it returns and the Ollama implementation; guard.py bounds every call in time, stops
calling at shutdown and turns a failure into a fallback, so that no caller ever waits on or
fails because of a model. Nothing here knows what the text is for: the callers (consolidation,
areas, profile) choose the prompts' inputs and the fallbacks.
"""
