"""Writes deliberately broken copies of a compiled plan's `schedule` section (one fault each) for
tests/lit/schedule/plan-schedule.test: OUT/<fault>/plan.json for
  swapped  two receives of one FFN group from the same attention group posted in the wrong order
  missing  one receive deleted (its sender would wait on a message nobody takes)
  oversize one M2N message (send and its receive) larger than the exchange's buffer
  nowork   a rank of the placement left out of every schedule group
  memory   capacity_bytes below the weights a rank holds
Usage: break_plan_schedule.py PLAN.json OUT_DIR"""
import copy
import json
import os
import sys


def first_recvs(prog):
    """Indices of the first two forward m2n receives of one group (program order)."""
    seen = []
    for i, ins in enumerate(prog):
        if ins["kind"] == "recv" and ins["op"] == "m2n" and ins["phase"] == "forward":
            if not seen or prog[seen[0]]["group"] == ins["group"]:
                seen.append(i)
            if len(seen) == 2:
                return seen
    raise SystemExit("no two m2n receives")


def delete(prog, i):
    """Removes instruction i and every `after` reference to it, renumbering the later ones."""
    del prog[i]
    for ins in prog:
        if "after" in ins:
            ins["after"] = [a - (a > i) for a in ins["after"] if a != i]


def main():
    plan = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    assert "schedule" in plan, "the plan has no schedule section"
    faults = {}

    p = copy.deepcopy(plan)
    ffn = p["schedule"]["programs"]["ffn"]
    i, j = first_recvs(ffn)
    ffn[i], ffn[j] = ffn[j], ffn[i]
    faults["swapped"] = p

    p = copy.deepcopy(plan)
    delete(p["schedule"]["programs"]["ffn"], first_recvs(p["schedule"]["programs"]["ffn"])[0])
    faults["missing"] = p

    p = copy.deepcopy(plan)
    ffn = p["schedule"]["programs"]["ffn"]
    recv = ffn[first_recvs(ffn)[0]]
    for ins in p["schedule"]["programs"]["attention"]:
        if (ins["kind"] == "send" and ins["op"] == "m2n" and ins["phase"] == "forward" and ins["mb"] == recv["mb"]
                and ins["layer"] == recv["layer"] and ins["group"] == recv["peer"]):
            ins["bytes"] = recv["bytes"] = 1e7
            break
    faults["oversize"] = p

    p = copy.deepcopy(plan)
    group = p["schedule"]["groups"][-1]
    group["ranks"] = [r[:-1] for r in group["ranks"]]
    faults["nowork"] = p

    p = copy.deepcopy(plan)
    p["schedule"]["capacity_bytes"] = 1000
    faults["memory"] = p

    for name, plan_json in faults.items():
        os.makedirs(os.path.join(out, name), exist_ok=True)
        with open(os.path.join(out, name, "plan.json"), "w") as f:
            json.dump(plan_json, f)


if __name__ == "__main__":
    main()
