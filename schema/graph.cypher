// emem_graph graph schema (Kuzu DDL).
// schema_version: 3
// upgrades_from: 1, 2
//
// Bump schema_version whenever a table or property changes; a database written with another
// version is refused on open with a clear error (no silent migration). When a new version only
// ADDS tables, list the older versions in upgrades_from: they are upgraded on open by creating
// the missing tables (every statement here is IF NOT EXISTS). Version 2 added the capabilities'
// tables below (spatial map, area forest, user profile); version 3 added Position and WAS_AT
// (an entity's whereabouts over time; an upgraded memory gives each entity one open position).

CREATE NODE TABLE IF NOT EXISTS Observation(
    id STRING PRIMARY KEY,
    text STRING,
    x DOUBLE, y DOUBLE, z DOUBLE,
    timestamp DOUBLE,
    layer STRING,
    source_type STRING,
    confidence DOUBLE,
    tier STRING,
    episode_id STRING,
    metadata STRING
);

CREATE NODE TABLE IF NOT EXISTS Episode(
    id STRING PRIMARY KEY,
    name STRING,
    start_time DOUBLE,
    end_time DOUBLE,
    status STRING,
    gist STRING,
    parent_episode_id STRING,
    metadata STRING
);

CREATE NODE TABLE IF NOT EXISTS Gist(
    id STRING PRIMARY KEY,
    text STRING,
    x DOUBLE, y DOUBLE, z DOUBLE,
    radius DOUBLE,
    extent_wkt STRING,
    time_start DOUBLE,
    time_end DOUBLE,
    source_observation_count INT64,
    layer STRING,
    episode_id STRING,
    level INT64,
    tier STRING,
    created_at DOUBLE
);

CREATE NODE TABLE IF NOT EXISTS Entity(
    id STRING PRIMARY KEY,
    name STRING,
    entity_type STRING,
    x DOUBLE, y DOUBLE, z DOUBLE,
    first_seen DOUBLE,
    last_seen DOUBLE,
    observation_count INT64,
    confidence DOUBLE,
    layer STRING,
    metadata STRING
);

// Facts about the memory itself: schema version, embedding dimension and model.
CREATE NODE TABLE IF NOT EXISTS MemoryInfo(key STRING PRIMARY KEY, value STRING);

// Vector-index journal: written in the same transaction as the node it names, removed once
// LanceDB holds the change. What is left here after a crash is exactly what reconciliation redoes.
// The vectors themselves wait outside the graph (pending_vectors/): Kuzu keeps deleted rows' space.
CREATE NODE TABLE IF NOT EXISTS VectorSync(
    id STRING PRIMARY KEY,
    kind STRING,
    op STRING
);

// Where an entity was, over time: one Position per stay, oldest first by first_seen.
// x, y, z: the running mean of the stay's sightings; count: its sightings; ended: when a
// sighting elsewhere showed it had moved (NULL: the current position, one per entity).
CREATE NODE TABLE IF NOT EXISTS Position(
    id STRING PRIMARY KEY,
    entity_id STRING,
    x DOUBLE, y DOUBLE, z DOUBLE,
    first_seen DOUBLE,
    last_seen DOUBLE,
    count INT64,
    ended DOUBLE
);

CREATE REL TABLE IF NOT EXISTS BELONGS_TO(FROM Observation TO Episode);
CREATE REL TABLE IF NOT EXISTS FOLLOWS(FROM Episode TO Episode);
CREATE REL TABLE IF NOT EXISTS SUBTASK_OF(FROM Episode TO Episode);
CREATE REL TABLE IF NOT EXISTS SUMMARIZES(FROM Gist TO Observation, FROM Gist TO Gist);
CREATE REL TABLE IF NOT EXISTS OBSERVED_IN(FROM Entity TO Observation, confidence DOUBLE);
CREATE REL TABLE IF NOT EXISTS WAS_AT(FROM Entity TO Position);
CREATE REL TABLE IF NOT EXISTS COOCCURS_WITH(
    FROM Entity TO Entity,
    count INT64,
    first_seen DOUBLE,
    last_seen DOUBLE
);

// --- spatial: topological map ---------------------------------------------------------------
// Places the robot occupied (its perception positions, merged within place_spacing), CONNECTS
// edges between places walked in sequence or close enough for a loop closure (one edge per
// unordered pair, stored from the older place to the newer; paths read it undirected), and
// AT_PLACE links from observations and entities to their nearest place.
CREATE NODE TABLE IF NOT EXISTS Place(
    id STRING PRIMARY KEY,
    x DOUBLE, y DOUBLE, z DOUBLE,
    visits INT64,
    first_seen DOUBLE,
    last_seen DOUBLE
);
CREATE REL TABLE IF NOT EXISTS CONNECTS(FROM Place TO Place, distance DOUBLE, kind STRING);
CREATE REL TABLE IF NOT EXISTS AT_PLACE(FROM Observation TO Place, FROM Entity TO Place, distance DOUBLE);

// --- areas: semantic forest of area gists (area gists are Gist nodes, level >= 1) ------------

// --- profile: user-profile knowledge graph ---------------------------------------------------
// Profile nodes are few (a household's facts and routines): their embeddings live on the nodes
// (FLOAT[] lists, searched exactly in NumPy), not in LanceDB. Objects and locations belong to
// one user; a routine's steps are Pattern nodes chained by BEFORE, their arguments TARGET edges
// carrying the argument's position.

CREATE NODE TABLE IF NOT EXISTS User(
    id STRING PRIMARY KEY,
    name STRING,
    created_at DOUBLE
);

CREATE NODE TABLE IF NOT EXISTS Knowledge(
    id STRING PRIMARY KEY,
    user_id STRING,
    subtype STRING,
    alias STRING,
    description STRING,
    content STRING,
    created_at DOUBLE,
    updated_at DOUBLE,
    alias_vector FLOAT[],
    content_vector FLOAT[]
);

CREATE NODE TABLE IF NOT EXISTS Pattern(
    id STRING PRIMARY KEY,
    knowledge_id STRING,
    step INT64,
    action STRING,
    arguments STRING,
    text STRING
);

CREATE NODE TABLE IF NOT EXISTS ProfileObject(
    id STRING PRIMARY KEY,
    user_id STRING,
    name STRING,
    attributes STRING,
    granularity STRING,
    vector FLOAT[]
);

CREATE NODE TABLE IF NOT EXISTS ProfileLocation(
    id STRING PRIMARY KEY,
    user_id STRING,
    name STRING,
    expression STRING,
    vector FLOAT[]
);

CREATE REL TABLE IF NOT EXISTS REFERS_TO(FROM User TO Knowledge);
CREATE REL TABLE IF NOT EXISTS ENTAILS(FROM Knowledge TO Pattern);
CREATE REL TABLE IF NOT EXISTS TARGET(
    FROM Pattern TO ProfileObject,
    FROM Pattern TO ProfileLocation,
    position INT64
);
CREATE REL TABLE IF NOT EXISTS COMPOSED_OF(FROM Knowledge TO ProfileObject);
CREATE REL TABLE IF NOT EXISTS BEFORE(FROM Pattern TO Pattern);
CREATE REL TABLE IF NOT EXISTS GROUNDED_AS(FROM ProfileObject TO Entity, similarity DOUBLE);
