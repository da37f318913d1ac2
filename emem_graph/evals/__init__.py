"""Evaluations, the demo world and the benchmarks: code that exercises emem_graph from outside.

Nothing in the product (storage, ingest, retrieval, consolidation, spatial, areas, profile, the
memory facade, explore, ros_bridge) imports from here; these modules use the product's public
API (the facade in emem_graph.memory, its configuration and embedders) and, where a measurement
needs it, the module it measures.

- ``demo`` (``emem-graph demo``) walks the simulated house of ``house``; ``patrol_bag`` records
  that patrol as a ROS bag and replays it through the bridge (``emem-graph make-bag``).
- ``bench`` (``emem-graph bench``): the synthetic patrol benchmark against in-run baselines.
- ``consolidation`` on the scripted and generated worlds of ``scenarios``; ``spatial`` on the
  generated ``campus``; ``areas`` on the generated ``scene``; ``profile`` on ``profile_data``.
- ``moves_eval`` (``emem-graph moves-eval``): objects moved, swapped, removed and brought back
  in a patrolled house; locate's error to where they are now, wrong merges, missed moves.
"""
