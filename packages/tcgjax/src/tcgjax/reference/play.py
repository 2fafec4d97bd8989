"""Play one reference game and print its log:

    python -m tcgjax.reference.play --deck-a 0 --deck-b 3 --seed 7 [--a heuristic] [--b random]

Decks are indices 0..14 or ids of decks.json.
"""

from __future__ import annotations

import argparse

from .cards import deck_list, get_deck
from .choosers import heuristic_chooser, play_game, random_chooser
from .engine import new_game
from .invariants import check
from .state import TIE


def _deck(x: str):
    return get_deck(int(x)) if x.isdigit() else get_deck(x)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deck-a", default="0")
    ap.add_argument("--deck-b", default="1")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--a", choices=("random", "heuristic"), default="heuristic")
    ap.add_argument("--b", choices=("random", "heuristic"), default="random")
    ap.add_argument("--list", action="store_true", help="list the decks and exit")
    args = ap.parse_args(argv)
    if args.list:
        for i, d in enumerate(deck_list()):
            print(f"{i:2d} {d.id:28s} {d.name}")
        return 0
    make = {"random": random_chooser, "heuristic": lambda s: heuristic_chooser(s)}
    st = new_game(_deck(args.deck_a), _deck(args.deck_b), args.seed)
    play_game(st, make[args.a](args.seed), make[args.b](args.seed + 1), check=check)
    print("\n".join(st.log))
    res = "tie" if st.winner == TIE else f"P{st.winner} wins"
    print(f"result: {res} after {st.turn} turns, points {[p.points for p in st.players]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
