"""The profile evaluation (``emem-graph profile-eval``): facts and routines told, changed, and
asked for later, on a real memory with the real embedding model.

For each way in (``api``: the structured API; ``rules``: instructions in plain English through
update_from_instruction without an LLM) it measures:

- retrieval: the right knowledge in the top 1 / top 3 of ``user_profile`` for each later,
  underspecified request (searching the requesting user's profile; also across every user);
- step order: every routine's stored steps (read back from the graph after a reopen, in BEFORE
  order) equal the steps given, and its description lists them in that order;
- updates: a changed routine keeps one knowledge node (same id) with the new steps;
- node reuse: paraphrased references reuse the node of the first phrasing; near misses
  ("red cup" after "blue cup") get their own node;
- grounding: each fact's object is GROUNDED_AS its entity (not the distractor beside it), for
  entities seen before and after the fact, and ``locate(alias)`` lands on the entity.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emem_graph.evals.profile_data import (
    CHANGED_ROUTINES,
    FACTS,
    NEAR_MISSES,
    PARAPHRASES,
    ROUTINES,
    USERS,
    Fact,
    Routine,
)
from emem_graph.profile.models import StepSpec
from emem_graph.profile.parse import parse_step

PLACE_PAIRS = 14
"""The first PARAPHRASES are places (step locations), the rest objects."""


@dataclass
class Figures:
    """The figures of one way in (see the module docstring)."""

    mode: str
    items: int = 0
    top1: int = 0
    top3: int = 0
    top3_any_user: int = 0
    misses: list[str] = field(default_factory=list)
    routines: int = 0
    order_kept: int = 0
    order_failures: list[str] = field(default_factory=list)
    updates: int = 0
    updates_in_place: int = 0
    paraphrases: int = 0
    reused: int = 0
    reuse_failures: list[str] = field(default_factory=list)
    near_misses: int = 0
    kept_apart: int = 0
    merge_failures: list[str] = field(default_factory=list)
    grounded: int = 0
    grounded_total: int = 0
    located: int = 0
    grounding_failures: list[str] = field(default_factory=list)
    write_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The figures as report lines."""

        def pct(a: int, b: int) -> str:
            return f"{a}/{b} = {100.0 * a / b:.1f}%" if b else "n/a"

        out = [
            f"[{self.mode}] requests: right knowledge in top 3: {pct(self.top3, self.items)}; "
            f"top 1: {pct(self.top1, self.items)}; top 3 across every user's profile: "
            f"{pct(self.top3_any_user, self.items)}",
            f"[{self.mode}] step order preserved: {pct(self.order_kept, self.routines)} routines",
            f"[{self.mode}] changed routines updated in place (one node, new steps): "
            f"{pct(self.updates_in_place, self.updates)}",
            f"[{self.mode}] paraphrased references reusing the right node: "
            f"{pct(self.reused, self.paraphrases)}; near misses kept apart: "
            f"{pct(self.kept_apart, self.near_misses)}",
            f"[{self.mode}] objects grounded in their entity: "
            f"{pct(self.grounded, self.grounded_total)}; locate(alias) on the entity: "
            f"{pct(self.located, self.grounded_total)}",
        ]
        if self.write_ms and self.search_ms:
            out.append(
                f"[{self.mode}] median write {statistics.median(self.write_ms):.0f} ms, "
                f"median user_profile search {statistics.median(self.search_ms):.1f} ms"
            )
        for label, failures in (
            ("missed", self.misses),
            ("order", self.order_failures),
            ("not reused", self.reuse_failures),
            ("wrongly merged", self.merge_failures),
            ("grounding", self.grounding_failures),
        ):
            out.extend(f"[{self.mode}]   {label}: {f}" for f in failures)
        return out


def expected_steps(steps: Sequence[str]) -> list[str]:
    """The step texts the profile should store for these phrases, in order."""
    parsed: list[StepSpec] = []
    for phrase in steps:
        step = parse_step(phrase, parsed[-1] if parsed else None)
        if step is None:
            raise ValueError(f"evaluation step {phrase!r} is not a step")
        parsed.append(step)
    return [s.text for s in parsed]


def fact_instruction(fact: Fact) -> str:
    """A fact as a user would say it."""
    verb = "are" if len(fact.objects) > 1 else "is"
    return f"The {' and the '.join(fact.objects)} {verb} {fact.alias}"


