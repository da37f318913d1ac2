// A stay folded into its neighbour (whereabouts rule 2b): removed with its WAS_AT edge. $id
MATCH (p:Position {id: $id})
DETACH DELETE p
