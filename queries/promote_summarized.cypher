// Promote the short-term observations a gist summarizes to long_term. $gist_id
MATCH (g:Gist {id: $gist_id})-[:SUMMARIZES]->(o:Observation)
WHERE o.tier = 'short_term'
SET o.tier = 'long_term'
RETURN count(o) AS n
