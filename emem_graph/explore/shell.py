"""An interactive read-only Cypher shell on a memory directory (``emem-graph shell``)."""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from emem_graph.errors import EmemGraphError, InvalidInputError
from emem_graph.explore.cypher import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_MEMORY_MB,
    DEFAULT_TIMEOUT_S,
    FORMATS,
    CypherResult,
    CypherSandbox,
    cypher_code,
    format_named_queries,
    format_result,
    list_named_queries,
    named_query,
    parameters_of,
    parse_params,
    split_statements,
)

HELP = """\
Type a Cypher statement; it runs when a line ends with ';', at a blank line or a :command.
The memory is open read-only: writes are refused.
  :help                 this text
  :queries              the named queries, with their $parameters
  :query NAME [k=v ...] run a named query
  :param k=v [k=v ...]  set parameters for the statements that use them ($k)
  :params               show the parameters set
  :format table|json|csv
  :limit N              the most rows shown (default 1000)
  :timeout SECONDS      stop a statement after this long (default 30)
  :quit                 leave (so does end of input)"""


def shell(
    directory: str | Path,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    limit: int = DEFAULT_LIMIT,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    output: str = "table",
    max_memory_mb: int = DEFAULT_MAX_MEMORY_MB,
) -> None:
    """Read statements from ``stdin`` and print their rows until ``:quit`` or end of input.

    A statement may span lines; it ends with a line ending in ``;``, a blank line or a
    ``:command`` line.
    Errors are printed to ``stderr`` and the shell goes on. A prompt is shown only when stdin
    is a terminal, so the shell also runs a script piped into it.

    Args:
        directory: the memory's directory; one sandboxed process (explore.sandbox) holds it
            read-only for the whole session (a new one after a statement was stopped).
        stdin, stdout, stderr: the streams (default: the process's).
        limit, timeout_s, output: the starting row limit, timeout and format.
        max_memory_mb: stop a statement whose process passes this resident memory.

    Raises:
        InvalidInputError, DatabaseLockedError, SchemaVersionError: the memory cannot be opened
            (see open_graph).
    """
    with CypherSandbox(directory, max_memory_mb=max_memory_mb) as sandbox:
        session = _Session(
            sandbox,
            stdout or sys.stdout,
            stderr or sys.stderr,
            limit=limit,
            timeout_s=timeout_s,
            output=output,
        )
        source = stdin or sys.stdin
        if source.isatty():
            session.out.write(f"emem_graph shell on {directory} (read-only); :help for help\n")
        session.loop(_lines(source, session))


class _Session:
    """The state of one shell: its sandbox, settings and the statement being typed."""

    def __init__(
        self,
        sandbox: CypherSandbox,
        out: TextIO,
        err: TextIO,
        *,
        limit: int,
        timeout_s: float,
        output: str,
    ) -> None:
        self.sandbox = sandbox
        self.out = out
        self.err = err
        self.limit = limit
        self.timeout_s = timeout_s
        self.output = output
        self.params: dict[str, Any] = {}
        self.pending: list[str] = []

    def loop(self, lines: Iterator[str]) -> None:
        for line in lines:
            stripped = line.strip()
            if stripped.startswith(":"):  # a command also ends the statement typed before it
                if self.pending:
                    text, self.pending = "\n".join(self.pending), []
                    self._guarded(self._run_text, text)
                if not self._guarded(self._command, stripped):
                    return
                continue
            if stripped:
                self.pending.append(line.rstrip("\r\n"))
            text = "\n".join(self.pending)
            if self.pending and (not stripped or _ends_statement(text)):
                self.pending = []
                self._guarded(self._run_text, text)
        if self.pending:
            self._guarded(self._run_text, "\n".join(self.pending))

    def prompt(self) -> str:
        return "   ...> " if self.pending else "emem> "

    def _guarded(self, action: Callable[[str], bool], text: str) -> bool:
        try:
            return action(text)
        except EmemGraphError as exc:
            self.err.write(f"error: {exc}\n")
            self.err.flush()
            return True

    def _run_text(self, text: str) -> bool:
        for statement in split_statements(text):
            needed = parameters_of(statement)
            params = {k: v for k, v in self.params.items() if k in needed}
            self._show(
                self.sandbox.run(statement, params, limit=self.limit, timeout_s=self.timeout_s)
            )
        return True

    def _show(self, result: CypherResult) -> None:
        self.out.write(format_result(result, self.output) + "\n")
        self.out.flush()
        if result.truncated and self.output != "table":  # a table says so in its last line
            self.err.write(f"(only the first {len(result.rows)} rows: :limit N shows more)\n")
            self.err.flush()

    def _command(self, line: str) -> bool:
        name, _, rest = line.partition(" ")
        argument = rest.strip()
        if name in (":quit", ":q", ":exit"):
            return False
        if name == ":help":
            self.out.write(HELP + "\n")
        elif name == ":queries":
            self.out.write(format_named_queries(list_named_queries()) + "\n")
        elif name == ":query":
            query_name, _, pairs = argument.partition(" ")
            query = named_query(query_name)
            given = {**self.params, **parse_params(_words(pairs))}
            params = {k: v for k, v in given.items() if k in query.parameters}
            self._show(
                self.sandbox.run(query.cypher, params, limit=self.limit, timeout_s=self.timeout_s)
            )
        elif name == ":param":
            self.params.update(parse_params(_words(argument)))
        elif name == ":params":
            for key, value in self.params.items():
                self.out.write(f"{key}={value!r}\n")
        elif name == ":format":
            if argument not in FORMATS:
                raise InvalidInputError(f"the format is one of {', '.join(FORMATS)}")
            self.output = argument
        elif name == ":limit":
            self.limit = _positive(argument, int, "the row limit")
        elif name == ":timeout":
            self.timeout_s = _positive(argument, float, "the timeout")
        else:
            raise InvalidInputError(f"unknown command {name} (:help lists the commands)")
        self.out.flush()
        return True


def _ends_statement(text: str) -> bool:
    try:
        return cypher_code(text).rstrip().endswith(";")
    except EmemGraphError:  # unreadable or over the length bound: run it, to print the refusal
        return True


def _words(text: str) -> list[str]:
    """Split ``k=v`` pairs like a shell does, so ``name='red chair'`` is one pair."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise InvalidInputError(f"cannot read {text!r}: {exc}") from exc


def _positive(text: str, kind: type[int] | type[float], what: str) -> Any:
    try:
        value = kind(text)
    except ValueError:
        value = 0
    if not value > 0:
        raise InvalidInputError(f"{what} must be a positive number, not {text!r}")
    return value


def _lines(source: TextIO, session: _Session) -> Iterator[str]:
    """Lines of input: with a prompt and line editing on a terminal, plain otherwise."""
    if not source.isatty():
        yield from source
        return
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (line editing and history for input())
    while True:
        try:
            yield input(session.prompt())
        except EOFError:
            session.out.write("\n")
            return
        except KeyboardInterrupt:
            session.out.write("\n")
            session.pending = []
