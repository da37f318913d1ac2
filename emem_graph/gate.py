"""CallGate: the memory's public calls against close(), so that a call racing close() either
finishes on open stores or raises MemoryClosedError, never a store's own error; and the two
other wrappers of the facade's methods (writes: refused on a read-only memory; Delegated: the
same-named method of one of its parts)."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, cast, overload

from emem_graph.errors import MemoryClosedError, ReadOnlyMemoryError

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
R = TypeVar("R")


class CallGate:
    """Counts the calls inside; once closed, refuses new ones and lets close() wait for the
    calls already inside to finish (they then run on open stores, and what they acknowledged
    is written by close's last flush).

    Reentrant per thread: a call made inside a call (a tool's flush) is not counted again and
    is never refused, and close() from inside a call does not wait for itself.
    """

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._inside = 0
        self._closed = False
        self._finished = threading.Event()
        self._local = threading.local()
        self._pid = os.getpid()

    def __enter__(self) -> None:
        depth: int = getattr(self._local, "depth", 0)
        if depth == 0:
            self._check_process()
            with self._cv:
                if self._closed:
                    raise MemoryClosedError("this memory is closed")
                self._inside += 1
        self._local.depth = depth + 1

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        depth: int = self._local.depth - 1
        self._local.depth = depth
        if depth == 0:
            with self._cv:
                self._inside -= 1
                if self._inside == 0:
                    self._cv.notify_all()

    def close(self) -> bool:
        """Refuse new calls and wait for the calls inside (other threads') to finish.

        Returns:
            True for the first close() (which calls finished() when it is done), False when
            the gate was closed already: after waiting for that first close to finish, unless
            this thread is inside a call (the first close may be waiting for it), or in a
            process forked from the one that opened the memory (nothing of it is this
            process's to close).
        """
        if os.getpid() != self._pid:
            return False
        own = 1 if getattr(self._local, "depth", 0) > 0 else 0
        with self._cv:
            first = not self._closed
            self._closed = True
            if first:
                self._cv.wait_for(lambda: self._inside <= own)
        if not first and not own:
            self._finished.wait()
        return first

    def finished(self) -> None:
        """The first close() is done: a close() waiting in another thread returns."""
        self._finished.set()

    def _check_process(self) -> None:
        if os.getpid() != self._pid:
            raise MemoryClosedError(
                f"this memory was opened in process {self._pid}; a process forked from it "
                "cannot use it (its threads and engine handles stayed behind): open the "
                "memory again in this process"
            )


class Gated(Protocol):
    """An object whose public calls pass its ``_gate``."""

    _gate: CallGate


def gate_of(owner: object) -> CallGate:
    """The gate ``owner``'s calls pass: its own ``_gate`` (the memory), or its host memory's
    (``_host.in_use()``: a capability shares the memory's gate, so close() waits for its calls
    and a call from one into the other is reentrant, not counted twice)."""
    gate = getattr(owner, "_gate", None)
    if isinstance(gate, CallGate):
        return gate
    in_use = getattr(getattr(owner, "_host", None), "in_use", None)
    if in_use is None:
        raise TypeError(f"{type(owner).__name__} has no _gate and no _host with in_use()")
    found: CallGate = in_use()
    return found


def while_open(fn: F) -> F:
    """Run the method inside its object's gate (``gate_of``): MemoryClosedError once the
    memory is closed; close() waits for the calls inside."""

    @functools.wraps(fn)
    def call(self: Gated, *args: Any, **kwargs: Any) -> Any:
        with gate_of(self):
            return fn(self, *args, **kwargs)

    return call  # type: ignore[return-value]


def writes(method: F) -> F:
    """Mark a facade method that writes: on a memory opened read-only (``self.read_only``) it
    raises ReadOnlyMemoryError before anything is touched."""

    @functools.wraps(method)
    def refusing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.read_only:
            raise ReadOnlyMemoryError(
                f"{method.__name__}: refused, the memory {self.config.db_path} is open "
                "read-only (read_only=True): nothing was written; open it without read_only "
                "to write"
            )
        return method(self, *args, **kwargs)

    return cast(F, refusing)


class Delegated(Generic[P, R]):
    """A facade method that is the same-named method of one of the memory's parts (its
    retrieval tools, places, areas, profile): signature, defaults and docstring are the part's,
    written once there. On the class it is the part's function (for inspection)."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self._part = part
        self._method = method
        self._name = method.__name__
        self.__doc__ = method.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self._name:
            raise TypeError(f"facade method {name} delegates to a method named {self._name}")

    @overload
    def __get__(self, memory: None, owner: type) -> Callable[Concatenate[Any, P], R]: ...

    @overload
    def __get__(self, memory: object, owner: type | None = None) -> Callable[P, R]: ...

    def __get__(
        self, memory: object | None, owner: type | None = None
    ) -> Callable[P, R] | Callable[Concatenate[Any, P], R]:
        if memory is None:
            return self._method
        bound: Callable[P, R] = getattr(getattr(memory, self._part), self._name)
        return bound
