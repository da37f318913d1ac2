// Export: every Observation node with all its properties (body state and archived ones too).
// No parameters.
MATCH (n:Observation)
RETURN n.*
ORDER BY n.timestamp, n.id
