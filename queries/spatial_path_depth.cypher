// Raise this connection's limit on variable-length paths (default 30 hops) to the 100,000 hops
// the route queries allow: a route crosses many places. Run before spatial_route*.
CALL var_length_extend_max_depth=100000
