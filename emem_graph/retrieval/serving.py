"""Serving tools by name: the tools a capability attaches, their definitions in
function-calling form, dispatch by name and (callable, definition) pairs for registration.

RetrievalTools (tools.py) is a ServedTools: its own ``@tool_method`` methods are served beside
the attached ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from emem_graph.errors import InvalidInputError
from emem_graph.retrieval.dispatch import dispatch_tool_call
from emem_graph.retrieval.schemas import ALL_SCHEMAS, GLOBAL_CHAINS, tool_definitions


class ServedTools:
    """The tools one object serves by name: its own ``@tool_method`` methods (a subclass's)
    and the tools capabilities attach, with the capabilities' concept resolvers."""

    def __init__(self) -> None:
        self._attached: dict[str, Callable[..., str]] = {}
        # Profile aliases: an attached capability's resolve_concept(text) -> text | None
        # turns "my favorite cup" into what it names before locate and recall search.
        self._resolvers: list[Callable[[str], str | None]] = []

    def attach(self, owner: object, names: list[str]) -> None:
        """Serve a capability's tools (spatial, areas, profile): ``names`` are ``owner``'s
        ``@tool_method`` methods, whose schemas the capability registered.

        Raises:
            ValueError: a name has no registered schema, or is served already.
        """
        for name in names:
            if name not in ALL_SCHEMAS:
                raise ValueError(f"tool {name!r} has no registered schema")
            if name in self._attached or hasattr(type(self), name):
                raise ValueError(f"tool {name!r} is served already")
            self._attached[name] = getattr(owner, name)
        resolver = getattr(owner, "resolve_concept", None)
        if callable(resolver) and resolver not in self._resolvers:
            self._resolvers.append(resolver)

    def _global(self, tool: str, query: str, n_results: int, filters: Mapping[str, object]) -> str:
        """A core tool's global scope: the attached global_search (area memory)."""
        given = sorted(name for name, value in filters.items() if value is not None)
        if given:
            raise InvalidInputError(
                f"{tool}: scope 'global' walks the whole area hierarchy and takes no filters "
                f"(got {', '.join(given)})"
            )
        walk = self._attached.get("global_search")
        if walk is None:
            raise InvalidInputError(f"{tool}: scope 'global' needs the area memory")
        chains = min(n_results, GLOBAL_CHAINS)
        return walk(query, n_results=chains, n_walks=max(chains, 3))

    def tool(self, name: str) -> Callable[..., str]:
        """The callable behind tool ``name`` (a core tool, an action or an attached tool).

        Raises:
            AttributeError: no such tool is served here.
        """
        if name in self._attached:
            return self._attached[name]
        method: Callable[..., str] = getattr(self, name)
        return method

    def definitions(self, include_actions: bool = False) -> list[dict[str, Any]]:
        """The tools served here (and optionally the planner actions) in OpenAI
        function-calling form."""
        return [d for d in tool_definitions(include_actions) if self._serves(d)]

    def dispatch(self, tool_name: Any, arguments: Any = None) -> str:
        """Run a tool by name; returns its text or one line ``Error: ...``, never raises."""
        return dispatch_tool_call(self, tool_name, arguments)

    def for_registration(
        self, include_actions: bool = False
    ) -> list[tuple[Callable[..., str], dict[str, Any]]]:
        """(callable, definition) pairs for frameworks that register tools one by one."""
        return [
            (self.tool(definition["function"]["name"]), definition)
            for definition in self.definitions(include_actions)
        ]

    def _serves(self, definition: dict[str, Any]) -> bool:
        name = definition["function"]["name"]
        return name in self._attached or hasattr(type(self), name)

    def _resolved(self, text: str) -> str:
        """``text``, or what an attached resolver says it stands for (a profile alias)."""
        for resolver in self._resolvers:
            found = resolver(text)
            if found:
                return found
        return text
