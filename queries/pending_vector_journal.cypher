// Vector-index work not yet confirmed: what reconciliation redoes after a crash.
MATCH (s:VectorSync)
RETURN s.id AS id, s.kind AS kind, s.op AS op
