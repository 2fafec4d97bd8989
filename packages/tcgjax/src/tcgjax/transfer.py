"""L4 with trained policies on tcgjax (``port.PORT.transfer``): PPO policies trained on the JAX
engine (``train.TARGETS``), each played on the JAX ``SingleAgentEnv`` and on the Python
reference (``single_reference.ReferenceSingleAgent``: the same observations, actions, legal
mask, opponent chooser and rewards), TOST on the win rate and on the game length.

The JAX side is played through :class:`JaxSingleAgentBackend`: the env's own ``reset`` and
``step``, vmapped over chunks of ``CHUNK`` running games. On CPU the engine's ``vmap`` runs
every branch of its step for every game and its loops as long as the batch's longest one, so a
small batch is faster per game (measured: 16 games ~340 agent steps/s, 128 games ~180 on the
2-vCPU VM), and 1,000 evaluation games in one batch (what ``envport.train.evaluate`` does)
would take far longer than in chunks of the games still running.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from envport.backend import Backend, StepResult
from envport.registry import PolicyTransfer
from tcgjax.env import SingleAgentEnv
from tcgjax.reference.state import PH_OVER
from tcgjax.single_reference import ReferenceSingleAgent

CHUNK = 16

_COMPILED: dict = {}


def _compiled(how):
    """(env, reset chunk, step chunk) for an opponent name or a ``make_env``, made once per
    process: every backend of the same env shares its compiled programs (minutes of XLA:CPU
    compile time each). ``step_chunk(states, ids, actions)`` gathers the games ``ids`` of the
    whole batch, steps them (vmapped) and scatters them back, in one program; ``reset_chunk``
    the same with new games."""
    if how not in _COMPILED:
        env = how() if callable(how) else SingleAgentEnv(how, checked=False)
        vstep, vreset = env.step_batch, env.reset_batch  # vmap's results, batch-level steps

        def put(states, ids, new):
            return jax.tree.map(lambda x, y: x.at[ids].set(y), states, new)

        def step_chunk(states, ids, actions):
            new, ts = vstep(jax.tree.map(lambda x: x[ids], states), actions)
            return put(states, ids, new), ts

        def reset_chunk(states, ids, keys):
            new, ts = vreset(keys)
            return put(states, ids, new), ts

        _COMPILED[how] = (
            env,
            vreset,
            jax.jit(reset_chunk, donate_argnums=0),
            jax.jit(step_chunk, donate_argnums=0),
        )
    return _COMPILED[how]


class JaxSingleAgentBackend(Backend):
    """``num_envs`` games of a JAX ``SingleAgentEnv`` (``make_env()``, default against
    ``opponent``) as a numpy backend. Each step plays the games still running, ``chunk`` at a
    time (gathered from the whole batch, so the chunks stay full as games end: the work is the
    games' own lengths, not the longest game's times the batch). ``episodes_per_env`` as
    ``ReferenceSingleAgent``'s (None: auto-reset for ever; else an env idles after that many
    games: final observation kept, reward 0, flags False, mask all True, action ignored)."""

    supports_load = False

    def __init__(
        self,
        num_envs: int,
        opponent: str = "random",
        *,
        make_env: Callable[[], SingleAgentEnv] | None = None,
        episodes_per_env: int | None = None,
        chunk: int = CHUNK,
    ):
        self.env, self._vreset, self._reset_c, self._step_c = _compiled(make_env or opponent)
        self.spec = self.env.spec
        self.name = f"tcgjax.engine single-agent ({self.spec.id})"
        self.num_envs = n = int(num_envs)
        self.chunk = max(1, min(int(chunk), n))
        self.episodes_per_env = None if episodes_per_env is None else int(episodes_per_env)
        self.states = None
        self._obs = np.zeros((n, *self.spec.observation_space.shape), np.float32)
        self._mask = np.zeros((n, self.spec.action_space.n), bool)
        self.episodes = np.zeros(n, np.int64)
        self.idle = np.zeros(n, bool)
        self._key = jax.random.PRNGKey(0)

    def _groups(self, ids: np.ndarray):
        """``ids`` in chunks of ``chunk``, the last one padded with its last id (a repeated
        game is stepped twice from the same state, or reset from the same key: the same
        result written twice)."""
        for lo in range(0, len(ids), self.chunk):
            g = ids[lo : lo + self.chunk]
            yield g, np.concatenate([g, np.full(self.chunk - len(g), g[-1])])

    def _new_games(self, envs: np.ndarray) -> None:
        for g, ids in self._groups(envs):
            self._key, sub = jax.random.split(self._key)
            # the padding repeats the last game's key too: a repeated id gets the same game
            keys = jax.random.split(sub, self.chunk)[np.minimum(np.arange(self.chunk), len(g) - 1)]
            self.states, ts = self._reset_c(self.states, jnp.asarray(ids), keys)
            self._obs[g] = np.asarray(ts.obs)[: len(g)]
            self._mask[g] = np.asarray(ts.legal_mask)[: len(g)]

    def reset(self, seed: int) -> np.ndarray:
        self._key = jax.random.PRNGKey(seed)
        shapes = jax.eval_shape(self._vreset, jax.random.split(self._key, self.num_envs))[0]
        self.states = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)
        self._new_games(np.arange(self.num_envs))
        self.episodes[:] = 0
        self.idle[:] = False
        return self._obs.copy()

    def step(self, actions) -> StepResult:
        n = self.num_envs
        actions = np.asarray(actions).reshape(n).astype(np.int32)
        reward, ended = np.zeros(n, np.float32), np.zeros(n, bool)
        for g, ids in self._groups(np.flatnonzero(~self.idle)):
            self.states, ts = self._step_c(self.states, jnp.asarray(ids), jnp.asarray(actions[ids]))
            k = len(g)
            reward[g] = np.asarray(ts.reward)[:k]
            ended[g] = np.asarray(ts.terminated)[:k]
            self._obs[g] = np.asarray(ts.obs)[:k]
            self._mask[g] = np.asarray(ts.legal_mask)[:k]
        self.episodes += ended
        if self.episodes_per_env is not None:
            self.idle |= ended & (self.episodes >= self.episodes_per_env)
        self._new_games(np.flatnonzero(ended & ~self.idle))  # auto-reset
        return StepResult(self._obs.copy(), reward, ended, np.zeros(n, bool))

    def legal_mask(self) -> np.ndarray:
        out = self._mask.copy()
        out[self.idle] = True
        return out

    def state(self) -> dict:
        out = {k: np.asarray(v) for k, v in self.states.game.items()}
        out["terminated"] = out["phase"] == PH_OVER
        out["truncated"] = np.zeros(self.num_envs, bool)
        return out


# -- the declared transfers ------------------------------------------------------------------
TRANSFER_STEPS = 100_000
TRANSFER_EPISODES = 1_000
TARGET = "vs-heuristic"
OPPONENT = "heuristic"
WIN_MARGIN = 0.06
LENGTH_MARGIN = 3.0
# Measured with a 40k-step vs-heuristic policy, 300 games a side (docs/tcgjax.md, "L4"): win
# rate 0.100 on the reference, 0.080 on the engine (a win's SD ~0.3); length 38.4 and 38.6
# decisions (SD ~14); the planted heuristic_order gap: win rate 0.103, length 43.5.
COMMON_NOTE = (
    "Policies: PPO on the JAX engine (target {target}, {steps:,} env steps, seeds 0-4), each "
    "playing sampled actions for {episodes:,} games a side against the heuristic opponent: on "
    "the JAX SingleAgentEnv (JaxSingleAgentBackend, chunks of {chunk} running games) and on "
    "the Python reference (single_reference.ReferenceSingleAgent: the reference's games, its "
    "heuristic_chooser as the opponent, the same §18 observation vector built in numpy, the "
    "same 76 actions and legal mask). Not trained on the reference: the host loop would do the "
    "same work at the reference's speed, and the engines agree step for step (L2/L3). "
)
WIN_NOTE = COMMON_NOTE + (
    "Margin {margin} of the win rate. Measured (a 40k-step policy, 300 games a side): a win's "
    "standard deviation ~0.3, so at 1,000 games a side the difference's 90% CI is about "
    "+-0.022; an equal pair passes unless its difference exceeds ~0.038 (2.8 standard errors, "
    "~0.5% of suites). The win rate alone has little power here: the policies win ~10% "
    "against the heuristic, and the planted heuristic_order gap moved it by 0.003 only."
)
LENGTH_NOTE = COMMON_NOTE + (
    "Margin {margin} agent decisions per game. Measured (a 40k-step policy, 300 games a "
    "side): a game's length has a standard deviation of ~14 decisions (mean ~38.5), so at "
    "1,000 games a side the difference's 90% CI is about +-1.0 decision and an equal pair "
    "passes unless its difference exceeds ~2 (3 standard errors); the planted "
    "heuristic_order gap (tcgjax.planted: the opponent attacks before attaching energy) "
    "lengthens games by ~5 decisions (38.4 -> 43.5), which fails it."
)


def decisions(ts):
    """1 per agent step: summed over a game, its length in the agent's decisions."""
    return ts.reward * 0 + 1


