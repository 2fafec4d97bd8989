"""RULES.md, section by section, against hand-built states (each test names its rule)."""

import pytest
from tcgjax_scenarios import cid, do, scenario

from tcgjax.reference import (
    IllegalActionError,
    WrongPlayerError,
    deck_list,
    legal_actions,
    new_game,
    step,
)
from tcgjax.reference import actions as A
from tcgjax.reference.choosers import play_game, random_chooser
from tcgjax.reference.engine import can_pay, end_turn, max_hp
from tcgjax.reference.rng import raw_u32
from tcgjax.reference.state import (
    CH_PROMOTE,
    CH_RETREAT_ENERGY,
    PH_CHOICE,
    PH_MAIN,
    PH_OVER,
    PH_SETUP,
    ST_ASLEEP,
    ST_CONFUSED,
    ST_PARALYZED,
    TIE,
)

DECKS = deck_list()


# ---------------------------------------------------------------- §5 setup
def test_5_1_first_player_is_the_first_coin():
    seen = set()
    for seed in range(20):
        st = new_game(DECKS[0], DECKS[1], seed)
        assert st.first_player == (0 if raw_u32(seed, 0) >> 31 else 1)
        assert st.decider == st.first_player and st.phase == PH_SETUP
        seen.add(st.first_player)
    assert seen == {0, 1}


def test_5_2_opening_hand_five_cards_with_a_basic():
    for seed in range(40):
        for d in range(15):
            st = new_game(DECKS[d], DECKS[(d + 1) % 15], seed)
            for pl in st.players:
                assert len(pl.hand) == 5 and len(pl.deck) == 15
                assert any(A_basic(c) for c in pl.hand)


def A_basic(c):
    from tcgjax.reference import card_pool

    return card_pool()[c].is_basic


def test_5_3_energy_zone_next_set_current_empty():
    st = new_game(DECKS[8], DECKS[0], 3)  # dragonite deck: water + lightning
    assert st.players[0].zone_current == -1 and st.players[0].zone_next in (2, 3)
    assert st.players[1].zone_next == 4


def test_5_4_setup_only_basics_active_first_then_bench():
    st = new_game(DECKS[0], DECKS[1], 7)
    p = st.decider
    legal = legal_actions(st)
    assert A.END not in legal  # an Active is mandatory
    assert all(A_basic(st.players[p].hand[a - A.PLAY]) for a in legal)
    do(st, legal[0])
    assert st.players[p].board[0] is not None
    assert A.END in legal_actions(st)
    do(st, A.END)
    assert st.decider == 1 - p and st.phase == PH_SETUP
    with pytest.raises(WrongPlayerError):
        step(st, legal_actions(st)[0], p)
    do(st, legal_actions(st)[0])
    do(st, A.END)
    # §5.5 / §6.1: turn 1 is the first player's, who drew (§19.1)
    assert st.turn == 1 and st.decider == p and st.phase == PH_MAIN
    assert len(st.players[p].hand) == 5 - 1 + 1


# ---------------------------------------------------------------- §6 turns
def test_6_2_energy_zone_update_and_turn_order():
    st = new_game(DECKS[0], DECKS[1], 11)
    for _ in range(2):
        do(st, legal_actions(st)[-1] if A.END not in legal_actions(st) else A.END)
    while st.phase == PH_SETUP:
        do(st, A.END if A.END in legal_actions(st) else legal_actions(st)[0])
    fp = st.first_player
    assert st.players[fp].zone_current == -1  # §8.2: nothing on turn 1
    nxt = st.players[1 - fp].zone_next
    do(st, A.END)
    assert st.turn == 2 and st.decider == 1 - fp
    assert st.players[1 - fp].zone_current == nxt  # second player's energy arrives on turn 2


def test_16_2_no_draw_at_ten_cards_and_16_5_empty_deck():
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex"], turn=4, opp_hand=["Potion"] * 10)
    do(st, A.END)  # turn 5 starts for P0; then P0 ends -> turn 6 for P1 (10 cards)
    top = st.players[1].deck[0]
    do(st, A.END)
    assert len(st.players[1].hand) == 10 and st.players[1].deck[0] == top
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex"], turn=4, deck=[])
    do(st, A.END)
    assert st.turn == 5 and st.players[0].hand == []


