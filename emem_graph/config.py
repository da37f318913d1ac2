"""MemoryConfig: every setting of the memory, validated once at construction."""

from __future__ import annotations

import operator
import os
import threading
import warnings
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from emem_graph.errors import ConfigError


class _DefaultDbPath(str):
    """The facade's default db_path ("memory.db"): a str like any other, told apart from an
    explicit "memory.db" by identity, so an explicit argument can win over a config's default."""


DEFAULT_DB_PATH: str = _DefaultDbPath("memory.db")

_PositiveSeconds = Field(gt=0.0)


class IgnoredSettingWarning(UserWarning):
    """A configuration field of eMEM that has no effect in emem_graph was set (warned once per
    field and process)."""


EMEM_IGNORED_FIELDS: dict[str, str] = {
    "hnsw_path": "eMEM's hnswlib index file; the vectors live in LanceDB inside db_path",
    "hnsw_ef_construction": "an hnswlib build setting",
    "hnsw_m": "an hnswlib graph setting",
    "hnsw_ef_search": "an hnswlib search setting",
    "hnsw_max_elements": "an hnswlib capacity; LanceDB has none",
}
"""Fields of eMEM's SpatioTemporalMemoryConfig accepted (so an eMEM or EmbodiedAgents config
loads unchanged) but without effect here, each with the reason. Vector search is exact up to
ann_index_min_rows rows, then an IVF_RQ index re-ranked exactly (see those fields)."""

EMEM_RENAMED_FIELDS: dict[str, str] = {"entity_extract_chunk_size": "llm_extract_batch_size"}
"""eMEM field -> the emem_graph field it sets (when that one is not given itself)."""

_warned_ignored: set[str] = set()
_warned_lock = threading.Lock()


def _warn_ignored(fields: set[str]) -> None:
    """One IgnoredSettingWarning naming the ignored eMEM fields not warned about before."""
    with _warned_lock:
        new = sorted(fields - _warned_ignored)
        _warned_ignored.update(new)
    if new:
        reasons = "; ".join(f"{name}: {EMEM_IGNORED_FIELDS[name]}" for name in new)
        warnings.warn(
            f"MemoryConfig ignores eMEM's {', '.join(new)} (no effect in emem_graph: {reasons})",
            IgnoredSettingWarning,
            stacklevel=4,
        )