def make_reference(num_envs: int) -> ReferenceSingleAgent:
    """The reference side: one reference game per env against the heuristic chooser."""
    return ReferenceSingleAgent(num_envs, OPPONENT, episodes_per_env=1)


def make_candidate(num_envs: int, make_env=None) -> JaxSingleAgentBackend:
    """The port side: one JAX game per env against the JAX heuristic, in chunks."""
    return JaxSingleAgentBackend(num_envs, OPPONENT, make_env=make_env, episodes_per_env=1)


def transfers(
    steps: int = TRANSFER_STEPS, episodes: int = TRANSFER_EPISODES, seeds=range(5), **kw
) -> list[PolicyTransfer]:
    """The two L4 checks on the same port-trained policies: win rate and game length."""
    fmt = {"target": TARGET, "steps": steps, "episodes": episodes, "chunk": CHUNK}
    common = dict(
        target=TARGET,
        make_reference=make_reference,
        make_candidate_backend=make_candidate,
        seeds=tuple(seeds),
        episodes=episodes,
        train={"total_steps": steps},
        **kw,
    )
    return [
        PolicyTransfer(
            name=f"PPO {TARGET}, win rate",
            margin=WIN_MARGIN,
            margin_note=WIN_NOTE.format(margin=WIN_MARGIN, **fmt),
            metric="win (1) or not (0) of one game against the heuristic",
            **common,
        ),
        PolicyTransfer(
            name=f"PPO {TARGET}, game length",
            margin=LENGTH_MARGIN,
            margin_note=LENGTH_NOTE.format(margin=LENGTH_MARGIN, **fmt),
            score=decisions,
            metric="the agent's decisions in one game against the heuristic",
            **common,
        ),
    ]
