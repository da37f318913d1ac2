// A fleet replica's robot, made or brought to its latest push and frame (fleet/replica_update.py).
// $name $push $frame_x $frame_y $frame_yaw
MERGE (r:Robot {name: $name})
SET r.push = $push, r.frame_x = $frame_x, r.frame_y = $frame_y, r.frame_yaw = $frame_yaw
