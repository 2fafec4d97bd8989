"""EFFECTS.md, op by op (each test names its op and section), on hand-built states."""

from tcgjax_scenarios import cid, do, scenario

from tcgjax.reference import actions as A
from tcgjax.reference import legal_actions
from tcgjax.reference.state import (
    CH_EXEC_PROMOTE,
    CH_TARGET,
    PH_CHOICE,
    ST_ASLEEP,
    ST_CONFUSED,
    ST_PARALYZED,
)

W, F, G, L, P, FI, D, M = (
    "water",
    "fire",
    "grass",
    "lightning",
    "psychic",
    "fighting",
    "darkness",
    "metal",
)


def me_(st):
    return st.players[0]


def opp_(st):
    return st.players[1]


def atk(names, **energy):
    return {"names": list(names), "energy": energy}


# ---------------------------------------------------------------- §3.1 damage phase
def test_damage_per_heads_marowak(coins):
    st = scenario(me=[atk(["Cubone", "Marowak ex"], fighting=2)], opp=["Mewtwo ex"])
    coins += [True, False]
    do(st, A.ATTACK)
    assert opp_(st).active.damage == 80


def test_damage_per_heads_until_tails_capped(coins):
    """§17.2: at most 16 heads, no 17th flip."""
    st = scenario(me=[atk(["Lickitung"], grass=3)], opp=[("Ralts",)] * 1)
    opp_(st).active.stack = [cid("Mewtwo ex")]
    coins += [True] * 16  # a 17th forced result would be left unused (fixture fails)
    c = st.counter
    do(st, A.ATTACK)
    assert st.done and st.winner == 0  # 960 damage, the lone Mewtwo ex is Knocked Out
    assert st.counter - c == 16  # exactly 16 flips: no 17th


def test_damage_per_heads_zero_heads_still_runs_steps(coins):
    st = scenario(me=[atk(["Kangaskhan"], grass=1)], opp=["Mewtwo ex"])
    coins += [False, False]
    do(st, A.ATTACK)
    assert opp_(st).active.damage == 0


def test_extra_damage_and_coin_flip_then(coins):
    st = scenario(me=[atk(["Exeggcute", "Exeggutor ex"], grass=1)], opp=["Mewtwo ex"])
    coins.append(True)
    do(st, A.ATTACK)
    assert opp_(st).active.damage == 80


def test_coin_flip_then_tails_branch_self_damage(coins):
    st = scenario(me=[atk(["Electabuzz"], lightning=2)], opp=["Mewtwo ex"])
    coins.append(False)
    do(st, A.ATTACK)
    assert opp_(st).active.damage == 40 and me_(st).active.damage == 20


def test_extra_damage_if_self_damaged_primeape():
    st = scenario(me=[atk(["Mankey", "Primeape"], fighting=2)], opp=["Mewtwo ex"])
    me_(st).active.damage = 10
    do(st, A.ATTACK)
    assert opp_(st).active.damage == 100  # Mewtwo ex is weak to darkness only


def test_extra_damage_if_self_extra_energy_blastoise():
    """§5 self_extra_energy: cost + 2 more water."""
    st = scenario(me=[atk(["Squirtle", "Wartortle", "Blastoise ex"], water=4)], opp=["Mewtwo ex"])
    do(st, A.ATTACK + 1)
    assert opp_(st).active.damage == 100  # 3 + 2 water needed, only 4
    st = scenario(
        me=[atk(["Squirtle", "Wartortle", "Blastoise ex"], water=5)],
        opp=[{"names": ["Mewtwo ex"], "tool": "Giant Cape"}],
    )
    do(st, A.ATTACK + 1)
    assert opp_(st).active.damage == 160


def test_extra_damage_if_opponent_poisoned_muk():
    st = scenario(
        me=[atk(["Grimer", "Muk"], darkness=3)],
        opp=[{"names": ["Mewtwo ex"], "tool": "Giant Cape"}],
    )
    opp_(st).active.poisoned = True
    do(st, A.ATTACK)
    assert opp_(st).active.damage == 70 + 50 + 20 + 10  # + weakness (darkness) + poison checkup


def test_damage_per_count_pikachu_ex():
    st = scenario(
        me=[atk(["Pikachu ex"], lightning=2), "Pikachu ex", "Magnemite", "Bulbasaur"],
        opp=["Mewtwo ex"],
    )
    do(st, A.ATTACK)
    assert opp_(st).active.damage == 60


def test_extra_damage_per_count_jynx():
    st = scenario(me=[atk(["Jynx"], psychic=2)], opp=[atk(["Pikachu ex"], lightning=3)])
    do(st, A.ATTACK)
    assert opp_(st).active.damage == 30 + 60


