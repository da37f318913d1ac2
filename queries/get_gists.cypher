// Gists by primary key. $ids: list of ids
UNWIND $ids AS i
MATCH (g:Gist {id: i})
RETURN g
