"""``python -m tcgjax.fuzz``: the JAX engine batched (``engine.step.step_batch``, ``vmap(step)``'s
results bit for bit) with random legal actions, the invariants checked in JAX on every state of
every env at every step.

Each env ``i`` plays games back to back: at every step its decider plays the ``k mod n``-th of
its ``n`` legal actions (chooser index, as ``tcgjax.backends``), and a game that ends is
replaced at once by a new game on a random deck pairing with a random game seed. Env ``i``'s
random numbers are the counter-based draws ``raw_u32(env_seed(seed, i), 3 (t + 1) + j)``
(j = 0: the chooser index of step t, mod 2^16; j = 1 / 2: the pairing / seed of a game started
after step t; t = -1: the first game), so an env's play depends on ``(seed, i)`` only, not on
the batch: ``--replay ENV`` plays it again alone.

Invariants (``INVARIANTS``, a vectorised check on the state arrays, ``check``): each checked on
the state after every step, on every new game, and on the first states. They restate
``tcgjax.reference.invariants`` (docs/tcgjax.md "Invariants") on the array layout, plus the
layout's own padding, the winner field, observations finite and the legal mask non-empty
exactly while the game runs.

A failure is reported with its invariant, the first step and env where it failed, how many
env-steps it failed on, and the command that replays that env. The summary is JSON
(``--out``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from tcgjax.backends import CHOOSER
from tcgjax.bench import N_DECKS, chooser_action, restart, start_games
from tcgjax.engine import rng
from tcgjax.engine.legal import card, legal_mask, top_cards
from tcgjax.engine.observe import observe
from tcgjax.engine.step import HP_BONUS, mod_of, step_batch
from tcgjax.engine.step import step as engine_step
from tcgjax.engine.tables import CAT_POKEMON
from tcgjax.reference.state import (
    CH_NONE,
    EX_TRAINER,
    HAND_LIMIT,
    PH_MAIN,
    PH_OVER,
    PH_SETUP,
    POINTS_TO_WIN,
    TIE,
)

I32, U32 = jnp.int32, jnp.uint32
MAX_POINTS = POINTS_TO_WIN - 1 + 2 * 4  # D10: a batch of Knock Outs can pass 3 (as the reference)

INVARIANTS = (
    "cards_conserved",  # each player's 20 cards (deck list) across deck/hand/discard/board/resolving
    "list_padding",  # packed lists: lengths in range, -1 past the length, empty slots blank
    "hand_limit",  # hand <= 10
    "damage",  # damage >= 0 and a multiple of 10 on every Pokémon
    "hp",  # every Pokémon in play has HP > 0; none at or above its max HP in the main phase
    "points",  # 0 <= points; < 3 while the game runs; <= 10 ever
    "energy",  # attached and discarded energy counts >= 0
    "energy_zone",  # current / next among the declared types
    "bench_conditions",  # no Special Condition on the Bench
    "active",  # an Active Pokémon in the main phase (no choice pending)
    "stacks",  # a Basic at the bottom of every stack, a Pokémon on top
    "winner",  # -1 while running, 0 / 1 / tie once over
    "legal_mask",  # a legal action exists exactly while the game runs
    "finite_obs",  # both players' observations finite (no NaN / inf)
)
N_INV = len(INVARIANTS)


# ------------------------------------------------------------------------ invariants ---------
def _prefix(arr, n):
    """(…, L) entries at positions < n (per row), as a bool mask."""
    return jnp.arange(arr.shape[-1]) < n[..., None]


def owned_cards(s):
    """(2, 67) every card each player owns (-1 = none): deck, hand, discard in their lengths,
    stacks and Tools of Pokémon in play, the trainer in resolution."""
    def take(arr, n):
        return jnp.where(_prefix(arr, n), arr, -1)

    present = s["pk_present"]
    stacks = jnp.where(present[..., None], take(s["pk_stack"], s["pk_stack_n"]), -1)
    tools = jnp.where(present, s["pk_tool"], -1)
    trainer = (s["ex_present"] & (s["ex_kind"] == EX_TRAINER)
               & (s["ex_player"] == jnp.arange(2)))
    ex = jnp.where(trainer, s["ex_card"], -1)[:, None]
    return jnp.concatenate([take(s["deck"], s["deck_n"]), take(s["hand"], s["hand_n"]),
                            take(s["discard"], s["discard_n"]), stacks.reshape(2, -1), tools,
                            ex], axis=1)


def check(s):
    """bool[N_INV] for one state (True: the invariant holds). jit- and vmap-able."""
    running = s["phase"] != PH_OVER
    present = s["pk_present"]
    ok = {}

    # every owned card, with the entries inside a list's length counted even when -1
    def counted(arr, n):
        inside = _prefix(arr, n)
        return jnp.where(inside, arr, -2), inside

    parts = [counted(s[k], s[f"{k}_n"]) for k in ("deck", "hand", "discard")]
    st_in = _prefix(s["pk_stack"], s["pk_stack_n"]) & present[..., None]
    parts.append((jnp.where(st_in, s["pk_stack"], -2).reshape(2, -1), st_in.reshape(2, -1)))
    tool_in = present & (s["pk_tool"] >= 0)
    parts.append((jnp.where(tool_in, s["pk_tool"], -2), tool_in))
    ex = owned_cards(s)[:, -1:]
    parts.append((jnp.where(ex >= 0, ex, -2), ex >= 0))
    cards = jnp.concatenate([p[0] for p in parts], axis=1)
    n_owned = sum(jnp.sum(p[1], axis=1) for p in parts)
    big = jnp.iinfo(jnp.int32).max
    srt = jnp.sort(jnp.where(cards == -2, big, cards), axis=1)[:, :20]
    ok["cards_conserved"] = jnp.all(n_owned == 20) & jnp.all(
        srt == jnp.sort(s["deck_cards"], axis=1))

    pad_ok = jnp.bool_(True)
    for k, cap in (("deck", 20), ("hand", HAND_LIMIT), ("discard", 20)):
        n = s[f"{k}_n"]
        pad_ok &= jnp.all((n >= 0) & (n <= cap))
        pad_ok &= jnp.all(jnp.where(_prefix(s[k], n), True, s[k] == -1))
    sn = s["pk_stack_n"]
    pad_ok &= jnp.all(jnp.where(present, (sn >= 1) & (sn <= 3), sn == 0))
    pad_ok &= jnp.all(jnp.where(_prefix(s["pk_stack"], sn), True, s["pk_stack"] == -1))
    pad_ok &= jnp.all(present | ((s["pk_damage"] == 0) & (s["pk_tool"] == -1)
                                 & jnp.all(s["pk_energy"] == 0, axis=-1)))
    ok["list_padding"] = pad_ok
    ok["hand_limit"] = jnp.all(s["hand_n"] <= HAND_LIMIT)

    dmg = s["pk_damage"]
    ok["damage"] = jnp.all(jnp.where(present, (dmg >= 0) & (dmg % 10 == 0), True))
    tops = top_cards(s)
    max_hp = card("hp", tops) + mod_of(s, tops, HP_BONUS)
    settled = (s["phase"] == PH_MAIN) & ~s["ex_present"]
    ok["hp"] = jnp.all(jnp.where(present, (max_hp > 0) & (~settled | (dmg < max_hp)), True))

    pts = s["points"]
    ok["points"] = jnp.all((pts >= 0) & (pts <= MAX_POINTS) & (~running | (pts < POINTS_TO_WIN)))
    ok["energy"] = jnp.all(s["pk_energy"] >= 0) & jnp.all(s["discarded_energy"] >= 0)

    types = s["energy_types"]

    def declared(v):
        return jnp.any((types == v[:, None]) & (types >= 0), axis=1)

    zc, zn = s["zone_current"], s["zone_next"]
    ok["energy_zone"] = jnp.all((zc == -1) | declared(zc)) & jnp.all(
        (s["turn"] == 0) | declared(zn))
    bench = jnp.arange(4) >= 1
    cond_on = (s["pk_status"] != 0) | s["pk_poisoned"] | s["pk_burned"]
    ok["bench_conditions"] = ~jnp.any(present & bench & cond_on)
    in_main = (s["phase"] != PH_SETUP) & (s["turn"] > 0) & running & (s["choice"] == CH_NONE)
    ok["active"] = ~in_main | jnp.all(present[:, 0])
    bottom_basic = card("is_basic", s["pk_stack"][..., 0]) & (s["pk_stack"][..., 0] >= 0)
    top_pokemon = (card("category", tops) == CAT_POKEMON) & (tops >= 0)
    ok["stacks"] = jnp.all(jnp.where(present, bottom_basic & top_pokemon, True))
    w = s["winner"]
    ok["winner"] = jnp.where(running, w == -1, (w == 0) | (w == 1) | (w == TIE))
    ok["legal_mask"] = jnp.any(legal_mask(s)) == running
    ok["finite_obs"] = jnp.all(jnp.isfinite(observe(s, 0))) & jnp.all(jnp.isfinite(observe(s, 1)))
    return jnp.stack([ok[name] for name in INVARIANTS])


def failed(ok_row) -> list[str]:
    """Names of the invariants a ``check`` result says failed."""
    return [name for name, v in zip(INVARIANTS, np.asarray(ok_row).tolist(), strict=True) if not v]


# ------------------------------------------------------------------------ the run ------------
def env_seeds(seed: int, first_env: int, batch: int):
    """uint32[batch]: the stream key of envs ``first_env .. first_env + batch - 1``."""
    i = jnp.arange(first_env, first_env + batch, dtype=U32)
    return rng.raw_u32(U32(seed & 0xFFFFFFFF), i)


def draw(keys, t, j):
    """The env's draw ``j`` of step ``t`` (``t = -1``: its first game)."""
    return rng.raw_u32(keys, (jnp.asarray(t, I32) + 1).astype(U32) * U32(3) + U32(j))