def test_damage_other_all_bench_articuno_ex():
    st = scenario(me=[atk(["Articuno ex"], water=3)], opp=["Mewtwo ex", "Ralts", "Ralts"])
    do(st, A.ATTACK + 1)
    assert [pk.damage for pk in opp_(st).board[:3]] == [80, 10, 10]


def test_damage_other_choose_one_hitmonlee_pending_then_resumes():
    st = scenario(me=[atk(["Hitmonlee"], fighting=1)], opp=["Mewtwo ex", "Ralts", "Mewtwo ex"])
    do(st, A.ATTACK)
    assert st.phase == PH_CHOICE and st.choice == CH_TARGET and st.decider == 0
    assert legal_actions(st) == [A.CHOOSE + 1, A.CHOOSE + 2]
    do(st, A.CHOOSE + 2)
    assert opp_(st).board[2].damage == 30 and opp_(st).active.damage == 0 and st.turn == 6


def test_damage_other_own_bench_zapdos_auto_single():
    st = scenario(me=[atk(["Zapdos"], lightning=3), "Ralts"], opp=["Mewtwo ex"])
    do(st, A.ATTACK)
    assert me_(st).board[1].damage == 30 and opp_(st).active.damage == 100


def test_damage_other_ability_greninja_unmodified():
    """§19.19: ability damage ignores weakness, reductions and counter damage."""
    st = scenario(
        me=[("Froakie", "Frogadier", "Greninja")],
        opp=[{"names": ["Pikachu ex"], "tool": "Rocky Helmet"}, ("Shellder", "Cloyster")],
    )
    do(st, A.ABILITY)
    assert st.choice == CH_TARGET
    do(st, A.CHOOSE + 1)
    assert opp_(st).board[1].damage == 20 and me_(st).active.damage == 0


def test_damage_random_opponent_dragonite():
    st = scenario(
        me=[atk(["Dratini", "Dragonair", "Dragonite"], water=2, lightning=2)],
        opp=["Mewtwo ex", "Ralts"],
    )
    c = st.counter
    do(st, A.ATTACK)
    taken = [int(x.split(" takes ")[1].split()[0]) for x in st.log if " takes " in x]
    assert sum(taken) == 200 and all(t % 50 == 0 for t in taken)
    assert st.counter - c >= 4  # 4 picks, then the next turn's draws


def test_self_damage_arcanine_unmodified():
    st = scenario(me=[atk(["Growlithe", "Arcanine ex"], fire=3)], opp=["Mewtwo ex"])
    do(st, A.ATTACK)
    assert me_(st).active.damage == 20 and opp_(st).active.damage == 120


# ---------------------------------------------------------------- §3.3 effect steps
def test_heal_self_venusaur_and_each_own_butterfree():
    st = scenario(me=[atk(["Bulbasaur", "Ivysaur", "Venusaur ex"], grass=4)], opp=["Mewtwo ex"])
    me_(st).active.damage = 50
    do(st, A.ATTACK + 1)
    assert me_(st).active.damage == 20
    st = scenario(me=[("Caterpie", "Metapod", "Butterfree"), "Ralts"], opp=["Mewtwo ex"])
    me_(st).active.damage, me_(st).board[1].damage = 30, 10
    do(st, A.ABILITY)
    assert (me_(st).active.damage, me_(st).board[1].damage) == (10, 0)


def test_heal_choose_own_potion_only_damaged():
    st = scenario(me=["Mewtwo ex", "Ralts", "Ralts"], opp=["Mewtwo ex"], hand=["Potion"])
    assert A.play(0) not in legal_actions(st)  # requires a damaged Pokémon (§11.1)
    me_(st).board[2].damage = 30
    do(st, A.play(0))  # one candidate: automatic
    assert me_(st).board[2].damage == 10 and cid("Potion") in me_(st).discard


def test_apply_condition_and_prevent_dugtrio(coins):
    st = scenario(
        me=[atk(["Diglett", "Dugtrio"], fighting=1)], opp=[atk(["Misdreavus"], psychic=1)]
    )
    coins.append(True)
    do(st, A.ATTACK)  # Dig heads: prevent damage and effects next turn
    do(st, A.ATTACK)  # Confuse Ray
    assert me_(st).active.status == 0


def test_apply_condition_exclusive_markers():
    st = scenario(me=[atk(["Jigglypuff", "Wigglytuff ex"], grass=3)], opp=["Mewtwo ex"])
    opp_(st).active.status = ST_CONFUSED
    opp_(st).active.poisoned = True
    do(st, A.ATTACK)
    assert opp_(st).active.status == ST_ASLEEP and opp_(st).active.poisoned


