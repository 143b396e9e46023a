"""``minerva-trace``: read a trace written by ``mv.profiler`` / ``MINERVA_TRACE``.

    minerva-trace summary TRACE           busy %, idle gaps, top ops, copies, memory
    minerva-trace critical-path TRACE     the longest dependent chain, op by op
    minerva-trace dag TRACE --format dot  the executed DAG (to stdout or -o FILE)
    minerva-trace timeline TRACE --png OUT  a per-device timeline picture (matplotlib)

A trace file that cannot be read or is not a Chrome trace is reported in one line on
stderr (``minerva-trace: PATH: what is wrong``) with exit status 2, as is an output file
that cannot be written.
"""
from __future__ import annotations

import argparse
import os
import sys

from minerva.tracing import dot, model, report, timeline
from minerva.tracing.errors import TraceFileError


def _summary(args) -> int:
    trace = model.load(args.trace)
    _emit(report.summary(trace, os.path.basename(args.trace), args.gap_us, args.top))
    return 0


def _critical_path(args) -> int:
    _emit(report.critical_path(model.load(args.trace), args.limit))
    return 0


def _dag(args) -> int:
    text = dot.executed_dag(model.load(args.trace), args.max_label)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return 0


def _timeline(args) -> int:
    trace = model.load(args.trace)
    timeline.render(trace, args.png, width=args.width, dpi=args.dpi,
                    title=args.title or os.path.basename(args.trace))
    print(f"wrote {args.png}")
    return 0


def _emit(lines) -> None:
    sys.stdout.write("\n".join(lines) + "\n")


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``minerva-trace``."""
    top = argparse.ArgumentParser(prog="minerva-trace", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("summary", help="busy %%, idle gaps, top ops, copies, memory")
    cmd.add_argument("trace")
    cmd.add_argument("--gap-us", type=float, default=100.0,
                     help="count idle gaps longer than this (us; default 100)")
    cmd.add_argument("--top", type=int, default=10, help="ops listed by total time")
    cmd.set_defaults(run=_summary)
    cmd = sub.add_parser("critical-path", help="the longest dependent chain of ops")
    cmd.add_argument("trace")
    cmd.add_argument("--limit", type=int, default=50, help="ops listed at most")
    cmd.set_defaults(run=_critical_path)
    cmd = sub.add_parser("dag", help="the executed DAG")
    cmd.add_argument("trace")
    cmd.add_argument("--format", choices=["dot"], default="dot")
    cmd.add_argument("-o", "--output", help="write here instead of stdout")
    cmd.add_argument("--max-label", type=int, default=48, help="characters per label line")
    cmd.set_defaults(run=_dag)
    cmd = sub.add_parser("timeline", help="a per-device timeline picture (PNG)")
    cmd.add_argument("trace")
    cmd.add_argument("--png", required=True, help="the picture to write")
    cmd.add_argument("--width", type=float, default=12.0, help="inches")
    cmd.add_argument("--dpi", type=int, default=100)
    cmd.add_argument("--title")
    cmd.set_defaults(run=_timeline)
    return top


def main(argv: list[str] | None = None) -> int:
    """Run one ``minerva-trace`` command; the exit status."""
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except TraceFileError as exc:  # the trace file: model.load checked it
        return _fail(str(exc))
    except OSError as exc:  # an output file (the trace was read)
        where = exc.filename if exc.filename is not None else "output"
        return _fail(f"{where}: cannot write: {exc.strerror or exc}")


def _fail(message: str) -> int:
    """Report ``message`` as one line on stderr; exit status 2."""
    sys.stderr.write(f"minerva-trace: {' '.join(message.splitlines())}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
