"""What one player may know (RULES §18), as arrays derived from ``arrays.to_arrays``.

Per-player fields are reordered so index 0 is the observer and 1 the opponent; player numbers
in scalars become "is it me" flags. Hidden (§18.2): the opponent's hand contents (its size is
public), both decks' order and content (sizes are public), the opponent's deck list, the RNG
seed and counter (they determine every deck order), and during setup the opponent's placement
(§5.4: their board reads empty and their hand size as before placement).
"""

from __future__ import annotations

import numpy as np

from .arrays import to_arrays
from .state import PH_SETUP, GameState

PLAYER_FIELDS = (
    "hand_n",
    "deck_n",
    "discard",
    "discard_n",
    "discarded_energy",
    "zone_current",
    "zone_next",
    "points",
    "supporter_played",
    "retreated",
    "zone_attached",
    "setup_done",
    "player_effects",
    "player_effects_n",
    "energy_types",
)
SCALARS = ("turn", "phase", "choice", "retreat_target", "retreat_left", "after_promo")
EXEC_FIELDS = (
    "ex_present",
    "ex_kind",
    "ex_card",
    "ex_attack",
    "ex_phase",
    "ex_addr",
    "ex_raw",
    "ex_self_damage",
    "ex_queue",
    "ex_queue_n",
    "ex_qpos",
    "ex_units_left",
)


def observe(st: GameState, player: int) -> dict[str, np.ndarray]:
    if player not in (0, 1):
        raise ValueError(f"player must be 0 or 1, got {player!r}")
    a = to_arrays(st)
    order = [player, 1 - player]
    obs: dict[str, np.ndarray] = {k: a[k] for k in SCALARS}

    def me(x) -> np.ndarray:
        return np.asarray(x == player, dtype=np.bool_)

    obs["decider_is_me"] = me(a["decider"])
    obs["current_is_me"] = me(st.current)
    obs["first_is_me"] = me(a["first_player"])
    w = int(a["winner"])
    obs["result"] = np.int32(-1 if w < 0 else (2 if w == 2 else (0 if w == player else 1)))
    for k in PLAYER_FIELDS:
        obs[k] = a[k][order]
    for k in (k for k in a if k.startswith("pk_")):
        obs[k] = a[k][order]
    obs["own_hand"] = a["hand"][player]
    obs["own_deck_list"] = a["deck_cards"][player]
    obs["promote_queue_is_me"] = np.array([q == player for q in a["promote_queue"]], dtype=np.bool_)
    obs["promote_queue_n"] = np.int32(int((a["promote_queue"] >= 0).sum()))
    for k in EXEC_FIELDS:
        obs[k] = a[k]
    obs["ex_player_is_me"] = me(a["ex_player"]) & a["ex_present"]
    obs["ex_dmg"] = a["ex_dmg"][order]
    obs["ex_hit"] = a["ex_hit"][order]
    if st.phase == PH_SETUP:
        # §5.4: the opponent's placement stays secret until both have placed.
        opp = st.players[1 - player]
        placed = sum(pk is not None for pk in opp.board)
        for k in (k for k in obs if k.startswith("pk_")):
            fill = False if obs[k].dtype == np.bool_ else (-1 if k in _NEG else 0)
            obs[k] = obs[k].copy()
            obs[k][1] = fill
        obs["hand_n"] = obs["hand_n"].copy()
        obs["hand_n"][1] += placed
        obs["setup_done"] = obs["setup_done"].copy()
        obs["setup_done"][1] = False
    return obs


_NEG = {"pk_uid", "pk_stack", "pk_tool"}
