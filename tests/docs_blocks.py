"""Run every fenced code block of README.md and docs/*.md, and compare what it prints.

    python tests/docs_blocks.py            # check: run every block, report stale outputs
    python tests/docs_blocks.py --write    # regenerate: write the real outputs into the pages
    python tests/docs_blocks.py --write docs/cli.md   # one page

tests/test_docs.py runs the check (and the link checks); the regeneration is the one command to
run after a change of what a command prints. How the blocks are read (docs/docs-tests.md):

- ```console: lines starting with ``$ `` are commands (a line ending in ``\\`` continues), run
  with bash in the page's working directory; the lines after a command are what it prints
  (stdout, then stderr without progress bars). Exit codes are not checked: the output is.
- ```bash: every line is a command; the block must exit 0. Nothing is compared.
- ```python: executed in one Python process per page (one namespace, like a notebook); a
  ```text block right after it (blank lines and a marker between at most) is what it prints.
- A marker comment on the line before a block changes that:
  ``<!-- docs-test: not run: REASON -->`` the block is not run (an install, the 20-minute suite,
  a 1M-observation run, a ROS graph); its ``emem-graph`` commands must still parse with the real
  command line parser, the scripts it names must exist, its Python must compile and its imports
  resolve, its JSON must parse.
  ``<!-- docs-test: output varies: REASON -->`` the output is compared loosely: the same
  commands and calls in the same order, each answer of the same shape and about the same
  length (ties among equal records are ordered by random ids).
- Any other block (a ```text not after a python block, a fence without a language) is an error:
  every block is either run or says why not.

Outputs are compared after normalising what differs from run to run: 32-hex ids, sizes, durations,
rates and percentages. Each page runs in a fresh temporary directory, so relative paths are the
same in every run.
"""

from __future__ import annotations

import argparse
import ast
import atexit
import difflib
import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))
import without_emem

ROOT = Path(__file__).resolve().parents[1]
REGENERATE = "python tests/docs_blocks.py --write"
MARKER = re.compile(r"<!--\s*docs-test:\s*(not run|output varies)\s*:\s*(.*?)\s*-->")
FENCE = re.compile(r"^( *)(`{3,})(\S*)\s*$")  # a fence may be indented (inside a list)
KNOWN = {"console", "bash", "python", "text", "json", "cypher", "yaml"}


def pages() -> list[Path]:
    """README.md and every docs/*.md, in a fixed order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


# The pages that took longest start first, so that two workers finish together; a page not
# named here starts after them.
LONGEST_FIRST = ["docs/cli.md", "docs/guide.md", "README.md", "docs/tools.md", "docs/areas.md"]


def run_order(paths: list[Path]) -> list[Path]:
    """The order pages run in (the test's and the regeneration's): the longest first."""
    return sorted(
        paths,
        key=lambda p: LONGEST_FIRST.index(shown(p)) if shown(p) in LONGEST_FIRST else 99,
    )


def shown(path: Path) -> str:
    """A page's path as the messages name it (relative to the repository when inside it)."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


@dataclass
class Block:
    path: Path
    lang: str
    start: int  # index of the opening fence line (0-based)
    end: int  # index of the closing fence line
    body: list[str]
    marker: str | None = None  # "not run" | "output varies"
    reason: str = ""
    output_of: Block | None = None  # a text block: the python block whose output it is
    output: Block | None = None  # a python block: its text output block
    indent: str = ""  # of a fence inside a list

    @property
    def where(self) -> str:
        return f"{shown(self.path)}:{self.start + 1}"