# ---------------------------------------------------------------- §7 actions
def test_7_1_basic_goes_to_lowest_empty_bench_slot():
    st = scenario(me=["Mewtwo ex", None, "Ralts"], opp=["Pikachu ex"], hand=["Mewtwo ex"])
    st.players[0].board[1] = None
    do(st, A.play(0))
    assert st.players[0].board[1].top == cid("Mewtwo ex")
    assert st.players[0].board[1].played_turn == st.turn


def test_7_2_evolution_rules():
    st = scenario(me=["Ralts", "Ralts"], opp=["Pikachu ex"], hand=["Kirlia", "Kirlia"], turn=2)
    st.first_player = 1
    assert not any(A.HAND_ON <= a < A.ATTACH for a in legal_actions(st))  # first turn
    st = scenario(me=["Ralts", "Ralts"], opp=["Pikachu ex"], hand=["Kirlia", "Gardevoir"])
    st.players[0].board[1].played_turn = st.turn  # played this turn
    st.players[0].board[0].status = ST_CONFUSED
    st.players[0].board[0].damage = 20
    legal = legal_actions(st)
    assert A.hand_on(0, 0) in legal and A.hand_on(0, 1) not in legal
    assert A.hand_on(1, 0) not in legal  # stage2 on a Basic
    do(st, A.hand_on(0, 0))
    a = st.players[0].board[0]
    assert a.top == cid("Kirlia") and a.damage == 20 and a.status == 0
    assert A.hand_on(0, 0) not in legal_actions(st)  # no double evolution in one turn


def test_7_3_zone_energy_once_per_turn():
    st = scenario(me=["Mewtwo ex", "Ralts"], opp=["Pikachu ex"])
    st.players[0].zone_current = 4
    do(st, A.ATTACH + 1)
    assert st.players[0].board[1].energy[4] == 1 and st.players[0].zone_current == -1
    assert not any(A.ATTACH <= a < A.ABILITY for a in legal_actions(st))


def test_7_5_one_supporter_per_turn_and_19_2_turn_one():
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex"], hand=["Giovanni", "Blue"], turn=1)
    assert A.play(0) in legal_actions(st)
    do(st, A.play(0))
    assert A.play(0) not in legal_actions(st)


def test_7_5_no_supporters_and_gengar_block():
    st = scenario(me=["Psyduck"], opp=["Pikachu ex"], opp_hand=["Giovanni"])
    st.players[0].board[0].energy[4] = 1
    do(st, A.ATTACK)
    assert st.turn == 6 and A.play(0) not in legal_actions(st)
    st = scenario(me=["Mewtwo ex"], opp=[("Gastly", "Haunter", "Gengar ex")], hand=["Giovanni"])
    assert A.play(0) not in legal_actions(st)


def test_7_6_tool_once_per_pokemon_and_hp_bonus():
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex"], hand=["Giant Cape", "Rocky Helmet"])
    do(st, A.hand_on(0, 0))
    assert max_hp(st.players[0].board[0]) == 170
    assert A.hand_on(0, 0) not in legal_actions(st)


def test_7_7_ability_once_per_turn_even_if_asleep():
    st = scenario(me=[("Magnemite", "Magneton")], opp=["Pikachu ex"])
    st.players[0].board[0].status = ST_ASLEEP
    do(st, A.ABILITY + 0)
    assert st.players[0].board[0].energy[3] == 1
    assert A.ABILITY + 0 not in legal_actions(st)


def test_7_8_retreat_cost_choice_and_conditions():
    st = scenario(
        me=[{"names": ["Mewtwo ex"], "energy": {"psychic": 2, "fire": 1}}, "Ralts"],
        opp=["Pikachu ex"],
    )
    st.players[0].board[0].poisoned = True
    do(st, A.RETREAT)
    assert st.phase == PH_CHOICE and st.choice == CH_RETREAT_ENERGY
    assert legal_actions(st) == [A.ENERGY + 1, A.ENERGY + 4]
    do(st, A.ENERGY + 1)  # the second unit is automatic: only psychic is left (§7.13)
    bench = st.players[0].board[1]
    assert bench.top == cid("Mewtwo ex") and bench.energy[4] == 1 and not bench.poisoned
    assert st.players[0].discarded_energy[1] == 1 and st.players[0].discarded_energy[4] == 1
    assert not any(A.RETREAT <= a < A.CHOOSE for a in legal_actions(st))  # once per turn


