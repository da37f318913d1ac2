"""Consolidation: gists of episodes and time windows, tiers and archival, persistent entities.

An LLM (emem_graph.llm) or its no-LLM fallbacks (fallback.py and detections.py, over the
extractive summaries of emem_graph.text) produce text and entity sightings; gists.py,
episodes.py and time_window.py write gists; entities.py and extraction.py merge sightings into
persistent entities; tiers.py archives; worker.py runs the slow work off the robot's threads;
engine.py composes them for the facade.
"""
