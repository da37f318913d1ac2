"""Smoke test of the ingest benchmark (no timing assertions: only that it runs end to end)."""

from __future__ import annotations

from pathlib import Path

from emem_graph import HashingEmbedder
from emem_graph.bench import bench_ingest, patrol_workload


def test_bench_ingest_smoke(tmp_path: Path) -> None:
    result = bench_ingest(2000, tmp_path, embedder=HashingEmbedder(384), batch_size=500)
    assert result["n"] == 2000
    for section in ("floor", "ours", "model"):
        assert result[section]["obs_per_s"] > 0
        assert result[section]["seconds"] > 0
    assert result["floor"]["kuzu_copy_s"] > 0 and result["floor"]["lance_add_s"] > 0
    assert result["ours"]["flushes"] == 4
    assert result["ours"]["graph_bytes"] > 0 and result["ours"]["vectors_bytes"] > 0
    assert result["ratio"] > 0
    assert result["model"]["n"] == 2000
    assert result["model"]["embed_only_obs_per_s"] > 0
    assert result["model"]["embed_s"] > 0 and result["ours"]["embed_s"] == 0.0
    assert result["model"]["ratio_to_floor"] > 0
    assert not any((tmp_path / name).exists() for name in ("floor", "ours", "model"))


def test_patrol_workload_shape() -> None:
    work = patrol_workload(100)
    assert len(work) == 100 and len(set(work.ids)) == 100
    assert work.vectors.shape == (100, 384)
    assert abs(float((work.vectors**2).sum(axis=1).mean()) - 1.0) < 1e-5
    assert work.layers.count("battery") == 5
    assert work.x.min() > -1.0 and work.x.max() < 41.0
    assert work.y.min() > -1.0 and work.y.max() < 21.0
