"""UserProfile: the personal memory of a household robot's users, grounded in its entities.

What users say about themselves becomes knowledge nodes: object semantics ("the yellow cup
with the wooden handle is my favorite cup": the alias COMPOSED_OF its objects) and user patterns
("for my cozy evening, move the candle to the table, then to the couch": the alias ENTAILS its
steps, chained by BEFORE, each TARGETing its objects and places). Objects and places are nodes
of their user, reused when a later instruction names them again in other words. Objects are
GROUNDED_AS the world entities they are, so a request for "my favorite cup" can be located.

Ways in: the structured API (``add_object_semantics``, ``add_user_pattern``: no LLM needed) and
``update_from_instruction`` (the LLM's JSON extraction when one is configured, otherwise the
rule-based parser). Way out: the ``user_profile`` tool, and alias resolution for ``locate`` and
``recall`` (``resolve_concept``). The write an instruction makes is built in instruction_write.py;
which knowledge a text names is found in lookup.py.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from pydantic import ValidationError

from emem_graph import validation
from emem_graph.errors import BackendUnavailableError, InvalidInputError
from emem_graph.gate import gate_of, while_open
from emem_graph.profile import grounding, inputs, parse
from emem_graph.profile.instruction_write import describe, knowledge_write
from emem_graph.profile.llm import ProfileLLM, extract_instruction, profile_llm_for
from emem_graph.profile.lookup import concept_names, existing_knowledge, ranked_hits, says_whose
from emem_graph.profile.models import (
    OBJECT_SEMANTICS,
    USER_PATTERN,
    Instruction,
    KnowledgeNode,
    ObjectSpec,
    ProfileHit,
    ProfileUpdate,
    StepSpec,
)
from emem_graph.profile.schemas import DEFAULT_K
from emem_graph.profile.storage import (
    ProfileSnapshot,
    read_snapshot,
    removal,
)
from emem_graph.profile.storage import grounding as grounding_change
from emem_graph.retrieval.dispatch import tool_method

if TYPE_CHECKING:
    from emem_graph.config import MemoryConfig
    from emem_graph.models import Observation
    from emem_graph.storage.store import MemoryStore

log = logging.getLogger(__name__)

_USER_RE = re.compile(r"\s+")


class ProfileHost(Protocol):
    """What the profile needs of the memory facade."""

    config: MemoryConfig
    llm_client: Any

    def flush(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


def user_key(user: str, max_chars: int | None = None) -> str:
    """A user's id: the name in lower case with single spaces.

    Raises:
        InvalidInputError: not a string, empty, with NUL characters or a lone surrogate, or
            longer than ``max_chars`` characters (when given).
    """
    if not isinstance(user, str) or not user.strip():
        raise InvalidInputError("user must be a non-empty name")
    if max_chars is not None and len(user) > max_chars:
        raise InvalidInputError(
            f"user has {len(user)} characters; the limit is {max_chars} (max_text_chars)"
        )
    if "\x00" in user:
        raise InvalidInputError("user must not contain NUL characters")
    return _USER_RE.sub(" ", validation.plain_text("user", user).strip()).lower()


class UserProfile:
    """The user-profile capability of one memory (``mem.profile``).

    Args:
        host: the memory facade (embed, flush, config, llm_client).
        store: its store (all writes go through ``store.apply``).
        clock: the memory's clock (creation and update times).
        llm: a ProfileLLM; None: derived from the memory's LLM settings (profile_llm_for), or
            none, in which case instructions are parsed by rules.
    """

    name = "profile"

    def __init__(
        self,
        host: ProfileHost,
        store: MemoryStore,
        *,
        clock: Callable[[], float],
        llm: ProfileLLM | None = None,
    ) -> None:
        self.tool_names = ["user_profile"]
        self._host = host
        self._store = store
        self._clock = clock
        self._dim = host.config.embedding_dim
        self._max_chars = host.config.max_text_chars
        self.llm: ProfileLLM | None = (
            llm if llm is not None else profile_llm_for(host.config, host.llm_client)
        )
        self._current_user: str | None = None
        self._lock = threading.RLock()
        self._snapshot: ProfileSnapshot | None = None
        self._entity_signature: tuple[Any, ...] | None = None

    @property
    def current_user(self) -> str | None:
        """Whose aliases ``locate`` and ``recall`` resolve ('my favorite cup'); None: anyone's.

        Raises (when set):
            InvalidInputError: not None and not a user name (see user_key).
        """
        return self._current_user

    @current_user.setter
    def current_user(self, user: str | None) -> None:
        if user is not None:
            self._uid(user)
        self._current_user = user

    # --- Capability ----------------------------------------------------------------------------

    @while_open
    def flush_before_tool(self) -> None:
        """Make every added observation (and entity) visible to the tool about to run."""
        self._host.flush()

    def observations_written(self, observations: list[Observation]) -> None:
        """New entities may have appeared: match the objects not grounded yet."""
        self._refresh_grounding()

    def close(self) -> None:
        """Nothing is pending: every write is committed when its call returns."""

    # --- the structured API --------------------------------------------------------------------

    @while_open
    def add_object_semantics(
        self,
        user: str,
        alias: str,
        objects: Sequence[str | ObjectSpec | dict[str, Any]],
        description: str | None = None,
    ) -> ProfileUpdate:
        """Remember which object(s) ``user`` means by ``alias`` ("my favorite cup").

        An existing object-semantics alias of the user that says the same ("my favourite
        cup") is updated (same node, its objects replaced); objects the user already has under
        another phrasing are reused.

        Args:
            user: the user's name.
            alias: the personal expression.
            objects: a list (or tuple) of names, ObjectSpec or dicts of ObjectSpec fields; a
                single object goes in a list too (``["yellow cup"]``).
            description: the fact in a sentence; None: made from the alias and objects.

        Raises:
            InvalidInputError (nothing is written): user, alias or description not text,
                empty (description may be) or over ``max_text_chars`` characters; objects not
                a list (a str is refused, not read letter by letter), empty, or holding an item
                that is not a non-empty name, an ObjectSpec or a valid dict.
        """
        what = "add_object_semantics"
        self._uid(user)
        instruction = self._instruction(
            what,
            subtype=OBJECT_SEMANTICS,
            alias=alias,
            description=description,
            objects=inputs.object_specs(what, objects, self._max_chars),
        )
        if not instruction.objects:
            raise InvalidInputError(f"{what}: give at least one object")
        return self._write(user, instruction, "api")

    @while_open
    def add_user_pattern(
        self,
        user: str,
        alias: str,
        steps: Sequence[str | StepSpec | dict[str, Any]],
        description: str | None = None,
    ) -> ProfileUpdate:
        """Remember a routine of ``user``: ``alias`` ("my cozy evening") and its steps in order.

        A step is a StepSpec, a dict (``{"action": "move", "object": "candle", "location":
        "table"}``) or a phrase ("move the candle to the table"; "to the couch" repeats the
        previous action and object). An existing routine of the user with the same alias is
        updated: one knowledge node, its steps replaced by these; objects and places shared
        with other knowledge stay.

        Args:
            user: the user's name.
            alias: the routine's name.
            steps: a list (or tuple) of phrases, StepSpec or dicts; a single step goes in a
                list too (``["move the candle to the table"]``).
            description: the routine in a sentence; None: made from the alias and steps.

        Raises:
            InvalidInputError (nothing is written): user, alias or description not text,
                empty (description may be) or over ``max_text_chars`` characters; steps not a
                list (a str is refused, not read letter by letter), empty, or holding an item
                that is not a StepSpec, a valid dict or a phrase that is a step.
        """
        what = "add_user_pattern"
        self._uid(user)
        instruction = self._instruction(
            what,
            subtype=USER_PATTERN,
            alias=alias,
            description=description,
            steps=inputs.step_specs(what, steps, self._max_chars),
        )
        if not instruction.steps:
            raise InvalidInputError(f"{what}: give at least one step")
        return self._write(user, instruction, "api")

    def update_from_instruction(self, instruction: str, user: str) -> ProfileUpdate:
        """Understand what ``user`` said ("the yellow cup is my favorite cup", "for my cozy
        evening, move the candle to the table, then to the couch") and add or update it.

        With an LLM (``self.llm``): classify, then extract JSON (llm.py). Without one, or when
        it fails or answers wrongly: the rule-based parser (parse.py); ``source`` of the result
        says which understood it.

        Raises:
            InvalidInputError (nothing is written): ``instruction`` or ``user`` not text,
                empty, or over ``max_text_chars`` characters; neither the LLM nor the rules
                found a fact or routine in it.
        """
        # The LLM is asked outside the memory's gate (close() does not wait on it); only the
        # checks and the write are inside: a closed memory refuses before the LLM is asked.
        gate = gate_of(self)
        with gate:
            if not isinstance(instruction, str) or not instruction.strip():
                raise InvalidInputError("the instruction is empty")
            if len(instruction) > self._max_chars:
                raise InvalidInputError(
                    f"the instruction has {len(instruction)} characters; the limit is "
                    f"{self._max_chars} (max_text_chars)"
                )
            if "\x00" in instruction:
                raise InvalidInputError("the instruction must not contain NUL characters")
            instruction = validation.plain_text("instruction", instruction)
            self._uid(user)
        extracted: Instruction | None = None
        source = "rules"
        if self.llm is not None:
            try:
                extracted = extract_instruction(self.llm, instruction)
                source = "llm"
            except BackendUnavailableError as exc:
                log.warning("profile LLM failed (%s); parsing the instruction by rules", exc)
        if extracted is None:
            extracted = parse.parse_instruction(instruction)
        if not extracted.description:
            extracted.description = " ".join(instruction.split())
        with gate:
            return self._write(user, extracted, source)

    @while_open
    def remove(self, user: str, alias: str) -> bool:
        """Forget the knowledge of ``user`` best matching ``alias`` (and the objects and places
        only it used). Returns whether something was removed.

        Raises:
            InvalidInputError (nothing is removed): user or alias not text, empty, or over
                ``max_text_chars`` characters.
        """
        uid = self._uid(user)
        alias = validation.text("alias", alias, self._max_chars)
        with self._lock:
            snapshot = self._read()
            found = None
            for subtype in (OBJECT_SEMANTICS, USER_PATTERN):
                found = found or existing_knowledge(snapshot, uid, subtype, alias, self._host.embed)
            if found is None:
                return False
            self._store.apply(removal(found))
            self._snapshot = None
            return True

    @while_open
    def knowledge(self, user: str | None = None) -> list[KnowledgeNode]:
        """Every knowledge node (of ``user``), oldest first, patterns in BEFORE order.

        Raises:
            InvalidInputError: ``user`` not None and not a user name (see user_key).
        """
        uid = None if user is None else self._uid(user)
        with self._lock:
            return self._read().knowledge_of(uid)

    @while_open
    def snapshot(self) -> ProfileSnapshot:
        """The whole profile as stored now (users, knowledge, objects, locations)."""
        with self._lock:
            return self._read()

    # --- retrieval -----------------------------------------------------------------------------

    @while_open
    def search(self, query: str, user: str | None = None, k: int = DEFAULT_K) -> list[ProfileHit]:
        """The ``k`` knowledge nodes best matching a request, best first (see user_profile).

        Raises:
            InvalidInputError: query not text, empty or over ``max_text_chars`` characters;
                user not None and not a user name; k not a whole number of at least 1.
        """
        query = validation.text("query", query, self._max_chars)
        uid = None if user is None else self._uid(user)
        k = inputs.count("k", k)
        self._refresh_grounding()
        with self._lock:
            return ranked_hits(self._read(), uid, query, k, self._host.embed)

    @tool_method
    def user_profile(self, query: str, user: str | None = None, k: int = 3) -> str:
        """What users told the robot about themselves that fits a request: classify it (object
        or routine), search that part of the profile first, and describe each hit in one line
        (routine steps in BEFORE order, objects with their grounded positions)."""
        hits = self.search(query, user, k)
        if hits:
            return "\n".join(f"{i}. {hit.description}" for i, hit in enumerate(hits, start=1))
        if user is None:
            return "No profile knowledge found."
        with self._lock:
            users = self._read().users
        if self._uid(user) in users:
            return f"No profile knowledge found for {user}."
        known = ", ".join(sorted(users.values())) or "none yet"
        return f"No profile knowledge found for {user}: no user of that name (users: {known})."

    @while_open
    def resolve_concept(self, concept: str) -> str | None:
        """What a personal expression in a locate/recall concept stands for: "my favorite cup"
        -> the grounded entity's name ("yellow cup"), or the object's own phrase when it is not
        grounded. None when the concept names no alias (it must say whose: 'my', 'our', ...).
        Aliases of ``current_user`` only, when it is set."""
        if not says_whose(concept):
            return None
        self._refresh_grounding()
        with self._lock:
            snapshot = self._read()
            uid = None if self._current_user is None else self._uid(self._current_user)
            return concept_names(snapshot, uid, concept, self._host.embed)

    # --- grounding -----------------------------------------------------------------------------

    @while_open
    def ground(self, *, all_objects: bool = False, only: set[str] | None = None) -> int:
        """Match profile objects to world entities now (the ungrounded ones, or ``all_objects``
        again; only the ids in ``only`` when given). Returns how many objects are grounded
        afterwards among those looked at.

        Raises:
            InvalidInputError: all_objects not a bool; only not None or a set of ids (str).
        """
        return self._ground(
            all_objects=inputs.flag("all_objects", all_objects), only=inputs.ids("only", only)
        )

    def _ground(self, *, all_objects: bool = False, only: set[str] | None = None) -> int:
        # Ungated: the flush thread grounds through _refresh_grounding, also during close()'s
        # last flush, after the gate refuses new calls.
        with self._lock:
            snapshot = self._read()
            objects = [
                o
                for o in snapshot.objects.values()
                if (all_objects or not o.groundings) and (only is None or o.id in only)
            ]
            if not objects:
                return 0
            links = {
                o.id: grounding.ground_object(self._store, self._host.embed, o) for o in objects
            }
            changed = {
                o.id: links[o.id]
                for o in objects
                if [e for e, _ in links[o.id]] != [g.entity_id for g in o.groundings]
            }
            if changed and not self._store.read_only:  # read-only: the stored groundings
                self._store.apply(grounding_change(changed))
                self._snapshot = None
            return sum(1 for found in links.values() if found)

    def _refresh_grounding(self, written: set[str] | None = None) -> None:
        # Entities appear (extraction, add_entity), move and merge: when their count or latest
        # sighting changed, positions are read again and every ungrounded object is matched
        # again; otherwise only the objects just ``written`` are.
        rows = self._store.graph.query("profile_entity_signature")
        signature = (rows[0]["n"], rows[0]["last_seen"]) if rows else (0, None)
        with self._lock:
            changed = signature != self._entity_signature
            self._entity_signature = signature
            if changed:
                self._snapshot = None
            if not signature[0]:
                return
            if changed:
                self._ground()
            elif written:
                self._ground(only=written)

    # --- internals -----------------------------------------------------------------------------

    def _uid(self, user: str) -> str:
        return user_key(user, self._max_chars)

    def _instruction(
        self, what: str, *, alias: Any, description: Any, **fields: Any
    ) -> Instruction:
        """The Instruction an add_* call describes, every text of it within max_text_chars."""
        alias = validation.text(f"{what}: alias", alias, self._max_chars)
        description = validation.optional_text(f"{what}: description", description)
        try:
            instruction = Instruction(alias=alias, description=description or "", **fields)
        except ValidationError as exc:
            raise InvalidInputError(f"{what}: {inputs.first_error(exc)}") from None
        inputs.check_lengths(what, instruction, self._max_chars)
        return instruction

    def _read(self) -> ProfileSnapshot:
        if self._snapshot is None:
            self._snapshot = read_snapshot(self._store, self._dim)
        return self._snapshot

    def _write(self, user: str, instruction: Instruction, source: str) -> ProfileUpdate:
        uid = self._uid(user)
        now = float(self._clock())
        description = instruction.description or describe(instruction)
        if instruction.subtype == OBJECT_SEMANTICS:
            content = [description] + [spec.text for spec in instruction.objects]
        else:
            content = [description] + [step.text for step in instruction.steps]
        # One embedding call for every phrase of the instruction (the model is the slow part).
        phrases = [instruction.alias, " ".join(content)] + [o.text for o in instruction.objects]
        for step in instruction.steps:
            phrases += [a.spec.text for a in step.arguments]
        unique = list(dict.fromkeys(phrases))
        vectors = dict(zip(unique, self._host.embed(unique), strict=True))
        with self._lock:
            snapshot = self._read()
            existing = existing_knowledge(
                snapshot,
                uid,
                instruction.subtype,
                instruction.alias,
                self._host.embed,
                vectors[instruction.alias],
            )
            knowledge_id = existing.id if existing is not None else uuid.uuid4().hex
            update = ProfileUpdate(
                knowledge_id=knowledge_id,
                action="updated" if existing is not None else "added",
                subtype=instruction.subtype,
                alias=instruction.alias,
                source=source,
            )
            write = knowledge_write(
                instruction,
                update,
                existing,
                snapshot,
                vectors,
                (uid, " ".join(user.split()), now),
                description,
                content,
            )
            self._store.apply(write.change())
            self._snapshot = None
            touched = set(write.composed)
            touched.update(node for _, kind, node, _ in write.targets if kind == "object")
            self._refresh_grounding(touched)
        return update
