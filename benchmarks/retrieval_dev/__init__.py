"""Retrieval scored on public benchmarks (MEMENTO, LoCoMo) read from a path given at run time.

The data never enters the repository: their licences forbid redistribution in a product.
"""
