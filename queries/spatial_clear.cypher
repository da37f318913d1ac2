// Delete the whole topological map (every Place with its CONNECTS and AT_PLACE edges): rebuild.
MATCH (p:Place)
DETACH DELETE p
