#!/usr/bin/env python3
"""Tool-using transcripts for the built-in calculator environment, for supervised warm-up.

    python3 calculator_transcripts.py N [SEED] > calc.jsonl
    python3 calculator_transcripts.py N SEED --digits 1-3 --split train > sft.jsonl
    python3 calculator_transcripts.py N SEED --digits 1-3 --split train --rows > rl.jsonl
    python3 calculator_transcripts.py N SEED --digits 1-3 --split held-out --rows > eval.jsonl

Each line is a conversation in the shape `vkgrad sft --dataset` reads: the question the
calculator environment asks, an assistant turn calling the tool calculate in the Hermes
format, the tool's result, and the answer. The numbers are drawn as the environment draws
its own (7 to 10 digits for a sum or a difference, 4 to 6 for a product), from Python's
generator, so the problems are not the environment's; --digits LO-HI draws every operand
with LO to HI digits instead.

--rows writes {"prompt", "answer"} rows instead, which `vkgrad grpo --env calculator`
poses as they are. --split puts each problem (its expression) in one of two fixed parts,
by a hash, whatever the seed: train (9 in 10) or held-out (1 in 10), so a held-out file
shares no problem with any train file; held-out problems are also distinct.
"""
import argparse
import hashlib
import json
import random
import sys


def problem(rnd, digits):
    op = rnd.choice("+-*")
    if digits is None:
        n = rnd.randint(4, 6) if op == "*" else rnd.randint(7, 10)
        counts = (n, n)
    else:
        counts = (rnd.randint(*digits), rnd.randint(*digits))
    a, b = (rnd.randrange(10 ** (n - 1) if n > 1 else 0, 10 ** n) for n in counts)
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    return f"{a} {op} {b}", str(value)


def held_out(expression):
    """Whether the expression belongs to the held-out part: a fixed tenth, by its hash."""
    return hashlib.sha256(expression.encode()).digest()[0] % 10 == 0


def question(expression):
    return f"What is {expression}? Reply with the exact answer as a number."


def transcript(expression, answer):
    call = {"name": "calculate", "arguments": {"expression": expression}}
    return {"messages": [
        {"role": "user", "content": question(expression)},
        {"role": "assistant", "content": "<tool_call>" + json.dumps(call) + "</tool_call>"},
        {"role": "tool", "content": answer},
        {"role": "assistant", "content": answer},
    ]}


def digit_range(text):
    try:
        lo, _, hi = text.partition("-")
        lo, hi = int(lo), int(hi or lo)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--digits {text!r}: want LO-HI, e.g. 1-3")
    if not 1 <= lo <= hi:
        raise argparse.ArgumentTypeError(f"--digits {text!r}: want 1 <= LO <= HI")
    return lo, hi


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="lines to write")
    parser.add_argument("seed", type=int, nargs="?", default=1)
    parser.add_argument("--digits", type=digit_range, help="operand digits LO-HI (default: the environment's)")
    parser.add_argument("--split", choices=["all", "train", "held-out"], default="all")
    parser.add_argument("--rows", action="store_true", help='write {"prompt", "answer"} rows, not transcripts')
    args = parser.parse_args()

    rnd = random.Random(args.seed)
    seen = set()
    written = 0
    for _ in range(1000 * args.n):
        if written == args.n:
            break
        expression, answer = problem(rnd, args.digits)
        if args.split != "all" and held_out(expression) != (args.split == "held-out"):
            continue
        if args.split == "held-out":
            if expression in seen:
                continue
            seen.add(expression)
        if args.rows:
            print(json.dumps({"prompt": question(expression), "answer": answer}))
        else:
            print(json.dumps(transcript(expression, answer)))
        written += 1
    else:
        if written < args.n:
            sys.exit(f"only {written} distinct problems of {args.n} found: widen --digits")


if __name__ == "__main__":
    main()
