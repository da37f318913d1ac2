"""When and how the vector table is indexed: the measured settings VectorStore builds, searches
and retrains its indexes by.

Which columns carry a scalar index, how few rows a filter must leave for a search to skip the
ANN index, how the ANN index quantises, probes and refines, when it is retrained, and how many
rewritten rows start a compaction (which folds them back into the indexes).
"""

from __future__ import annotations

SCALAR_INDEXES = {"x": "BTREE", "y": "BTREE", "t": "BTREE", "kind": "BITMAP", "tier": "BITMAP"}
EXACT_SEARCH_MAX_ROWS = 20_000
"""A filtered search matching at most this many rows bypasses the ANN index (exact, recall 1)."""
ANN_BITS = 4
"""Bits per dimension of the ANN index's quantised vectors (IVF_RQ: RaBitQ, a random rotation
then num_bits per dimension, 192 bytes a row at 384 dimensions). Against the IVF_SQ index
(8 bits per dimension, trained ranges) it replaced, at 1M rows of the benchmark's patrol
(/tmp copies of one table, 60 queries three times, the clean-clone CI running beside them):
warm search p50 17.1 -> 6.6 ms, the process's anonymous memory after the searches +395 ->
+186 MB (LanceDB caches the partitions a search reads: the whole index, in time), recall of
the exact top 30 by score 1.000 -> 1.000 with the same refine step, build 51 s; at 100k rows
8.6 -> 8.7 ms, +53 -> +32 MB, build 3.9 -> 3.3 s. 1 bit needed a refine of 10 x n for 0.999
(0.97 at worst); IVF_PQ with 96 sub-vectors matched the recall but took 354 s to build at 100k."""
ANN_NPROBES = 20
"""IVF partitions a search through the ANN index probes (of about one per 4,096 rows)."""
ANN_REFINE = 2
"""A search through the ANN index re-ranks its best ANN_REFINE x n quantised hits with the
stored vectors.
The refine step also makes the scores exact: quantised cosine distances came back off by up to
0.3. Refining 2 x n instead of 4 x n: semantic_search 12.8 -> 11.2 ms at 100k rows, recall@10
unchanged (tests/test_vectors.py checks recall and scores)."""
ANN_MAX_SEGMENTS = 8
"""Delta segments of the ANN index from which a compaction retrains it into one. LanceDB adds
a segment at every compaction that indexes new rows (a robot flushing small batches: one a
compaction, until the table has doubled and the index is trained again), and a search probes
every segment: at 100k rows a search took 14.6 ms over 1 segment, 17.7 over 11, 30 over 51 and
57 over 101."""
ANN_TRAIN_SHARE = 0.1
"""A retraining for segments starts no sooner than the last training's duration / this share
after it ended: training takes at most about a tenth of the time (the benchmark's 1M-row
index took about two minutes to train on 2 cores)."""
REWRITE_COMPACT_ROWS = 1_000
"""Rows updated or deleted since the last compaction that start one (besides every
compact_every commits). A rewritten row leaves the indexes until the next compaction folds it
back in: after a consolidation set the tier of one lap's 2,700 rows, semantic_search at 300k
rows took 31 instead of 21 ms until the table was compacted (0.2 s)."""