def chooser_indices(keys, t):
    """int32: the chooser index of step ``t`` (``k mod n`` picks among n legal actions)."""
    return (draw(keys, t, 0) % CHOOSER).astype(I32)


def new_games(keys, t):
    u, seeds = draw(keys, t, 1), draw(keys, t, 2)
    return (u % N_DECKS).astype(I32), ((u >> 16) % N_DECKS).astype(I32), seeds


def first_games(keys):
    return start_games(*new_games(keys, -1))


def _no_failures():
    return {"count": jnp.zeros(N_INV, I32), "first_step": jnp.full(N_INV, -1, I32),
            "first_env": jnp.full(N_INV, -1, I32)}


def _note(fail, bad, t):
    """Adds one step's failures (bool[batch, N_INV]) to the record."""
    new = jnp.any(bad, axis=0) & (fail["first_step"] < 0)
    return {"count": fail["count"] + jnp.sum(bad, axis=0, dtype=I32),
            "first_step": jnp.where(new, t, fail["first_step"]),
            "first_env": jnp.where(new, jnp.argmax(bad, axis=0).astype(I32), fail["first_env"])}


def plant_duplicate(states, on):
    """Test hook: where ``on`` (bool[batch]), player 0's first hand card (else its first deck
    card) is copied into its discard pile: a duplicated card, the state otherwise intact."""
    hand0 = jnp.where(states["hand_n"][:, 0] > 0, states["hand"][:, 0, 0], states["deck"][:, 0, 0])
    n = states["discard_n"][:, 0]
    on = on & (n < 20)
    rows = jnp.arange(on.shape[0])
    discard = states["discard"].at[rows, 0, jnp.minimum(n, 19)].set(
        jnp.where(on, hand0, states["discard"][rows, 0, jnp.minimum(n, 19)]))
    return dict(states, discard=discard,
                discard_n=states["discard_n"].at[:, 0].add(on.astype(I32)))


