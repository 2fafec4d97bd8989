"""pokejax's translation plan: the modules ``envport generate pokejax`` writes, in dependency
order, each from the pokemon-showdown 0.11.11 sources that define its behaviour (the npm
package ships the TypeScript next to ``dist/``; the gen-1 random-battle generator only as
``dist`` JavaScript). The data tables (``data``/``codec``) come from ``python -m pokejax.data``,
not from a model, so they are not in the plan.
"""

from __future__ import annotations

from pathlib import Path

from envport.plan import ModulePlan, TranslationPlan, read_sources
from pokejax import install

PACKAGE_DIR = Path(__file__).resolve().parents[2]  # packages/pokejax


def _showdown(*members: str):
    """A reader of Showdown files (paths inside the npm package), at generation time."""
    def read():
        root = install.package_dir()
        return read_sources({f"pokemon-showdown/{m}": root / m for m in members})
    return read


def _no_sources():
    return {}


GEN1_SCRIPTS = "data/mods/gen1/scripts.ts"
GEN1_CONDITIONS = "data/mods/gen1/conditions.ts"
GEN1_MOVES = "data/mods/gen1/moves.ts"

CONSTRAINTS = """\
- Discrete and bit-exact: every value equals Showdown's after every decision; Showdown's
  integer arithmetic (its `trunc` and 8-bit rollovers in gen 1) reproduced exactly.
- Every random number comes from Showdown's Gen5 LCG (`prng`), drawn in exactly Showdown's
  order, including draws with no game meaning (speed-tie shuffles of event handlers).
- State is a pytree of fixed-size arrays (both teams [2, 6], PRNG state, turn); no Python
  control flow on traced values; everything vmappable. Traced indices go through one-hot
  masks (XLA:CPU gathers under vmap are slow)."""

