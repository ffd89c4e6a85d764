"""peer_plan.py - what bench_encoder asks a peer benchmark (torch_peer.py, hf_peer.py) to time,
parsed one way for both: the budgets, the square image side for each (given, or the largest
square whose patches pool to at most the budget's tokens) and the repetitions per budget."""
import math


def square_side(budget, p=16, k=3):
    """The side of the largest square image of at most `budget` soft tokens (p-pixel patches
    pooled k x k)."""
    return int(math.isqrt(budget)) * p * k


def plan(budgets, sides="", reps="3"):
    """[(budget, side, reps)] from bench_encoder's comma lists; one reps count applies to all."""
    b = [int(x) for x in budgets.split(",")]
    s = [int(x) for x in sides.split(",")] if sides else [square_side(x) for x in b]
    r = [int(x) for x in reps.split(",")]
    r = r * len(b) if len(r) == 1 else r
    return list(zip(b, s, r))