def _body(t, carry, keys, plant):
    """Step ``t`` of every env: chooser action, engine step, check, restart, check the new
    games. ``plant`` = (step, env) of a planted duplicate card (-1: none; ``plant_duplicate``)."""
    states, fail, games, wins = carry
    n = keys.shape[0]
    k = chooser_indices(keys, t)
    a, _ = jax.vmap(chooser_action)(states, k)
    states = step_batch(states, a)
    states = plant_duplicate(states, (t == plant[0]) & (jnp.arange(n) == plant[1]))
    bad = ~jax.vmap(check)(states)
    over = states["phase"] == PH_OVER
    wins = wins + jnp.sum(over[:, None] & (states["winner"][:, None] == jnp.arange(3)), axis=0,
                          dtype=I32)
    states = restart(states, over, *new_games(keys, t))
    bad_new = jax.lax.cond(jnp.any(over), lambda s: ~jax.vmap(check)(s),
                           lambda s: jnp.zeros((n, N_INV), bool), states)
    bad = bad | (bad_new & over[:, None])
    return states, _note(fail, bad, t), games + jnp.sum(over, dtype=I32), wins


@jax.jit
def _start(keys):
    states = first_games(keys)
    return states, _note(_no_failures(), ~jax.vmap(check)(states), jnp.int32(-1))