def test_7_8_asleep_cannot_retreat_and_x_speed():
    st = scenario(me=["Mewtwo ex", "Ralts"], opp=["Pikachu ex"], hand=["X Speed", "X Speed"])
    assert A.RETREAT not in legal_actions(st)  # cost 2, no energy
    do(st, A.play(0))
    do(st, A.play(0))
    assert A.RETREAT in legal_actions(st)  # cost 0 now
    st.players[0].board[0].status = ST_ASLEEP
    assert A.RETREAT not in legal_actions(st)


def test_7_10_attack_needs_energy_and_no_paralysis():
    st = scenario(
        me=[{"names": ["Mewtwo ex"], "energy": {"psychic": 1, "fire": 1}}], opp=["Pikachu ex"]
    )
    assert A.ATTACK in legal_actions(st) and A.ATTACK + 1 not in legal_actions(st)
    st.players[0].board[0].status = ST_PARALYZED
    assert A.ATTACK not in legal_actions(st)


def test_8_3_cost_payment():
    cost = (0, 0, 0, 0, 2, 0, 0, 0)
    assert can_pay([0, 1, 0, 0, 2, 0, 0, 0], cost, 1)
    assert not can_pay([0, 0, 0, 0, 2, 0, 0, 0], cost, 1)
    assert not can_pay([0, 3, 0, 0, 1, 0, 0, 0], cost, 1)


def test_illegal_action_and_bad_input():
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex"])
    with pytest.raises(IllegalActionError, match="not legal"):
        step(st, A.ATTACK)
    with pytest.raises(IllegalActionError, match="out of range"):
        step(st, 76)
    with pytest.raises(TypeError, match="integer"):
        step(st, 1.0)
    with pytest.raises(WrongPlayerError):
        step(st, A.END, 1)


# ---------------------------------------------------------------- §9 attacks
def _attack(st, k=0):
    do(st, A.ATTACK + k)
    return st


def test_9_7_a_giovanni_pikachu_ex_weakness(coins):
    st = scenario(
        me=[{"names": ["Pikachu ex"], "energy": {"lightning": 2}}, "Pikachu ex", "Pikachu ex"],
        opp=["Squirtle", "Squirtle"],
        hand=["Giovanni"],
    )
    st.players[1].board[0].stack = [cid("Squirtle"), cid("Wartortle"), cid("Blastoise ex")]
    do(st, A.play(0))
    _attack(st)
    assert st.players[1].board[0].damage == 90


def test_9_7_b_growl_zero_stays_zero():
    st = scenario(
        me=[{"names": ["Cubone"], "energy": {"fighting": 1}}],
        opp=[{"names": ["Exeggcute"], "energy": {"grass": 1}}],
        turn=5,
    )
    _attack(st)  # Growl: -20 on Exeggcute's attacks
    _attack(st)  # Seed Bomb 20 - 20 = 0: Cubone's grass weakness is not added
    assert st.players[0].board[0].damage == 0
    assert st.players[1].board[0].effects == []  # expired at the end of turn 6


def test_9_7_c_blizzard_vs_cloyster_bench_with_giovanni():
    st = scenario(
        me=[{"names": ["Articuno ex"], "energy": {"water": 3}}],
        opp=["Pikachu ex", ("Shellder", "Cloyster")],
        hand=["Giovanni"],
    )
    do(st, A.play(0))
    _attack(st, 1)
    assert st.players[1].board[1].damage == 0
    assert st.players[1].board[0].damage == 80 + 10  # no weakness (fighting)


def test_9_2_confusion_tails_does_nothing(coins):
    st = scenario(me=[{"names": ["Mewtwo ex"], "energy": {"psychic": 2}}], opp=["Pikachu ex"])
    st.players[0].board[0].status = ST_CONFUSED
    coins.append(False)
    _attack(st)
    assert st.players[1].board[0].damage == 0 and st.turn == 6


