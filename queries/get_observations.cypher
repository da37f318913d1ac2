// Observations by primary key. $ids: list of ids (missing ids are skipped)
UNWIND $ids AS i
MATCH (o:Observation {id: i})
RETURN o
