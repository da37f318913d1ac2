// The episode that ended most recently: the one a new episode FOLLOWS (episodes ended at one
// clock time: the one written last; the memory itself follows the episode it ended last).
MATCH (e:Episode)
WHERE e.status <> 'active'
RETURN e.id AS id
ORDER BY e.end_time DESC, offset(id(e)) DESC
LIMIT 1