def parse(path: Path, lines: list[str] | None = None) -> list[Block]:
    """Every fenced block of a page, with its marker and python/text pairing."""
    if lines is None:
        lines = path.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, lang = match.groups()
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            j += 1
        if j == len(lines):
            raise ValueError(f"{shown(path)}:{i + 1}: a code fence is never closed")
        body = [line.removeprefix(indent) for line in lines[i + 1 : j]]
        block = Block(path, lang, i, j, body, indent=indent)
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0 and (marker := MARKER.search(lines[k])):
            block.marker, block.reason = marker.group(1), marker.group(2)
        if blocks and lang == "text" and blocks[-1].lang == "python" and block.marker != "not run":
            between = lines[blocks[-1].end + 1 : i]
            if all(not line.strip() or MARKER.search(line) for line in between):
                block.output_of = blocks[-1]
                blocks[-1].output = block
        blocks.append(block)
        i = j + 1
    return blocks


# -- comparison -------------------------------------------------------------------------------

_NORMAL = [
    (re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\dZ?"), "<datetime>"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "<clock>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<id>"),
    (re.compile(r"\b\d[\d,]*(\.\d+)? ?(B|KB|MB|GB|KiB|MiB|GiB)\b"), "<size>"),
    (re.compile(r"\b\d[\d,]*(\.\d+)? ?(messages|observations|obs)/s\b"), "<rate>"),
    (re.compile(r"\b\d[\d,]*(\.\d+)? ?(s|ms)\b"), "<duration>"),
    (re.compile(r"\b\d+(\.\d+)?%"), "<percent>"),
]


def normalise(text: str) -> list[str]:
    out = []
    for line in text.rstrip("\n").split("\n"):
        for pattern, replacement in _NORMAL:
            line = pattern.sub(replacement, line)
        out.append(line.rstrip())
    while out and not out[-1]:
        out.pop()
    return out


def _groups(lines: list[str]) -> list[tuple[str, list[str]]]:
    groups: list[tuple[str, list[str]]] = [("", [])]
    for line in lines:
        if line.startswith(("$ ", ">>> ")):
            groups.append((line, []))
        elif line.strip():
            groups[-1][1].append(line)
    return groups


def _shape(line: str) -> str:
    """What kind of line it is: its indentation and first word, digits as 0."""
    head = re.sub(r"\d+", "0", line).split(" ")
    indent = len(line) - len(line.lstrip())
    return " " * indent + next((word for word in head if word), "")


def loosely_equal(expected: str, actual: str) -> str | None:
    """None when the outputs agree in calls, shapes and lengths; else what differs."""
    want, got = _groups(normalise(expected)), _groups(normalise(actual))
    if [call for call, _ in want] != [call for call, _ in got]:
        return "the commands or calls differ"
    for (call, a), (_, b) in zip(want, got, strict=True):
        if (
            not call and len(want) > 1 and a != b
        ):  # the lines before the first call are compared exactly
            return f"the header differs: {a} != {b}"
        if bool(a) != bool(b) or (a and _shape(a[0]) != _shape(b[0])):
            return f"the answer to {call!r} has another form"
        if abs(len(a) - len(b)) > max(3, len(a) // 2):
            return f"the answer to {call!r} has {len(b)} lines, the page shows {len(a)}"
    return None


# -- running ----------------------------------------------------------------------------------

_PROGRESS = re.compile(r"\d+%\||it/s\]|s/it\]|^Loading weights")

_WORKER = textwrap.dedent(
    """
    import contextlib, io, json, sys, traceback
    namespace = {"__name__": "__main__"}
    protocol = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        buffer, errors = io.StringIO(), io.StringIO()
        error = None
        try:
            if "argv" in request:  # an emem-graph command, run in this process
                from emem_graph.cli import main
                with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(errors):
                    try:
                        main(request["argv"])
                    except SystemExit:
                        pass
            else:  # a python block: its stderr stays a real file (subprocesses inherit it)
                with contextlib.redirect_stdout(buffer):
                    exec(compile(request["code"], "<docs block>", "exec"), namespace)
        except BaseException:
            error = traceback.format_exc()
        answer = {"out": buffer.getvalue(), "err": errors.getvalue(), "error": error}
        protocol.write(json.dumps(answer) + "\\n")
        protocol.flush()
    """
)


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", COLUMNS="100")
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    return env


def _without_progress(stderr: str) -> str:
    lines = [line.rsplit("\r", 1)[-1] for line in stderr.split("\n")]
    return "\n".join(line for line in lines if not _PROGRESS.search(line))


class Session:
    """One page's working directory and Python process."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.env = environment()
        self.workers: dict[str, subprocess.Popen[str]] = {}

    def shell(self, command: str, timeout: float = 300) -> tuple[int, str]:
        words = None if "\n" in command else shlex.split(command, comments=True)
        unquoted = re.sub(r"'[^']*'", "", command)  # bash expands nothing inside '...'
        plain = words and words[0] == "emem-graph" and not (set("|&;<>$`") & set(unquoted))
        if words and plain:  # no shell syntax: run it in the page's command process (no start-up)
            result = self._ask({"argv": words[1:]})
            if result["error"]:
                return 1, result["error"]
            return 0, self._here(result["out"] + _without_progress(result["err"] or ""))
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.directory,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return done.returncode, self._here(done.stdout + _without_progress(done.stderr))

    def _here(self, text: str) -> str:
        """The page's directory is the working directory: paths in it are shown relative."""
        for directory in {str(self.directory), str(self.directory.resolve())}:
            text = text.replace(directory + "/", "")
        return text

    def _ask(self, request: dict[str, object]) -> dict[str, str | None]:
        """A request to the page's Python process: it runs the page's Python blocks (one
        namespace) and its plain emem-graph commands, so the model loads once a page."""
        process = self.workers.get("python")
        if process is None:
            process = self.workers["python"] = subprocess.Popen(
                [sys.executable, "-c", without_emem.prelude() + _WORKER],
                cwd=self.directory,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        answer = process.stdout.readline()
        if not answer:
            return {"out": "", "err": "", "error": "the page's Python process died"}
        result: dict[str, str | None] = json.loads(answer)
        return result

    def run_python(self, code: str) -> tuple[str, str | None]:
        result = self._ask({"code": code})
        return self._here(result["out"] or ""), result["error"]

    def close(self) -> None:
        for process in self.workers.values():
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=120)


def console_commands(body: list[str]) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(body):
        line = body[i]
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\") and i + 1 < len(body):
                i += 1
                command = command[:-1] + "\n" + body[i]
            pairs.append((command, []))
        elif pairs:
            pairs[-1][1].append(line)
        else:
            raise ValueError("a console block must start with a `$ ` command line")
        i += 1
    return pairs


def command_lines(pairs: list[tuple[str, list[str]]]) -> list[str]:
    """The ``$ `` lines of a command as written in the page."""
    out: list[str] = []
    for command, _ in pairs:
        first, *rest = command.split("\n")
        out.append("$ " + first + ("\\" if rest else ""))
        for k, line in enumerate(rest):
            out.append(line + ("\\" if k < len(rest) - 1 else ""))
    return out


@dataclass
class Problem:
    where: str
    what: str
    stale: bool = False  # an output that differs (the rest are errors of the page or the code)


@dataclass
class PageResult:
    problems: list[Problem] = field(default_factory=list)
    # block start -> its new body, for the blocks whose output differs (--write writes them)
    rewrites: dict[int, list[str]] = field(default_factory=dict)
    seconds: float = 0.0  # the page's run, wall clock


def _compare(block: Block, expected: str, actual: str, result: PageResult, label: str) -> bool:
    """True when the page shows the output; else a stale problem is noted (False)."""
    if block.marker == "output varies":
        why = loosely_equal(expected, actual)
        if why is None:
            return True
        what = f"{label}: {why}"
    else:
        if normalise(expected) == normalise(actual):
            return True
        diff = difflib.unified_diff(
            normalise(expected), normalise(actual), "the page", "the real output", lineterm=""
        )
        what = f"{label}: the output differs\n" + "\n".join(list(diff)[:60])
    result.problems.append(Problem(block.where, what, stale=True))
    return False


# -- a setup several pages share ----------------------------------------------------------------

_QUIET = " > /dev/null"


def _setup_key(block: Block) -> str | None:
    """The first command of a page's first block (`> /dev/null` aside), if it is a console
    block."""
    if block.lang != "console":
        return None
    return console_commands(block.body)[0][0].removesuffix(_QUIET)


def shared_setups() -> set[str]:
    """The first commands that begin more than one page (the demo's memory, built with the
    model by README.md and docs/tools.md, with --embedder hashing by docs/cli.md and
    docs/architecture.md)."""
    seen: dict[str, int] = {}
    for path in pages():
        runnable = [b for b in parse(path) if b.marker != "not run" and b.lang in KNOWN_RUN]
        key = _setup_key(runnable[0]) if runnable else None
        if key is not None:
            seen[key] = seen.get(key, 0) + 1
    return {key for key, count in seen.items() if count > 1}


KNOWN_RUN = {"console", "bash", "python"}


@dataclass
class _Built:
    done: threading.Event = field(default_factory=threading.Event)
    files: Path | None = None  # a copy of the page directory after the command; None: failed
    output: str = ""


_built: dict[str, _Built] = {}
_built_lock = threading.Lock()
_built_root: Path | None = None


def _shared_setup(session: Session, key: str) -> str:
    """Run ``key`` in the page's (empty) directory once a process: the first page to ask
    runs it, the next ones wait for it and get a copy of what it wrote and of what it printed.
    A command that starts several pages with the same empty directory does the same on each:
    this moves out the repetition, not a check."""
    global _built_root
    with _built_lock:
        built = _built.get(key)
        builder = built is None
        if built is None:
            built = _built[key] = _Built()
        if _built_root is None:
            _built_root = Path(tempfile.mkdtemp(prefix="docs-setups-"))
            atexit.register(shutil.rmtree, _built_root, ignore_errors=True)
        root = _built_root
    if builder:
        try:
            _, built.output = session.shell(key)
            files = root / str(len(list(root.iterdir())))
            shutil.copytree(session.directory, files, symlinks=True)
            built.files = files
        finally:
            built.done.set()
        return built.output
    built.done.wait()
    if built.files is None:  # the first run failed: run it here and show what it prints
        return session.shell(key)[1]
    shutil.copytree(built.files, session.directory, symlinks=True, dirs_exist_ok=True)
    return built.output


def run_page(path: Path, keep: Path | None = None) -> PageResult:
    """Run every runnable block of a page in a fresh directory; compare or collect outputs."""
    result = PageResult()
    started = time.perf_counter()
    blocks = parse(path)
    runnable = [b for b in blocks if b.marker != "not run" and b.lang in KNOWN_RUN]
    if not runnable:
        return result
    setup = _setup_key(runnable[0]) if path in pages() else None
    shared = setup if setup in shared_setups() else None
    with tempfile.TemporaryDirectory(prefix="docs-") as tmp:
        session = Session(keep or Path(tmp))
        try:
            for block in runnable:
                if block.lang == "bash":
                    code, out = session.shell("set -e\n" + "\n".join(block.body))
                    if code != 0:
                        result.problems.append(Problem(block.where, f"exit {code}:\n{out}"))
                elif block.lang == "python":
                    out, error = session.run_python("\n".join(block.body))
                    if error:
                        result.problems.append(Problem(block.where, f"raised:\n{error}"))
                    elif block.output is not None:
                        expected = "\n".join(block.output.body)
                        if not _compare(block.output, expected, out, result, "python output"):
                            result.rewrites[block.output.start] = out.rstrip("\n").split("\n")
                    elif out.strip():
                        result.problems.append(
                            Problem(block.where, "prints output but no ```text block follows")
                        )
                else:
                    pairs = console_commands(block.body)
                    new_body: list[str] = []
                    expected_all, actual_all = [], []
                    for k, (command, expected) in enumerate(pairs):
                        if shared is not None and block is runnable[0] and k == 0:
                            out = _shared_setup(session, shared)
                            out = "" if command.endswith(_QUIET) else out
                        else:
                            _, out = session.shell(command)
                        lines = out.rstrip("\n").split("\n") if out.strip() else []
                        new_body += command_lines([(command, [])]) + lines
                        header = "$ " + command.split("\n")[0]
                        expected_all += [header, *expected]
                        actual_all += [header, *lines]
                    shown_now = "\n".join(expected_all), "\n".join(actual_all)
                    if not _compare(block, *shown_now, result, "console"):
                        result.rewrites[block.start] = new_body
        finally:
            session.close()
    result.seconds = time.perf_counter() - started
    return result


def write(path: Path, rewrites: dict[int, list[str]]) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    for block in sorted(parse(path, lines), key=lambda b: b.start, reverse=True):
        if block.start in rewrites:
            lines[block.start + 1 : block.end] = [
                block.indent + line if line else line for line in rewrites[block.start]
            ]
    path.write_text("\n".join(lines), encoding="utf-8")


# -- what a block that is not run must still satisfy ------------------------------------------


def _without_substitutions(text: str) -> str:
    """``$( ... )`` replaced by a word (the parser sees the command around it)."""
    while (start := text.find("$(")) >= 0:
        depth, end = 0, start + 1
        while end < len(text):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
            end += 1
        text = text[:start] + "VALUE" + text[end + 1 :]
    return text


def _emem_graph_commands(block: Block) -> Iterator[list[str]]:
    """The argument lists of the emem-graph commands of a console or bash block."""
    if block.lang == "console":
        text = "\n".join(command for command, _ in console_commands(block.body))
    else:
        text = "\n".join(block.body)
    text = _without_substitutions(text.replace("\\\n", " "))
    for line in text.split("\n"):
        for part in re.split(r"&&|\|\||;|\|", line.split(" #")[0]):
            words = part.strip().split(None, 1)
            if words and words[0] == "emem-graph":
                argv = shlex.split(words[1] if len(words) > 1 else "", comments=True)
                cut = next((k for k, w in enumerate(argv) if w.startswith((">", "2>"))), None)
                yield argv[:cut] if cut is not None else argv


def check_command(argv: list[str]) -> str | None:
    """None when the real parser accepts ``emem-graph ARGV``; else its complaint."""
    from emem_graph import cli

    join = getattr(cli, "_join_negative_times", lambda args: args)
    parser = cli.build_parser()
    import contextlib
    import io

    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(join(argv))
    except SystemExit as exc:
        if exc.code not in (0, None):
            return errors.getvalue().strip().split("\n")[-1]
    return None


def static_problems(block: Block) -> list[Problem]:
    """What is checked of every block, run or not."""
    problems: list[Problem] = []

    def bad(what: str) -> None:
        problems.append(Problem(block.where, what))

    if block.lang not in KNOWN:
        bad(f"a code block needs a language ({', '.join(sorted(KNOWN))}); got {block.lang!r}")
        return problems
    unrun = block.marker is None and block.lang not in {"console", "bash", "python"}
    if unrun and block.output_of is None:
        bad(
            f"a ```{block.lang} block that is neither run nor output of a python block: "
            "add <!-- docs-test: not run: REASON --> before it, or make it runnable"
        )
    if block.marker == "not run" and not block.reason:
        bad("a block that is not run must say why")
    if block.lang in {"console", "bash"} and block.marker == "not run":
        # (a block that runs is checked by running it: it may show a mistyped command)
        for argv in _emem_graph_commands(block):
            if (why := check_command(argv)) is not None:
                bad(f"`emem-graph {shlex.join(argv)}` does not parse: {why}")
        for script in re.findall(r"(?<![\w./-])bash ([^\s)]+)", "\n".join(block.body)):
            if not (ROOT / script).is_file():
                bad(f"`bash {script}`: no such file in the repository")
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
            "optional-dependencies"
        ]
        for named in re.findall(r'-e "\.\[([^\]]+)\]"', "\n".join(block.body)):
            for extra in named.split(","):
                if extra.strip() not in extras:
                    bad(f"the extra {extra!r} is not declared in pyproject.toml")
    if block.lang == "python" and block.marker == "not run":
        code = "\n".join(block.body)
        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            bad(f"does not compile: {exc}")
            return problems
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                root = node.module.split(".")[0]
                if root not in {"emem_graph", "ros_bridge"}:
                    continue
                try:
                    module = importlib.import_module(node.module)
                except ImportError as exc:
                    bad(f"cannot import {node.module}: {exc}")
                    continue
                for alias in node.names:
                    if not hasattr(module, alias.name):
                        bad(f"{node.module} has no {alias.name}")
    if block.lang == "json":
        try:
            json.loads("\n".join(block.body))
        except ValueError as exc:
            bad(f"not valid JSON: {exc}")
    return problems


# -- links ------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of a page outside code blocks, inline code spans removed."""
    lines = path.read_text(encoding="utf-8").split("\n")
    inside: set[int] = set()
    for block in parse(path, lines):
        inside.update(range(block.start, block.end + 1))
    text = "\n".join("" if n in inside else line for n, line in enumerate(lines))
    # code spans (they may run over a line end; a forge links nothing inside them)
    text = re.sub(r"(`+)(?:(?!\1)[^\n]|\n(?!\s*\n))+?\1", lambda m: "\n" * m[0].count("\n"), text)
    return [(n + 1, line) for n, line in enumerate(text.split("\n")) if n not in inside]


def anchors(path: Path) -> set[str]:
    """The #anchors a forge gives the headings of a page (GitHub's rule)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    lines = path.read_text(encoding="utf-8").split("\n")
    inside: set[int] = set()
    for block in parse(path, lines):
        inside.update(range(block.start, block.end + 1))
    for n, line in enumerate(lines):
        match = HEADING.match(line)
        if n in inside or not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(2).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def link_problems(path: Path) -> list[Problem]:
    """Every link must stay in the repository and resolve, anchors included."""
    problems: list[Problem] = []
    for number, line in prose(path):
        where = f"{shown(path)}:{number}"
        if re.search(r"https?://|<[a-z]+:[^>]*>|www\.", line):
            problems.append(
                Problem(where, "a link leaves the repository: name the project in plain text")
            )
        if ".venv/bin/emem-graph" in line:
            problems.append(Problem(where, "write the command as `emem-graph ...`"))
        for target in LINK.findall(line):
            file_part, _, anchor = target.partition("#")
            destination = (path.parent / file_part).resolve() if file_part else path
            if ":" in file_part or not destination.is_relative_to(ROOT):
                problems.append(Problem(where, f"{target}: a link leaves the repository"))
            elif not destination.exists():
                problems.append(Problem(where, f"{target}: no such file"))
            elif anchor and (destination.suffix != ".md" or anchor not in anchors(destination)):
                problems.append(Problem(where, f"{target}: no heading #{anchor} there"))
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="write the real outputs")
    parser.add_argument("pages", nargs="*", type=Path, help="pages (default: all)")
    args = parser.parse_args(argv)
    selected = run_order([p.resolve() for p in args.pages] or pages())
    failed = 0
    for path in selected:
        problems = [p for block in parse(path) for p in static_problems(block)]
        problems += link_problems(path)
        result = run_page(path)
        problems += result.problems
        if args.write and result.rewrites:
            write(path, result.rewrites)
            problems = [p for p in problems if not p.stale]
        for problem in problems:
            print(f"{problem.where}: {problem.what}")
        failed += len(problems)
        print(f"{shown(path)}: {len(problems)} problem(s), {result.seconds:.0f} s", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