def test_9_5_counter_damage_helmet_and_poliwrath():
    st = scenario(
        me=[{"names": ["Mewtwo ex"], "energy": {"psychic": 2}}],
        opp=[{"names": ["Poliwag", "Poliwhirl", "Poliwrath"], "tool": "Rocky Helmet"}],
    )
    _attack(st)
    assert st.players[0].board[0].damage == 40
    assert st.players[1].board[0].damage == 50


# ---------------------------------------------------------------- §12-§14
def test_12_2_poison_and_14_order(coins):
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex"])
    st.players[0].board[0].poisoned = True
    st.players[1].board[0].status = ST_ASLEEP
    coins.append(True)  # §14 step 4: opponent's sleep coin, heads wakes
    do(st, A.END)
    assert st.players[0].board[0].damage == 10 and st.players[1].board[0].status == 0


def test_12_3_burn_damage_and_coin(coins):
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex"])
    st.players[0].board[0].burned = True
    coins.append(False)
    do(st, A.END)
    assert st.players[0].board[0].damage == 20 and st.players[0].board[0].burned


def test_12_5_paralysis_ends_after_owners_turn():
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex"])
    st.players[1].board[0].status = ST_PARALYZED
    do(st, A.END)  # P0's checkup: P1's paralysis stays
    assert st.players[1].board[0].status == ST_PARALYZED
    do(st, A.END)  # P1's own turn ended
    assert st.players[1].board[0].status == 0


def test_13_ex_gives_two_points_and_promotion_choice():
    st = scenario(
        me=[{"names": ["Mewtwo ex"], "energy": {"psychic": 4}}],
        opp=[{"names": ["Pikachu ex"], "damage": 100}, "Pikachu ex", "Magnemite"],
    )
    _attack(st)
    assert st.players[0].points == 2
    assert st.phase == PH_CHOICE and st.choice == CH_PROMOTE and st.decider == 1
    do(st, A.CHOOSE + 2)
    assert st.players[1].board[0].top == cid("Magnemite") and st.players[1].board[2] is None
    assert st.turn == 6


def test_15_1_board_wipe_beats_points():
    st = scenario(
        me=[{"names": ["Geodude"], "energy": {"fighting": 4}}],
        opp=[{"names": ["Pikachu ex"], "damage": 110}],
    )
    st.players[0].board[0].stack = [cid("Geodude"), cid("Graveler"), cid("Golem")]
    st.players[0].board[0].damage = 150  # Double-Edge self damage 50 knocks Golem out too
    _attack(st)
    assert st.phase == PH_OVER and st.winner == TIE  # both boards empty (§15.1.1)


def test_15_1_opponent_board_empty_wins():
    st = scenario(
        me=[{"names": ["Mewtwo ex"], "energy": {"psychic": 2}}],
        opp=[{"names": ["Pikachu ex"], "damage": 110}],
    )
    _attack(st)
    assert st.winner == 0


def test_14_7_turn_limit_tie():
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex"], turn=30)
    st.first_player = 1
    st.decider = st.current
    do(st, A.END)
    assert st.winner == TIE and st.phase == PH_OVER


def test_end_turn_directly_runs_checkup():
    st = scenario(me=["Mewtwo ex"], opp=["Pikachu ex"])
    end_turn(st)
    assert st.turn == 6


def test_random_game_logs_are_readable():
    st = new_game(DECKS[0], DECKS[1], 9)
    play_game(st, random_chooser(0), random_chooser(1))
    assert st.log[0].startswith("[t0] setup:") and "game over" in st.log[-1]


