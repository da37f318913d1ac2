// Every (entity, observation) sighting: for evaluating entity resolution.
MATCH (e:Entity)-[:OBSERVED_IN]->(o:Observation)
RETURN e.id AS entity_id, o.id AS observation_id
