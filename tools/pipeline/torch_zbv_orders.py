#!/usr/bin/env python3
"""Prints torch.distributed.pipelining's ScheduleZBVZeroBubble order per rank, as banyan's CSV.

The reference for the shipped `zb-v` program (tests/pipeline/zbv_test.cpp runs this when torch is
importable; tests/pipeline/zbv_torch_orders.txt holds two shapes for machines without torch).

Output, per shape: a line `# p=P m=M`, then one line per rank: its actions in torch's text form
(`0F0` = stage 0, forward, microbatch 0; I = backward-input, W = backward-weight), comma-separated,
idle slots left out. Exit 77 when torch or its pipelining module cannot be imported.

    python3 tools/pipeline/torch_zbv_orders.py 2:4 4:8        # p:m pairs
    python3 tools/pipeline/torch_zbv_orders.py --sweep         # p in 2,3,4,6,8; m in 2p-1..4p
"""
import argparse
import sys

KINDS = {"FORWARD": "F", "BACKWARD_INPUT": "I", "BACKWARD_WEIGHT": "W", "FULL_BACKWARD": "B"}


def orders(schedule_class, p, m):
    # The per-rank order is computed from the group size, the stage count and m alone; build the
    # object without stages (no process group) and ask for it rank by rank.
    sched = schedule_class.__new__(schedule_class)
    sched.pp_group_size = p
    sched.num_stages = 2 * p
    sched.n_local_stages = 2
    sched._n_microbatches = m
    rows = []
    for r in range(p):
        ops = sched._calculate_single_rank_operations(r)
        rows.append(",".join(f"{a.stage_index}{KINDS[a.computation_type.name]}{a.microbatch_index}" for a in ops if a is not None))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="*", help="p:m pairs")
    parser.add_argument("--sweep", action="store_true", help="p in 2,3,4,6,8 and m from 2p-1 to 4p")
    args = parser.parse_args()
    try:
        from torch.distributed.pipelining.schedules import ScheduleZBVZeroBubble
    except Exception as e:  # ImportError, or a torch build without distributed
        print(f"torch_zbv_orders: cannot import torch.distributed.pipelining: {e}", file=sys.stderr)
        return 77
    shapes = [tuple(int(x) for x in s.split(":")) for s in args.shapes]
    if args.sweep:
        shapes += [(p, m) for p in (2, 3, 4, 6, 8) for m in range(2 * p - 1, 4 * p + 1)]
    if not shapes:
        parser.error("give p:m pairs or --sweep")
    for p, m in shapes:
        print(f"# p={p} m={m}")
        for row in orders(ScheduleZBVZeroBubble, p, m):
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
