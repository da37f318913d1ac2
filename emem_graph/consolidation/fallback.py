"""FallbackLLM: the LLMClient that needs no model — digests (summaries) and rule-based entities.

Consolidation uses these building blocks directly whenever no LLM is configured or the LLM fails;
this class offers the same behaviour through the LLMClient protocol (for callers that want to pass
an explicit no-LLM client, or to compare).
"""

from __future__ import annotations

from emem_graph.consolidation.detections import RuleBasedExtractor
from emem_graph.llm.client import ExtractedEntity
from emem_graph.text.digest import summarize_texts
from emem_graph.text.extractive import Embed


class FallbackLLM:
    """An LLMClient without a model.

    Args:
        embed: the memory's embedder (``texts -> (N, dim)`` array), used to pick the most
            representative, non-redundant texts.
        max_sentences: kept for compatibility (a digest keeps at most two free texts).
        extractor: the rule-based extractor (shares its label vocabulary), or a new one.
    """

    def __init__(
        self,
        embed: Embed,
        *,
        max_sentences: int = 5,
        extractor: RuleBasedExtractor | None = None,
    ) -> None:
        self._embed = embed
        self.max_sentences = max_sentences
        self.extractor = extractor or RuleBasedExtractor()

    def summarize(self, texts: list[str]) -> str:
        """A digest (text/digest.py): things with counts, the most representative texts."""
        return summarize_texts(texts, self._embed)

    def synthesize(self, texts_by_layer: dict[str, list[str]]) -> str:
        """The digest of every layer's texts together (what they name, counted once)."""
        return summarize_texts([t for texts in texts_by_layer.values() for t in texts], self._embed)

    def extract_entities(self, texts: list[str]) -> list[ExtractedEntity]:
        """Entities from detection lists, and known labels named in free text."""
        return self.extractor.extract(texts)
