// Number of nodes whose vector change is not yet confirmed in LanceDB.
MATCH (s:VectorSync) RETURN count(s) AS n