@jax.jit
def _chunk(carry, keys, t0, k, plant):
    """``k`` steps from step ``t0`` (traced: one compile per batch size)."""
    return jax.lax.fori_loop(t0, t0 + k, lambda t, c: _body(t, c, keys, plant), carry)


def run(steps: int, batch: int = 1024, seed: int = 0, chunk: int = 8, progress: bool = True,
        plant: tuple[int, int] = (-1, -1), first_env: int = 0) -> dict:
    """``steps`` env-steps (rounded up to whole batched steps); returns the summary dict."""
    from tqdm import tqdm

    batch = int(batch)
    n_steps = -(-int(steps) // batch)
    keys = env_seeds(seed, first_env, batch)
    plant_arr = jnp.asarray(plant, I32)
    t_start = time.perf_counter()
    states, fail = _start(keys)
    carry = (states, fail, jnp.int32(0), jnp.zeros(3, I32))
    bar = tqdm(total=n_steps * batch, unit="step", unit_scale=True, disable=not progress,
               file=sys.stderr, desc=f"fuzz tcgjax (batch {batch})")
    t, compile_s, t_loop = 0, None, time.perf_counter()
    try:
        while t < n_steps:
            k = min(int(chunk), n_steps - t)
            t0 = time.perf_counter()
            carry = jax.block_until_ready(_chunk(carry, keys, jnp.int32(t), jnp.int32(k),
                                                 plant_arr))
            if compile_s is None:
                compile_s = time.perf_counter() - t0  # trace + compile + the first chunk
                t_loop = time.perf_counter()
                done_before = k
            t += k
            bar.update(k * batch)
            fails = int(np.sum(np.asarray(carry[1]["count"])))
            bar.set_postfix_str(f"failures {fails}, games {int(carry[2]):,}")
    finally:
        bar.close()
    wall = time.perf_counter() - t_start
    loop_s = time.perf_counter() - t_loop
    _, fail, games, wins = jax.device_get(carry)
    timed = (n_steps - done_before) * batch
    failures = {}
    for j, name in enumerate(INVARIANTS):
        if fail["count"][j]:
            step, env = int(fail["first_step"][j]), first_env + int(fail["first_env"][j])
            failures[name] = {
                "env_steps_failed": int(fail["count"][j]), "first_step": step, "first_env": env,
                "replay": f"python -m tcgjax.fuzz --seed {seed} --replay {env} "
                          f"--steps {step + 1}",
            }
    return {
        "result": "fail" if failures else "pass",
        "seed": seed, "batch": batch, "first_env": first_env,
        "env_steps": n_steps * batch, "batched_steps": n_steps,
        "states_checked": n_steps * batch + batch + int(games),
        "games_finished": int(games),
        "outcomes": {"player0": int(wins[0]), "player1": int(wins[1]), "tie": int(wins[2])},
        "invariants": list(INVARIANTS),
        "failures": failures,
        "wall_s": round(wall, 2), "compile_s": round(compile_s or 0.0, 2),
        "env_steps_per_s_after_compile": round(timed / loop_s, 1) if timed and loop_s else None,
    }


# ------------------------------------------------------------------------ replay -------------
def replay(seed: int, env: int, steps: int) -> dict:
    """Plays env ``env`` of a run alone (``steps`` steps, host loop, unbatched engine) and stops
    at its first failing state: what failed, and the same game replayed on the reference
    (``tcgjax.reference``: its own invariant check, the fields where the two states differ)."""
    from tcgjax.engine.state import diff, from_reference, to_numpy
    from tcgjax.reference import deck_list, legal_actions, new_game, step
    from tcgjax.reference.invariants import InvariantError
    from tcgjax.reference.invariants import check as ref_check

    keys = env_seeds(seed, env, 1)
    one = jax.jit(lambda s: jax.tree.map(lambda x: x[0], s))
    new = jax.jit(lambda keys, t: one(start_games(*new_games(keys, t))))
    jcheck = jax.jit(check)
    jstep = jax.jit(lambda s, k: engine_step(s, chooser_action(s, k)[0]))
    jdraw = jax.jit(chooser_indices)
    s = new(keys, -1)
    game = {"start": [int(x[0]) for x in jax.device_get(new_games(keys, -1))], "ks": []}
    out = {"seed": seed, "env": env, "result": "pass", "steps": steps}
    for t in range(-1, steps):
        if t >= 0:
            k = int(jdraw(keys, t)[0])
            s = jstep(s, jnp.int32(k))
            game["ks"].append(k)
        bad = failed(jcheck(s))
        if bad:
            a, b, gseed = game["start"]
            decks = deck_list()
            ref = new_game(decks[a], decks[b], gseed, log_enabled=True)
            for k in game["ks"]:
                legal = legal_actions(ref)
                step(ref, legal[k % len(legal)])
            try:
                ref_check(ref)
                ref_msg = "passes"
            except InvariantError as e:
                ref_msg = f"fails: {e}"
            out.update(result="fail", step=t, failed=bad, game={
                "pairing": [a, b], "game_seed": gseed, "chooser_indices": game["ks"]},
                reference_invariants=ref_msg,
                fields_differing_from_reference=diff(to_numpy(s), to_numpy(from_reference(ref))),
                reference_log_tail=(ref.log or [])[-15:])
            return out
        if t >= 0 and int(s["phase"]) == PH_OVER:
            a, b, gseed = new_games(keys, t)
            game = {"start": [int(a[0]), int(b[0]), int(gseed[0])], "ks": []}
            s = new(keys, t)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tcgjax.fuzz",
        description="tcgjax's JAX engine with random legal actions, invariants checked on every "
                    "state of every env (docs/tcgjax.md).")
    p.add_argument("--steps", type=int, default=1_000_000, help="env-steps in all (default 10^6)")
    p.add_argument("--batch", type=int, default=1024, help="envs stepped at once (vmap)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chunk", type=int, default=8,
                   help="batched steps per jitted call (the progress bar's granularity)")
    p.add_argument("--out", type=Path, default=None, help="write the JSON summary here")
    p.add_argument("--replay", type=int, default=None, metavar="ENV",
                   help="play env ENV of the run with --seed alone for --steps steps and "
                        "report its first failing state against the reference")
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    if a.replay is not None:
        summary = replay(a.seed, a.replay, a.steps)
    else:
        from envport.bench import host_info

        summary = run(a.steps, a.batch, a.seed, a.chunk, progress=not a.no_progress)
        summary["command"] = "python -m tcgjax.fuzz " + " ".join(
            sys.argv[1:] if argv is None else argv)
        summary["host"] = host_info(["tcgjax"])
    text = json.dumps(summary, indent=2)
    print(text)
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n")
    return 0 if summary["result"] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