def routine_instruction(routine: Routine) -> str:
    """A routine as a user would say it."""
    return f"For {routine.alias}, " + ", then ".join(routine.steps)


def steps_per_run() -> int:
    """Writes and searches of one run (for a progress bar)."""
    return 2 * len(FACTS) + 3 * len(ROUTINES) + len(CHANGED_ROUTINES) + 4


def run(
    mode: str,
    make_memory: Callable[[str], Any],
    workdir: Path,
    progress: Callable[[int], object] | None = None,
) -> Figures:
    """Evaluate one way in ("api" or "rules") on a new memory in ``workdir``; ``progress(1)``
    is called after each write and each request."""
    figures = Figures(mode)
    tick = progress or (lambda _n: None)
    path = str(workdir / f"profile-{mode}")
    memory = make_memory(path)
    profile = memory.profile
    targets: list[tuple[str, str, str]] = []  # (user, request, knowledge id)

    def tell_fact(user: str, fact: Fact) -> Any:
        start = time.perf_counter()
        if mode == "api":
            update = profile.add_object_semantics(user, fact.alias, list(fact.objects))
        else:
            update = profile.update_from_instruction(fact_instruction(fact), user)
        figures.write_ms.append(1000 * (time.perf_counter() - start))
        tick(1)
        return update

    def tell_routine(user: str, routine: Routine) -> Any:
        start = time.perf_counter()
        if mode == "api":
            update = profile.add_user_pattern(user, routine.alias, list(routine.steps))
        else:
            update = profile.update_from_instruction(routine_instruction(routine), user)
        figures.write_ms.append(1000 * (time.perf_counter() - start))
        tick(1)
        return update

    # Entities of the first half of the facts are seen before the facts are told.
    def add_entities(i: int, fact: Fact) -> None:
        memory.add_entity(fact.entity, 20.0 * i, 10.0)
        memory.add_entity(fact.distractor, 20.0 * i, 13.0)

    half = len(FACTS) // 2
    for i, fact in enumerate(FACTS[:half]):
        add_entities(i, fact)
    memory.flush()
    for i, fact in enumerate(FACTS):
        user = USERS[i % len(USERS)]
        update = tell_fact(user, fact)
        targets.append((user, fact.request, update.knowledge_id))
    for i, routine in enumerate(ROUTINES):
        user = USERS[i % len(USERS)]
        update = tell_routine(user, routine)
        targets.append((user, routine.request, update.knowledge_id))
    for i, fact in enumerate(FACTS[half:], start=half):
        add_entities(i, fact)
    memory.flush()

    # Changed routines: same user, same alias; the knowledge must be updated in place.
    final: dict[tuple[str, str], Routine] = {}
    for i, routine in enumerate(ROUTINES):
        final[(USERS[i % len(USERS)], routine.alias)] = routine
    for changed in CHANGED_ROUTINES:
        index = next(i for i, r in enumerate(ROUTINES) if r.alias == changed.alias)
        user = USERS[index % len(USERS)]
        before = targets[len(FACTS) + index][2]
        update = tell_routine(user, changed)
        figures.updates += 1
        same = [k for k in profile.knowledge(user) if k.alias == changed.alias]
        if update.action == "updated" and update.knowledge_id == before and len(same) == 1:
            figures.updates_in_place += 1
        final[(user, changed.alias)] = changed

    _reuse(figures, profile)
    tick(4)
    memory.close()

    # Everything below reads the stored graph of a reopened memory.
    memory = make_memory(path)
    profile = memory.profile
    for user, request, knowledge_id in targets:
        figures.items += 1
        start = time.perf_counter()
        hits = profile.search(request, user=user, k=3)
        figures.search_ms.append(1000 * (time.perf_counter() - start))
        tick(1)
        ids = [h.knowledge.id for h in hits]
        if ids[:1] == [knowledge_id]:
            figures.top1 += 1
        if knowledge_id in ids:
            figures.top3 += 1
        else:
            found = ", ".join(h.knowledge.alias for h in hits) or "nothing"
            figures.misses.append(f"{user}: {request!r} -> {found}")
        if knowledge_id in [h.knowledge.id for h in profile.search(request, k=3)]:
            figures.top3_any_user += 1
    for (user, alias), routine in final.items():
        tick(1)
        figures.routines += 1
        want = expected_steps(routine.steps)
        stored = [k for k in profile.knowledge(user) if k.alias == alias]
        got = [p.text for p in stored[0].patterns] if len(stored) == 1 else []
        rendered = profile.search(alias, user=user, k=1)
        text = rendered[0].description if rendered else ""
        positions = [text.find(f"{n}) {s}") for n, s in enumerate(want, start=1)]
        if got == want and -1 not in positions and positions == sorted(positions):
            figures.order_kept += 1
        else:
            figures.order_failures.append(f"{user} {alias}: {got} != {want}")
    snapshot = profile.snapshot()
    for i, fact in enumerate(FACTS):
        user = USERS[i % len(USERS)].lower()
        figures.grounded_total += 1
        tick(1)
        knowledge = next(k for k in snapshot.knowledge_of(user) if k.alias == fact.alias)
        # The object the entity is (the first named; the rules may split a phrase at "and").
        objects = [snapshot.objects[o] for o in knowledge.object_ids]
        first = next((o for o in objects if o.name == fact.objects[0]), objects[0])
        grounded_as = first.groundings[0].name if first.groundings else None
        if grounded_as == fact.entity:
            figures.grounded += 1
        profile.current_user = user
        located = memory.locate(fact.alias).splitlines()[0]
        if located == f"Location: ({20.0 * i:.1f}, 10.0, 0.0)":
            figures.located += 1
        if grounded_as != fact.entity or not located.endswith(f"({20.0 * i:.1f}, 10.0, 0.0)"):
            figures.grounding_failures.append(
                f"{first.name!r} grounded as {grounded_as!r} (entity {fact.entity!r}); "
                f"locate({fact.alias!r}): {located}"
            )
    profile.current_user = None
    memory.close()
    return figures