def test_13_4_both_promote_non_turn_player_first(coins):
    """Dragonite-free double KO: Electabuzz tails self damage knocks itself out too."""
    st = scenario(
        me=[{"names": ["Electabuzz"], "energy": {"lightning": 2}, "damage": 60}, "Ralts", "Ralts"],
        opp=[{"names": ["Ralts"], "damage": 40}, "Ralts", "Ralts"],
    )
    coins.append(False)  # tails: 40 to the Defending Pokémon, 20 self damage
    do(st, A.ATTACK)
    assert st.players[0].points == 1 and st.players[1].points == 1
    assert st.choice == CH_PROMOTE and st.decider == 1  # the non-turn player first
    do(st, A.CHOOSE + 1)
    assert st.decider == 0 and st.choice == CH_PROMOTE
    do(st, A.CHOOSE + 2)
    assert st.turn == 6 and st.players[0].board[0] is not None


def test_14_poison_knock_out_scores_for_the_opponent():
    st = scenario(me=[{"names": ["Ralts"], "damage": 50}, "Ralts"], opp=["Mewtwo ex", "Ralts"])
    st.players[0].board[0].poisoned = True
    do(st, A.END)
    assert st.players[1].points == 1 and st.turn == 6  # auto-promotion of the single Ralts
    assert st.players[0].board[1] is None and st.players[0].active is not None


def test_19_3_first_player_may_attack_on_turn_one_with_misty(coins):
    st = scenario(me=["Staryu"], opp=["Ralts"], hand=["Misty"], turn=1)
    coins += [True, False]
    do(st, A.play(0))  # one Water Pokémon: target automatic, 1 heads -> 1 water
    assert A.ATTACK in legal_actions(st)


def test_14_4_sleep_coin_flipped_even_at_zero_hp(coins):
    st = scenario(me=["Mewtwo ex"], opp=[{"names": ["Ralts"], "damage": 50}, "Ralts"])
    st.players[1].board[0].poisoned = True
    st.players[1].board[0].status = ST_ASLEEP
    c = st.counter
    coins.append(False)
    do(st, A.END)
    assert st.players[0].points == 1  # Knocked Out in step 6 after the flip
    assert st.counter - c >= 1


def test_15_1_both_reach_three_points_is_a_tie(coins):
    st = scenario(
        me=[{"names": ["Electabuzz"], "energy": {"lightning": 2}, "damage": 60}, "Ralts"],
        opp=[{"names": ["Ralts"], "damage": 40}, "Ralts"],
    )
    st.players[0].points = 2
    st.players[1].points = 2
    coins.append(False)  # both Actives fall: 3 points each, both still have a Bench
    do(st, A.ATTACK)
    assert st.winner == TIE


def test_16_4_koga_returns_to_a_full_hand_discard_instead():
    st = scenario(
        me=[("Grimer", "Muk"), "Ekans"],
        opp=["Mewtwo ex"],
        hand=["Koga"] + ["Potion"] * 9,
    )
    do(st, A.play(0))  # hand 9 -> Muk makes 10 -> Grimer goes to the discard
    pl = st.players[0]
    assert len(pl.hand) == 10 and pl.hand[-1] == cid("Muk")
    assert pl.discard == [cid("Grimer"), cid("Koga")]
    assert pl.active.top == cid("Ekans")  # single Benched Pokémon: promoted automatically


def test_12_1_reapplying_a_condition_changes_nothing():
    st = scenario(me=[atk_(["Grimer"], darkness=1)], opp=["Ralts", "Ralts"])
    st.players[1].board[0].poisoned = True
    do(st, A.ATTACK)  # Poison Gas on an already Poisoned Pokémon
    # 10 + 20 weakness, then one Poison tick (10), not two
    assert st.players[1].active.poisoned and st.players[1].active.damage == 10 + 20 + 10


def atk_(names, **energy):
    return {"names": list(names), "energy": energy}


def test_effects_4_attached_effects_end_when_leaving_the_active_spot(coins):
    st = scenario(me=[atk_(["Vulpix"], fire=1)], opp=["Ralts", atk_(["Ralts"], psychic=1)])
    st.players[1].board[0].energy[4] = 1
    coins.append(True)  # Tail Whip heads: the Defending Pokémon cannot attack next turn
    do(st, A.ATTACK)
    assert st.players[1].active.effects and A.ATTACK not in legal_actions(st)
    do(st, A.RETREAT)  # §19.18: moving to the Bench ends Pokémon-attached effects
    assert st.players[1].board[1].effects == []