def test_discard_energy_typed_and_all():
    st = scenario(me=[atk(["Charmander"], fire=2, water=1)], opp=["Mewtwo ex"])
    do(st, A.ATTACK)
    assert me_(st).active.energy[1] == 1 and me_(st).discarded_energy[1] == 1
    st = scenario(me=[atk(["Pikachu", "Raichu"], lightning=3, water=1)], opp=["Mewtwo ex"])
    do(st, A.ATTACK)
    assert sum(me_(st).active.energy) == 0 and sum(me_(st).discarded_energy) == 4


def test_draw_meowth_and_professors_research_at_the_hand_limit():
    st = scenario(me=[atk(["Meowth"], grass=1)], opp=["Mewtwo ex"], hand=["Potion"] * 9)
    do(st, A.ATTACK)
    assert len(me_(st).hand) == 10
    st = scenario(me=["Meowth"], opp=["Mewtwo ex"], hand=["Professor's Research"] + ["Potion"] * 9)
    do(st, A.play(0))
    assert len(me_(st).hand) == 10  # 9 + 1 draw, the second draw does nothing (§16.2)


def test_search_deck_poke_ball_basic_then_shuffle():
    deck = ["Kirlia", "Kirlia", "Ralts", "Potion"]
    st = scenario(me=["Mewtwo ex"], opp=["Mewtwo ex"], hand=["Poké Ball"], deck=deck)
    do(st, A.play(0))
    assert me_(st).hand == [cid("Ralts")] and sorted(me_(st).deck) == sorted(
        cid(c) for c in ["Kirlia", "Kirlia", "Potion"]
    )


def test_search_deck_stops_at_ten():
    """§16.3: a search with 10 cards in hand leaves the card in the deck (Caterpie)."""
    st = scenario(
        me=[atk(["Caterpie"], grass=1)], opp=["Mewtwo ex"], hand=["Potion"] * 10, deck=["Bulbasaur"]
    )
    do(st, A.ATTACK)
    assert me_(st).deck == [cid("Bulbasaur")] and len(me_(st).hand) == 10


def test_switch_opponent_active_opponent_chooses():
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex", "Ralts", "Magnemite"], hand=["Sabrina"])
    opp_(st).active.status = ST_PARALYZED
    do(st, A.play(0))
    assert st.phase == PH_CHOICE and st.decider == 1
    do(st, A.CHOOSE + 2)
    assert opp_(st).active.top == cid("Magnemite") and opp_(st).board[2].status == 0
    assert st.decider == 0


def test_attach_from_zone_self_own_active_choose_distribute(coins):
    st = scenario(me=[atk(["Meltan"], metal=1)], opp=["Mewtwo ex"])
    do(st, A.ATTACK)
    assert me_(st).active.energy[7] == 2
    st = scenario(me=["Mewtwo ex", ("Ralts", "Kirlia", "Gardevoir")], opp=["Mewtwo ex"])
    do(st, A.ABILITY + 1)
    assert me_(st).active.energy[4] == 1
    st = scenario(me=["Squirtle", "Staryu"], opp=["Mewtwo ex"], hand=["Misty"])
    do(st, A.play(0))
    assert st.choice == CH_TARGET  # chosen before the coins
    coins += [True, True, False]
    do(st, A.CHOOSE + 1)
    assert me_(st).board[1].energy[2] == 2
    st = scenario(
        me=[atk(["Moltres ex"], fire=1), "Vulpix", "Ralts", "Growlithe"], opp=["Mewtwo ex"]
    )
    coins += [True, True, False]
    do(st, A.ATTACK)
    assert st.choice == CH_TARGET and legal_actions(st) == [A.CHOOSE + 1, A.CHOOSE + 3]
    do(st, A.CHOOSE + 1)
    do(st, A.CHOOSE + 3)
    assert me_(st).board[1].energy[1] == 1 and me_(st).board[3].energy[1] == 1


def test_move_energy_lt_surge():
    st = scenario(
        me=["Electabuzz", atk(["Pikachu"], lightning=2, water=1)],
        opp=["Mewtwo ex"],
        hand=["Lt. Surge"],
    )
    do(st, A.play(0))
    assert me_(st).active.energy[3] == 2 and me_(st).board[1].energy == [0, 0, 1, 0, 0, 0, 0, 0]


def test_return_active_to_hand_koga_then_promotion():
    st = scenario(
        me=[
            {"names": ["Grimer", "Muk"], "energy": {D: 2}, "tool": "Giant Cape"},
            "Ekans",
            "Koffing",
        ],
        opp=["Mewtwo ex"],
        hand=["Koga"],
    )
    do(st, A.play(0))
    assert st.choice == CH_EXEC_PROMOTE and st.decider == 0
    do(st, A.CHOOSE + 2)
    assert me_(st).active.top == cid("Koffing") and me_(st).board[2] is None
    assert me_(st).hand == [cid("Muk"), cid("Grimer")]
    assert me_(st).discard == [cid("Giant Cape"), cid("Koga")] and me_(st).discarded_energy[6] == 2