def _reuse(figures: Figures, profile: Any) -> None:
    def steps(pairs: Sequence[tuple[str, str]], which: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for i, pair in enumerate(pairs):
            if i < PLACE_PAIRS:
                out.append({"action": "put", "object": "box", "location": pair[which]})
            else:
                out.append({"action": "bring", "object": pair[which]})
        return out

    def node_of(user: str, alias: str, index: int) -> str:
        knowledge = next(k for k in profile.knowledge(user) if k.alias == alias)
        arguments = knowledge.patterns[index].arguments
        return arguments[-1][1]

    for user, pairs, paraphrased in (("Dana", PARAPHRASES, True), ("Eli", NEAR_MISSES, False)):
        profile.add_user_pattern(user, "my first chores", steps(pairs, 0))
        profile.add_user_pattern(user, "my weekend errands", steps(pairs, 1))
        for i, (first, later) in enumerate(pairs):
            same = node_of(user, "my first chores", i) == node_of(user, "my weekend errands", i)
            if paraphrased:
                figures.paraphrases += 1
                figures.reused += same
                if not same:
                    figures.reuse_failures.append(f"{later!r} for {first!r}")
            else:
                figures.near_misses += 1
                figures.kept_apart += not same
                if same:
                    figures.merge_failures.append(f"{later!r} merged into {first!r}")


def main(*, progress: bool = True) -> list[str]:
    """Run the evaluation for both ways in and return the report lines (with a progress bar
    on stderr when ``progress``)."""
    from tqdm import tqdm

    from emem_graph.ingest.embeddings import SentenceTransformerEmbedder
    from emem_graph.memory import SpatioTemporalMemory

    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    lines = [
        f"profile evaluation: {len(FACTS)} facts + {len(ROUTINES)} routines "
        f"({len(FACTS) + len(ROUTINES)} later requests), {len(CHANGED_ROUTINES)} changed "
        f"routines, {len(PARAPHRASES)} paraphrased references, {len(NEAR_MISSES)} near misses; "
        f"users {', '.join(USERS)}; all-MiniLM-L6-v2"
    ]
    with tempfile.TemporaryDirectory() as workdir:
        for mode in ("api", "rules"):

            def make(path: str) -> Any:
                return SpatioTemporalMemory(path, embedding_provider=embedder)

            with tqdm(total=steps_per_run(), desc=mode, unit="step", disable=not progress) as bar:
                figures = run(mode, make, Path(workdir), progress=bar.update)
            lines.extend(figures.lines())
    return lines


if __name__ == "__main__":
    print("\n".join(main()))
