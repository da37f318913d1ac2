// Record vector-index work (op "upsert" or "delete") for nodes written in this transaction.
// $rows: rows with id, kind, op (one statement per batch).
// The vectors are not stored here (see emem_graph/storage/pending.py).
UNWIND $rows AS r
MERGE (s:VectorSync {id: r.id})
SET s.kind = r.kind, s.op = r.op
