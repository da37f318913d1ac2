"""ROS 2 bridge for emem_graph (layer ingest, pose, triggers, tool services, bag replay).

Not built yet: the converters, node and bag replay arrive with the ROS bridge issue. The package
exists so the distribution's layout is final; importing it never imports rclpy.
"""