def test_shuffle_hand_draw_red_card():
    st = scenario(me=["Mewtwo ex"], opp=["Mewtwo ex"], hand=["Red Card"], opp_hand=["Potion"] * 6)
    n = len(opp_(st).deck)
    do(st, A.play(0))
    assert len(opp_(st).hand) == 3 and len(opp_(st).deck) == n + 3


def test_reveal_hand_and_look_at_deck_top_change_nothing():
    st = scenario(me=["Mewtwo ex"], opp=["Mewtwo ex"], hand=["Hand Scope", "Pokédex"])
    deck = list(me_(st).deck)
    c = st.counter
    do(st, A.play(0))
    do(st, A.play(0))
    assert me_(st).deck == deck and st.counter == c
    assert "sees P1's hand" in st.log[-3] and "deck top" in st.log[-1]


def test_discard_random_from_hand_persian(coins):
    st = scenario(
        me=[atk(["Meowth", "Persian"], grass=2)], opp=["Mewtwo ex"], opp_hand=["Potion", "Sabrina"]
    )
    coins.append(True)
    do(st, A.ATTACK)
    assert len(opp_(st).hand) == 1 + 1 and len(opp_(st).discard) == 1  # one discarded, one drawn


def test_add_effect_kinds():
    # cannot_retreat (Arbok) on defending, until the end of the opponent's next turn
    st = scenario(me=[atk(["Ekans", "Arbok"], darkness=2)], opp=["Mewtwo ex", "Ralts"])
    opp_(st).active.energy[4] = 3
    do(st, A.ATTACK)
    assert A.RETREAT not in legal_actions(st)
    # damage_taken_minus on self (Mr. Mime) and player-level (Blue)
    st = scenario(me=[atk(["Mr. Mime"], psychic=2)], opp=[atk(["Mewtwo ex"], psychic=2)])
    do(st, A.ATTACK)
    do(st, A.ATTACK)
    assert me_(st).active.damage == 50 - 20  # Mr. Mime is weak to darkness, not psychic
    # attack_damage_plus with names (Blaine) only for the named Pokémon
    st = scenario(me=[atk(["Ponyta", "Rapidash"], fire=2)], opp=["Mewtwo ex"], hand=["Blaine"])
    do(st, A.play(0))
    do(st, A.ATTACK)
    assert opp_(st).active.damage == 40 + 30  # Fire Mane 40 + Blaine


def test_blue_reduces_opponent_attacks_until_their_turn_ends():
    st = scenario(me=["Mewtwo ex"], opp=[atk(["Mewtwo ex"], psychic=2)], hand=["Blue"])
    do(st, A.play(0))
    do(st, A.END)
    do(st, A.ATTACK)
    assert me_(st).active.damage == 40 and me_(st).effects == []


def test_attack_damage_plus_names_excludes_others():
    """Blaine's names filter: Ponyta is not Rapidash/Ninetales/Magmar."""
    st = scenario(me=[atk(["Ponyta"], fire=1)], opp=["Mewtwo ex"], hand=["Blaine"])
    do(st, A.play(0))
    do(st, A.ATTACK)
    assert opp_(st).active.damage == 20  # Flare 20, no bonus


# ---------------------------------------------------------------- §5 conditions in requires
def test_requires_conditions_gate_cards_and_abilities():
    """EFFECTS.md §5 / RULES §11.1: self_is_active, own_active_matches, own_bench_not_empty,
    opponent_bench_not_empty, own_pokemon_exists (names)."""
    st = scenario(me=["Ralts", ("Koffing", "Weezing")], opp=["Mewtwo ex"])
    assert A.ABILITY + 1 not in legal_actions(st)  # Gas Leak needs the Active Spot
    st = scenario(me=[("Koffing", "Weezing")], opp=["Mewtwo ex"])
    do(st, A.ABILITY)
    assert opp_(st).active.poisoned
    st = scenario(me=["Pikachu ex", ("Ralts", "Kirlia", "Gardevoir")], opp=["Mewtwo ex"])
    assert A.ABILITY + 1 not in legal_actions(st)  # Active is not psychic
    hand = ["Sabrina", "Koga", "Brock", "Lt. Surge", "Erika", "Misty"]
    st = scenario(me=[("Grimer", "Muk")], opp=["Mewtwo ex"], hand=hand)
    assert not any(A.PLAY <= a < A.HAND_ON for a in legal_actions(st))
    st = scenario(
        me=[("Grimer", "Muk"), "Onix", "Electabuzz"], opp=["Mewtwo ex", "Ralts"], hand=hand
    )
    legal = legal_actions(st)
    assert [a - A.PLAY for a in legal if A.PLAY <= a < A.HAND_ON] == [0, 1, 2]
