// The first and last observation time and the number of observations (one row; NULL times on
// an empty memory): the time span of stats, and the "now" relative export times count back from.
// No parameters.
OPTIONAL MATCH (o:Observation)
RETURN min(o.timestamp) AS first_time, max(o.timestamp) AS last_time, count(o) AS observations
