// Record vector-index work (op "upsert" or "delete") for nodes written in this transaction.
// $rows: an Arrow table with columns id, kind, op (read with LOAD FROM: one statement per batch).
// The vectors are not stored here (see emem_graph/storage/pending.py).
LOAD FROM $rows
MERGE (s:VectorSync {id: id})
SET s.kind = kind, s.op = op
