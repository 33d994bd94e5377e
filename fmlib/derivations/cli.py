"""`python -m fmlib derivations check [--json] [--derivation KEY] [--size N] [--timeout S]`.

Prints one row per step (derivation, step, status, how it was checked, detail) or, with --json,
a JSON array with one object per step. Exit code 1 if any step failed or any checked step's
check is not shown able to fail (`checker.weak_checks`: no prepared wrong variant, or one that
passed, was not checked or failed only by a shape mismatch; a wrong variant must fail by value),
2 on bad input, else 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

from . import catalog
from .checker import DEFAULT_TIMEOUT, check_derivations, weak_checks


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object per step instead of a table")
    parser.add_argument(
        "--derivation",
        action="append",
        metavar="KEY",
        help="check only this derivation (repeatable); default: the whole catalog",
    )
    parser.add_argument(
        "--size", type=int, default=None, help="size n for exact/numeric checks (default: each step's own)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"CPU seconds allowed per check (default {DEFAULT_TIMEOUT:g})",
    )


def run(args: argparse.Namespace) -> int:
    derivations = catalog()
    keys = [d.key for d in derivations]
    if args.derivation:
        unknown = [k for k in args.derivation if k not in keys]
        if unknown:
            print(f"error: unknown derivation {unknown[0]!r}; allowed: {', '.join(keys)}", file=sys.stderr)
            return 2
        derivations = [d for d in derivations if d.key in args.derivation]
    if args.size is not None and args.size < 1:
        print(f"error: --size must be an integer >= 1, got {args.size}", file=sys.stderr)
        return 2
    if args.timeout <= 0:
        print(f"error: --timeout must be > 0 seconds, got {args.timeout:g}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    results = check_derivations(derivations, size=args.size, timeout=args.timeout)
    seconds = time.perf_counter() - start
    weak = weak_checks(results)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=1, ensure_ascii=False))
    else:
        _print_table(results, weak, seconds)
    return 1 if weak or any(r.status == "failed" for r in results) else 0


def _print_table(results, weak: list[str], seconds: float) -> None:
    width = max(len(r.derivation) for r in results)
    step_width = min(48, max(len(r.step) for r in results))
    how_width = max(len(r.corrected.how) for r in results)
    print(f"{'derivation':<{width}}  #  {'step':<{step_width}}  {'status':<11}  {'checked':<{how_width}}  detail")
    for r in results:
        detail = r.detail if len(r.detail) <= 100 else r.detail[:99] + "…"
        print(
            f"{r.derivation:<{width}} {r.index + 1:>2}  {r.step[:step_width]:<{step_width}}  "
            f"{r.status:<11}  {r.corrected.how:<{how_width}}  {detail}"
        )
    counts = Counter(r.status for r in results)
    print(
        f"\n{len(results)} steps: " + ", ".join(f"{counts[s]} {s}" for s in ("passed", "slip", "failed", "not-checked"))
    )
    can_fail = sum(r.can_fail for r in results)
    variants = sum(len(r.wrong) for r in results)
    print(f"{can_fail} of {len(results)} steps have prepared wrong variants ({variants} in all) that fail by value")
    for problem in weak:
        print(f"  {problem}")
    print(f"checked in {seconds:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fmlib.derivations", description="run every derivation check")
    sub = parser.add_subparsers(dest="command", required=True)
    add_arguments(sub.add_parser("check", help="run every derivation check"))
    return run(parser.parse_args(argv))
