// Record vector-index work (op "upsert" or "delete") for nodes written in this transaction.
// $rows: list of {id, kind, op, vector}
UNWIND $rows AS r
MERGE (s:VectorSync {id: r.id})
SET s.kind = r.kind, s.op = r.op, s.vector = r.vector