class MemoryConfig(BaseModel):
    """Configuration of a SpatioTemporalMemory.

    Holds every field of eMEM's SpatioTemporalMemoryConfig (0.3.0 and its development line)
    with eMEM's defaults, so existing configs keep working, plus emem_graph's own settings.
    eMEM's hnswlib fields are accepted without effect (EMEM_IGNORED_FIELDS; setting one warns
    once) and entity_extract_chunk_size sets llm_extract_batch_size. Fields of neither config,
    negative radii and zero sizes are rejected with a ValueError naming the field (a
    ConfigError through build()).
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # --- eMEM fields, same names and defaults -------------------------------------------------
    db_path: str = "memory.db"
    embedding_dim: int = Field(384, gt=0, le=65536)
    working_memory_size: int = Field(50, gt=0)
    flush_interval: float = Field(2.0, gt=0.0)
    flush_batch_size: int = Field(5, gt=0)
    consolidation_window: float = Field(1800.0, gt=0.0)
    consolidation_spatial_eps: float = Field(3.0, gt=0.0)
    consolidation_min_samples: int = Field(3, ge=2)
    archive_after_seconds: float = Field(3600.0, gt=0.0)
    entity_extraction: bool = True
    """Extract entities from observation text (the LLM, or the built-in rules); off: only
    add_entity() sightings make entities, as in eMEM without an LLM."""
    entity_extract_flush_interval: int = Field(10, gt=0)
    entity_extract_time_interval: float = Field(60.0, gt=0.0)
    entity_similarity_threshold: float = Field(0.85, ge=0.0, le=1.0)
    entity_text_similarity_threshold: float = Field(0.65, ge=0.0, le=1.0)
    entity_spatial_radius: float = Field(5.0, gt=0.0)
    use_hybrid_retrieval: bool = True
    rrf_k: int = Field(60, gt=0)
    recency_weight: float = Field(0.0, ge=0.0, le=1.0)
    recency_halflife: float = Field(3600.0, gt=0.0)
    entity_extract_chunk_size: int = Field(16, gt=0)
    """eMEM's name of llm_extract_batch_size (texts per LLM entity-extraction request): setting
    it sets that field, unless llm_extract_batch_size is given too (then the two must agree)."""
    # --- eMEM fields without effect here (EMEM_IGNORED_FIELDS; setting one warns once) ------
    # Any value is taken (API.md: never refused); only the warning says they do nothing.
    hnsw_path: Any = "memory_hnsw.bin"
    hnsw_ef_construction: Any = 200
    hnsw_m: Any = 16
    hnsw_ef_search: Any = 50
    hnsw_max_elements: Any = 100_000
    # --- EmbodiedAgents fields ----------------------------------------------------------------
    embedding_checkpoint: str = "all-MiniLM-L6-v2"
    auto_store: bool = True

    # --- emem_graph's own fields --------------------------------------------------------------
    malloc_arena_max: int = Field(2, ge=0)
    """Most malloc arenas the process's C library creates once a memory opens (glibc's
    M_ARENA_MAX; a setting of the whole process, not of one memory). The native threads of
    LanceDB and the graph engine each take an arena, and memory freed in one is not reused by
    the others: a day of small commits grew the resident memory by about 8 KB per row with
    the C library's default (8 per core), about 1 KB with 2. 0: leave the C library's own."""
    vector_index_cache_mb: int = Field(192, gt=0)
    """Most memory LanceDB's index cache of the vector table holds (ANN partitions, the
    full-text and scalar indexes' pages), in MiB. LanceDB's own default (6 GiB) let the
    cache grow with every write of a long day; bounded, it fills and stays."""
    vector_metadata_cache_mb: int = Field(48, gt=0)
    """Most memory LanceDB's metadata cache of the vector table holds (manifests, fragment
    and deletion metadata of the versions it has read), in MiB (LanceDB's default: 1 GiB)."""
    flush_max_batch: int = Field(1_000, gt=0)
    """Most observations one flush writes (group commit). flush_batch_size waiting starts a
    flush, which writes everything waiting; while add() is faster than the writes, what
    arrives during one write waits for the next, up to this many (then add() waits for room).
    A robot adding faster than a write of flush_batch_size takes gets batches this large,
    not a graph statement and a vector commit for every few observations."""
    embedding_provider: Literal["sentence-transformers", "ollama", "hashing"] = (
        "sentence-transformers"
    )
    """Which embedder to build when none is passed to the memory."""
    graph_engine: Literal["kuzu", "ladybug"] | None = None
    """The graph engine: ladybug (LadybugDB 0.22, the maintained fork of Kuzu: the default) or
    kuzu (Kuzu 0.11.3, archived upstream; memories written before ladybug became the default).
    None: the EMEM_GRAPH_ENGINE environment variable, else ladybug. A name given here wins over
    the variable. Their files are incompatible: ``emem-graph migrate`` converts."""
    ollama_host: str = "http://127.0.0.1:11434"
    ollama_embedding_model: str = "nomic-embed-text"
    ollama_timeout: float = Field(30.0, gt=0.0)
    embedding_cache_size: int = Field(10_000, ge=0)
    """Texts whose embeddings the memory keeps (least recently used out): a robot repeats
    itself ("1 chair, 2 persons"), and a repeated text is not embedded again. 0: no cache."""
    max_text_chars: int = Field(100_000, gt=0)
    """Longest text accepted by add(); longer text is rejected, not truncated."""
    max_metadata_chars: int = Field(100_000, gt=0)
    vector_dtype: Literal["float16", "float32"] = "float16"
    """How a new memory's vector table stores its numbers: float16 halves the vectors on disk
    (unit vectors, recall unchanged); a table keeps the type it was created with."""
    vector_compact_every: int = Field(50, gt=0)
    """LanceDB commits between two compactions (each flush is one commit)."""
    vector_cleanup_after_seconds: float = Field(10.0, ge=0.0)
    """Old LanceDB versions older than this are deleted at compaction."""
    area_sketch: bool = True
    """Keep an int8 copy of every observation vector in process (dim + 4 bytes each: 388 MB
    at 1M observations of 384 dimensions) so a semantic search in an area holding at least
    sketch_min_rows rows scores them in process; False: LanceDB searches every area."""
    sketch_min_rows: int = Field(0, ge=0)
    """Rows in an area from which its semantic search (in a memory past
    exact_search_max_rows) uses the sketch, scores within about 1e-3 of exact, instead of
    LanceDB's exact search: 0, every area (a 1% area at 100k rows: 14-17 ms by LanceDB,
    1.1-1.5 ms by the sketch); a larger value keeps smaller areas exact, at LanceDB's cost."""
    exact_search_max_rows: int = Field(50_000, ge=0)
    """Observations up to which every vector search is exact in process (a float32 copy of
    their vectors: 4 x dim bytes each, 77 MB at 50k of 384 dimensions); a larger memory is
    searched through LanceDB's ANN index. 0: always LanceDB."""
    ann_index_min_rows: int = Field(50_000, gt=0)
    """Vector rows from which an ANN index (IVF_RQ: k-means partitions of vectors quantised to
    4 bits a dimension after a random rotation, re-ranked with the stored ones; IVF_SQ for a
    dimension not a multiple of 8) is built for unfiltered search."""
    ann_reindex_growth: float = Field(1.0, gt=0.0)
    """Rebuild (retrain) the ANN index when the table has grown by more than this fraction since
    the last build; rows added in between are folded into the index at each compaction. 1.0
    (doubling) bounds the rows ever indexed to about twice the table's size (0.2 indexed 100k
    rows 2.7 times over on the way there, in the writer's thread)."""
    # --- consolidation, LLM, maintenance ------------------------------------------------------
    llm_provider: Literal["none", "ollama"] = "none"
    """LLM built when no llm_client is passed: "none" uses the built-in fallbacks only."""
    ollama_llm_model: str = "llama3.2"
    llm_timeout: float = Field(60.0, gt=0.0)
    """Seconds one LLM request may take before it is retried (then the fallback is used)."""
    llm_retries: int = Field(2, ge=0)
    llm_retry_backoff: float = Field(0.5, ge=0.0)
    """Seconds before the first retry; doubled for each next one."""
    llm_extract_batch_size: int = Field(16, gt=0)
    """Observation texts per LLM entity-extraction request."""
    summary_max_sentences: int = Field(5, gt=0)
    """Sentences the extractive (no-LLM) summary of a gist keeps."""
    maintenance_interval: float | None = Field(300.0, gt=0.0)
    """Seconds (injected clock) between background maintenance runs (time-window
    consolidation, then archival); None turns the schedule off (maintenance() still works)."""
    # --- spatial: topological map of places (emem_graph.spatial) -----------------------------
    place_spacing: float = Field(2.0, gt=0.0)
    """Metres: a trajectory position closer than this to a place belongs to it (no new place)."""
    place_link_radius: float = Field(3.0, gt=0.0)
    """Metres: a new place is also CONNECTed to places this close (loop closure)."""
    place_max_step: float = Field(15.0, gt=0.0)
    """Metres: consecutive trajectory places farther apart than this are not CONNECTed (a jump
    or a gap in the trajectory, not a walk)."""
    # --- areas: semantic forest of area gists (emem_graph.areas) -----------------------------
    area_scale: Literal["indoor", "outdoor"] = "indoor"
    """Default area sizes: indoor 8/30/120 m (room, building, site), outdoor 30/120/500 m."""
    area_thresholds: tuple[Annotated[float, Field(gt=0.0)], ...] | None = Field(
        None, min_length=1, max_length=8
    )
    """Largest box diagonal (metres) of an area at each level, growing; None: area_scale's."""

    @model_validator(mode="before")
    @classmethod
    def _emem_names(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        for emem_name, name in EMEM_RENAMED_FIELDS.items():
            if emem_name in data and name not in data:
                data = {**data, name: data[emem_name]}
        return data

    @model_validator(mode="after")
    def _check_consistency(self) -> MemoryConfig:
        given = self.model_fields_set
        for emem_name, name in EMEM_RENAMED_FIELDS.items():
            if {emem_name, name} <= given and getattr(self, emem_name) != getattr(self, name):
                raise ValueError(
                    f"{emem_name}={getattr(self, emem_name)!r} (eMEM's name of {name}) and "
                    f"{name}={getattr(self, name)!r} disagree; give one of them"
                )
        if given & EMEM_IGNORED_FIELDS.keys():
            _warn_ignored(given & EMEM_IGNORED_FIELDS.keys())
        if self.entity_text_similarity_threshold > 1.0:
            raise ValueError("entity_text_similarity_threshold must be <= 1")
        if not self.db_path:
            raise ValueError("db_path must not be empty")
        if "\x00" in self.db_path:
            raise ValueError("db_path must not contain NUL characters")
        try:
            str.encode(self.db_path, "utf-8")
        except UnicodeEncodeError as exc:
            # The graph engine and LanceDB take a path as UTF-8 text only.
            raise ValueError(
                f"db_path holds {self.db_path[exc.start]!r} at position {exc.start}, which "
                "UTF-8 cannot encode (a lone surrogate, or bytes of a name that are not "
                "UTF-8); give a path of valid text"
            ) from None
        return self

    @classmethod
    def build(cls, **fields: object) -> MemoryConfig:
        """Validate ``fields`` into a config, raising ConfigError (a ValueError) on bad input."""
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            raise ConfigError(_describe(exc)) from None


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "config"
        if error["type"] == "extra_forbidden":
            message = (
                "unknown field (not a setting of emem_graph's MemoryConfig nor of eMEM's "
                "SpatioTemporalMemoryConfig)"
            )
        else:
            message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "invalid MemoryConfig: " + "; ".join(parts)


SpatioTemporalMemoryConfig = MemoryConfig


def settle(
    db_path: str | os.PathLike[str],
    config: MemoryConfig | dict[str, Any] | None,
    embedding_dim: int | None = None,
) -> MemoryConfig:
    """The configuration a SpatioTemporalMemory opens with: an explicit argument wins over a
    config field left at its default, and an explicit conflict is an error (never a silent
    choice of one).

    Args:
        db_path: the facade's db_path (DEFAULT_DB_PATH when the caller gave none).
        config: a MemoryConfig, a dict of its fields, or None.
        embedding_dim: the dimension of a given embedding provider (None: none given); taken
            when the config does not set embedding_dim itself.

    Returns:
        The validated config.

    Raises:
        ConfigError: config is not a MemoryConfig or dict, a field is invalid, db_path and
            config's own db_path name two different places, or embedding_dim is not a
            positive int.
    """
    given = db_path is not DEFAULT_DB_PATH
    if embedding_dim is not None:
        embedding_dim = _positive_dim(embedding_dim, "the embedding provider's dim")
    if config is None:
        fields: dict[str, Any] = {}
    elif isinstance(config, MemoryConfig):
        fields = config.model_dump(exclude_unset=True)
    elif isinstance(config, dict):
        fields = dict(config)
    else:
        raise ConfigError(
            f"config must be a MemoryConfig or a dict of its fields, got {type(config).__name__}"
        )
    updates: dict[str, Any] = {}
    if given:
        if not isinstance(db_path, (str, os.PathLike)):
            raise ConfigError(f"db_path must be a path, got {type(db_path).__name__}")
        path = os.fspath(db_path)
        stated = fields.get("db_path", DEFAULT_DB_PATH)
        # A config left at the default path ("memory.db", set or not) yields to the argument.
        if stated != DEFAULT_DB_PATH and not _same_place(stated, path):
            raise ConfigError(
                f"db_path={path!r} and config.db_path={stated!r} name two different memories; "
                "give one of them (or the same path in both)"
            )
        updates["db_path"] = str(path)
    if embedding_dim is not None and "embedding_dim" not in fields:
        updates["embedding_dim"] = embedding_dim
    if isinstance(config, MemoryConfig) and all(
        getattr(config, key) == value for key, value in updates.items()
    ):
        return config
    return MemoryConfig.build(**{**fields, **updates})


def provider_dim(provider: object) -> int:
    """The dimension of the vectors an embedding provider gives: its ``dim``, which must be a
    positive int (a bool, a float or a str such as "384" is refused, not converted).

    Raises:
        ConfigError: ``provider`` has no ``dim`` attribute, or it is not a positive int, or
            it has no ``embed`` method.
    """
    try:
        dim = provider.dim  # type: ignore[attr-defined]
    except AttributeError:
        raise ConfigError(
            f"embedding_provider ({type(provider).__name__}) has no dim attribute: an "
            "embedding provider gives its vectors' dimension as dim, a positive int, and "
            "embeds text with embed()"
        ) from None
    if not callable(getattr(provider, "embed", None)):
        raise ConfigError(
            f"embedding_provider ({type(provider).__name__}) has no embed() method: an "
            "embedding provider embeds a list of texts with embed(texts) -> (N, dim) array"
        )
    return _positive_dim(dim, f"embedding_provider.dim ({type(provider).__name__})")


def _positive_dim(dim: object, what: str) -> int:
    """``dim`` as an int when it is a positive integer (an int or numpy integer, not a bool)."""
    if not isinstance(dim, bool):
        try:
            number = operator.index(dim)  # type: ignore[arg-type]
        except TypeError:
            pass
        else:
            if number > 0:
                return number
            raise ConfigError(f"{what} must be a positive int, got {number}")
    shown = repr(dim) if dim is None or isinstance(dim, str | bytes | float | bool) else ""
    raise ConfigError(
        f"{what} must be a positive int, got {type(dim).__name__} {shown}".rstrip()
        + " (a dimension is not converted from another type)"
    )


def _same_place(a: Any, b: str) -> bool:
    if not isinstance(a, (str, os.PathLike)) or not os.fspath(a):
        return False
    return os.path.realpath(a) == os.path.realpath(b)
