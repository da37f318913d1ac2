// The distinct names of all entities (the vocabulary of the rule-based extractor).
MATCH (e:Entity)
RETURN DISTINCT e.name AS name
