// The tables a fleet's graph replica adds to schema/graph.cypher (emem_graph/fleet/replica.py):
// each robot that pushed, and which robot remembers each observation, gist, entity and episode.
CREATE NODE TABLE IF NOT EXISTS Robot(name STRING PRIMARY KEY, push INT64, frame_x DOUBLE, frame_y DOUBLE, frame_yaw DOUBLE);
CREATE REL TABLE IF NOT EXISTS REMEMBERED_BY(FROM Observation TO Robot, FROM Gist TO Robot, FROM Entity TO Robot, FROM Episode TO Robot);
