"""ROS 2 bridge for emem_graph: layer ingest, pose, triggers, tool services and bag replay.

Messages of the configured layer topics become observations at the robot's pose (converters,
pose, pipeline); the memory's tools are served as ROS services (services, srv_files); a recorded
bag replays through the same pipeline (bag); config reads the bridge's YAML file and client
queries a running bridge. node.py is the only module that imports rclpy, lazily: importing the
package never needs a ROS installation.
"""
