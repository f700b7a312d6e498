"""The results table of docs/performance.md from ``benchmarks/run.py --json`` files.

Usage::

    python benchmarks/summary.py FULL.json [RERUN.json ...] [--markdown out.md]

One row per problem and thread count: pastixpy's analysis + factorization + one solve
(the suite's total), ``spsolve``'s total where it ran, every other solver's total over
pastixpy's (below 1: faster than pastixpy), the fastest in total (bold when it is
pastixpy or ``spsolve``), and our best total (pastixpy's or ``spsolve``'s, the faster) over
the best of the others (``ours / best other``). Under the
table, the count of rows each solver wins and the rows where pastixpy is not first,
with the winner and its margin. A later file's rows (problem, solver, thread count) replace an
earlier file's (a rerun of some rows). It reads only the JSON: nothing is run.
"""

import argparse
import json
import sys
from pathlib import Path

#: Ours: the fastest of these is pastixpy's time on a row.
OURS = ("pastixpy", "spsolve")
#: The others, in the table's column order.
OTHERS = ("scipy", "cholmod", "mumps", "pardiso", "rslab", "rslab-spsolve")


def totals(problem, threads):
    """{solver: its summary (medians)} of one problem at one thread count."""
    out = {}
    for res in problem["results"]:
        summary = res.get("summary")
        if summary and summary.get("total") and res.get("threads") == threads:
            out[res["solver"]] = summary
    return out


def fmt(x):
    return f"{x:.3g}" if x is not None else "—"


def rows(problems, threads_list):
    """The table rows, and per row the ranking (solver, seconds) fastest first."""
    lines, rankings = [], []
    for problem in problems:
        for k in threads_list:
            found = totals(problem, k)
            if "pastixpy" not in found:
                continue
            ours = found["pastixpy"]
            s = ours["seconds"]
            parts = " + ".join(
                fmt(x) for x in (s["analysis"], s["factor"] + (s.get("verify") or 0.0), s["solve1"])
            )
            base = ours["total"]
            ranking = sorted(((name, v["total"]) for name, v in found.items()), key=lambda t: t[1])
            rankings.append((problem, k, ranking))
            cells = [
                f"{found[name]['total'] / base:.2f}" if name in found else "—" for name in OTHERS
            ]
            spsolve = found.get("spsolve")
            others = [(n, t) for n, t in ranking if n not in OURS]
            best = others[0] if others else None
            mine = min(t for n, t in ranking if n in OURS)  # pastixpy's or spsolve's, the faster
            winner, _ = ranking[0]
            win = f"**{winner}**" if winner in OURS else winner
            lines.append(
                f"| {problem['label']} | {problem['n']:,} | {k} | {parts} = **{fmt(base)}** | "
                f"{fmt(spsolve['total']) if spsolve else '—'} | " + " | ".join(cells) + " | "
                f"{win} | {f'{mine / best[1]:.2f}' if best else '—'} |"
            )
    return lines, rankings


HEADER = (
    "| problem | n | thr | pastixpy: analysis + factor + solve = total s | spsolve s | "
    + " | ".join(f"{name} / pastixpy" for name in OTHERS)
    + " | fastest in total | ours / best other |\n"
    + "|---|---:|---:|---:|---:|"
    + "---:|" * len(OTHERS)
    + "---|---:|"
)


def verdicts(rankings):
    """Rows won per solver, and the rows pastixpy (or spsolve) does not win."""
    wins = {}
    lost = []
    for problem, k, ranking in rankings:
        winner, t = ranking[0]
        wins[winner] = wins.get(winner, 0) + 1
        if winner not in OURS:
            ours = min(t for n, t in ranking if n in OURS)
            lost.append(f"- {problem['label']}, {k} thread(s): {winner} {ours / t:.2f}x faster")
    ranked = sorted(wins.items(), key=lambda w: -w[1])
    tally = ", ".join(f"{name} {count}" for name, count in ranked)
    return [f"Rows won: {tally} (of {len(rankings)})."] + (
        ["", "Where pastixpy is not the fastest (pastixpy's best over the winner's):"] + lost
        if lost
        else []
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("json", nargs="+", help="run.py --json files")
    p.add_argument("--markdown", help="write the table here too")
    args = p.parse_args()
    by_name, threads = {}, []
    for path in args.json:
        data = json.loads(Path(path).read_text())
        for problem in data["problems"]:  # a rerun replaces the rows it ran
            old = by_name.get(problem["name"])
            if old is not None:
                rerun = {(r["solver"], r.get("threads")) for r in problem["results"]}
                kept = [r for r in old["results"] if (r["solver"], r.get("threads")) not in rerun]
                problem = {**problem, "results": kept + problem["results"]}
            by_name[problem["name"]] = problem
        threads += [k for k in data["threads"] if k not in threads]
    problems = list(by_name.values())
    lines, rankings = rows(problems, threads)
    out = [HEADER, *lines, "", *verdicts(rankings)]
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