PLAN = TranslationPlan(
    package_dir=PACKAGE_DIR,
    language="jax",
    constraints=CONSTRAINTS,
    modules=[
        ModulePlan(
            name="prng",
            target="src/pokejax/prng.py",
            reference_sources=_showdown("sim/prng.ts"),
            contract="""\
Showdown's Gen5 PRNG: a Python model `Gen5Prng(seed)` (`next`, `random(a, b)`, `shuffle`,
`seed`) and the JAX `PrngState(hi, lo)` with `from_seed`, `to_seed`, `advance`, `next_u32`,
`random_below(state, n)`, `random_chance(state, num, den)`, `select(cond, a, b)` and `pin`.""",
            tests=["tests/test_prng.py"],
        ),
        ModulePlan(
            name="speedsort",
            target="src/pokejax/speedsort.py",
            reference_sources=_showdown("sim/battle.ts"),
            contract="""\
`Battle.speedSort` / `comparePriority` in JAX: `speed_sort(state, keys)` sorts items by
(order, priority, speed, subOrder, effectOrder) with Showdown's shuffle draws for ties and
returns (advanced PRNG state, permutation); `speed_sort_model` is the Python model.""",
            tests=["tests/test_speedsort.py"],
            depends_on=["prng"],
        ),
        ModulePlan(
            name="stats",
            target="src/pokejax/stats.py",
            reference_sources=_showdown("sim/pokemon.ts", "sim/dex.ts"),
            contract="`compute_stats(base, level, ivs, evs)` and `STAT_ORDER`, gen-1 stat formula.",
            tests=["tests/test_stats.py"],
        ),
        ModulePlan(
            name="boosts",
            target="src/pokejax/boosts.py",
            reference_sources=_showdown(GEN1_SCRIPTS, "sim/pokemon.ts"),
            contract="""\
Gen 1 stat stages: `BOOSTS`, `boost_by(boosts, modified, stored, stat, delta)` with the
999/1 caps and the modified-stat quirks; `CHANGED` outcome codes.""",
            tests=["tests/test_boosts.py"],
        ),
        ModulePlan(
            name="damage",
            target="src/pokejax/damage.py",
            reference_sources=_showdown(GEN1_SCRIPTS),
            contract="""\
Gen 1 `getDamage`: `DamageInputs` and `damage(state, x) -> (state, damage, crit)` — crit rate
from base Speed (Focus Energy), STAB, type effectiveness, the 217-255 roll, screens,
Self-Destruct halving Defense, 8-bit rollovers.""",
            tests=["tests/test_damage.py"],
            depends_on=["prng"],
        ),
        ModulePlan(
            name="accuracy",
            target="src/pokejax/accuracy.py",
            reference_sources=_showdown(GEN1_SCRIPTS),
            contract="""\
Gen 1 `tryMoveHit` accuracy: `accuracy_check(state, accuracy, acc_boost, eva_boost, ...)`
with the 1/256 miss, stage multipliers; `ALWAYS_HITS`.""",
            tests=["tests/test_accuracy.py"],
            depends_on=["prng"],
        ),
        ModulePlan(
            name="before_move",
            target="src/pokejax/before_move.py",
            reference_sources=_showdown(GEN1_CONDITIONS),
            contract="""\
The BeforeMove event of gen 1 (sleep, freeze, paralysis, confusion and its self-hit, flinch,
recharge): `Mover`, `before_move(state, mover) -> (state, result)`.""",
            tests=["tests/test_before_move.py"],
            depends_on=["prng"],
        ),
        ModulePlan(
            name="secondary",
            target="src/pokejax/secondary.py",
            reference_sources=_showdown(GEN1_SCRIPTS, GEN1_CONDITIONS, GEN1_MOVES),
            contract="""\
A damaging hit and its secondary effect on the target: `Secondary`, `secondary_of(move)`,
`Target`, `apply_hit(state, damage, move_type, secondary, target, freeze_blocked)`.""",
            tests=["tests/test_secondary.py"],
            depends_on=["prng", "boosts", "damage"],
        ),
        ModulePlan(
            name="duel",
            target="src/pokejax/duel.py",
            reference_sources=_showdown(GEN1_SCRIPTS, GEN1_MOVES, GEN1_CONDITIONS),
            contract="""\
One move action of one active Pokémon on the other: `Fighter` (the per-Pokémon record),
`Field`, `move_table()`, `commit(fighter, slot)` (Gen 1 commitChoices), `use_move(state, me,
foe, slot, active, field, foe_clauses)` = runMove → useMove → tryMoveHit → moveHit for every
move of the gen1randombattle sets and Struggle; `switched_out`.""",
            tests=["tests/test_duel.py", "tests/test_turn_trace.py"],
            depends_on=["prng", "speedsort", "boosts", "damage", "accuracy", "before_move",
                        "secondary"],
        ),
        ModulePlan(
            name="battle",
            target="src/pokejax/battle.py",
            reference_sources=_showdown("sim/battle.ts", "sim/battle-queue.ts", GEN1_SCRIPTS,
                                        "data/mods/gen1/rulesets.ts"),
            contract="""\
Whole battles: `Battle(actives [2] Fighter, bench [2, 5] Fighter, prng, field, turn, forced,
ended, winner)` (`Battle.team`: the joined [2, 6] view, slot 0 active) and `step(battle, actions[2])` = one decision point of Showdown's request
loop (switches, moves by priority/speed, faints, forced switches as instaswitches, win/tie,
Sleep and Freeze Clause Mod).""",
            tests=["tests/test_battle.py"],
            depends_on=["duel"],
        ),
        ModulePlan(
            name="teams",
            target="src/pokejax/teams.py",
            reference_sources=_showdown("dist/data/random-battles/gen1/teams.js"),
            contract="""\
Teams: `Team` arrays, parsing Showdown sets with `TeamError` for malformed ones, and
`sample_team(key)` — a JAX sampler of the gen1randombattle set distribution.""",
            tests=["tests/test_teams.py"],
        ),
        ModulePlan(
            name="start",
            target="src/pokejax/start.py",
            reference_sources=_showdown("sim/battle.ts", "sim/pokemon.ts"),
            contract="""\
`new_battle(team1, team2, seed)` = Showdown's battle after `start` (stats, PP with PP Ups,
the start draws on a lead speed tie); `start_prng(seed, lead_speeds)`.""",
            tests=["tests/test_start.py"],
            depends_on=["stats", "battle", "teams"],
        ),
        ModulePlan(
            name="legal",
            target="src/pokejax/legal.py",
            reference_sources=_showdown("sim/pokemon.ts", "sim/side.ts"),
            contract="""\
`legal_mask(battle) -> bool[2, 9]` equal to Showdown's request (moves with PP, Struggle,
locked moves, forced switches) and `check_actions` raising `IllegalActionError`.""",
            tests=["tests/test_legal.py"],
            depends_on=["battle"],
        ),
        ModulePlan(
            name="observe",
            target="src/pokejax/observe.py",
            reference_sources=_showdown("PROTOCOL.md"),
            contract="""\
Per-player partial observations: own team in full, what the opponent revealed;
`observe(battle, revealed, player) -> Observation`, `flatten(obs) -> float32[OBS_SIZE]`,
`Revealed` bookkeeping (`initial`, `update`).""",
            tests=["tests/test_observe.py"],
            depends_on=["battle", "teams"],
        ),
        ModulePlan(
            name="opponents",
            target="src/pokejax/opponents.py",
            reference_sources=_no_sources,  # policies of our own, not translated
            contract="`random_policy` and `greedy_policy(key, battle, side) -> action` in JAX.",
            tests=["tests/test_opponents.py", "tests/test_match.py"],
            depends_on=["legal", "duel"],
        ),
        ModulePlan(
            name="env",
            target="src/pokejax/env.py",
            reference_sources=_no_sources,  # the envport env interface
            contract="""\
`BattleEnv` (two players, simultaneous choices) and `SingleAgentEnv(opponent)` on the envport
functional interface; JAX reset from sampled teams.""",
            tests=["tests/test_pokejax_env.py"],
            depends_on=["start", "legal", "observe", "opponents"],
        ),
    ],
)
