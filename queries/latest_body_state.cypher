// The latest body-state (interoception) reading that has text, per layer. Readings whose text
// was emptied by archival are skipped, so the previous reading with text is returned instead.
// $layers: list of layer names; an empty list means every layer (the CAST types an empty list,
// which Kuzu cannot type on its own).
MATCH (o:Observation)
WHERE o.source_type = 'interoception' AND o.text <> ''
  AND (size(CAST($layers AS STRING[])) = 0 OR list_contains(CAST($layers AS STRING[]), o.layer))
WITH o.layer AS layer, max(o.timestamp) AS latest
MATCH (b:Observation)
WHERE b.layer = layer AND b.timestamp = latest
  AND b.source_type = 'interoception' AND b.text <> ''
RETURN b
ORDER BY b.layer
