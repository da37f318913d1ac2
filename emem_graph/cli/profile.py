"""The profile-eval command: the evaluation of the user profile."""

from __future__ import annotations

import argparse


def add_profile_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``profile-eval``."""
    profile_eval = commands.add_parser(
        "profile-eval",
        help="evaluate the user profile: facts and routines told, changed and asked for later",
        description="Tell a new memory 30 personal facts and 25 routines of three users (by the "
        "structured API, then as plain-English instructions without an LLM), change 10 "
        "routines, reference 30 nodes by paraphrase and 15 near misses, then print how often "
        "the later underspecified requests find the right knowledge (top 1 / top 3), whether "
        "step order, updates, node reuse and grounding hold (all-MiniLM-L6-v2, ~2-4 min).",
    )
    profile_eval.set_defaults(run=_cmd_profile_eval)


def _cmd_profile_eval(args: argparse.Namespace) -> int:
    from emem_graph.evals import profile as evaluate

    print("\n".join(evaluate.main(progress=not args.quiet)))
    return 0
