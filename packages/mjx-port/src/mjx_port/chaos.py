"""The chaos-horizon L3 suites (issue 22's L3 bar; the core's ``ChaosSuite``): per seeded
episode, the first step at which the port leaves Gymnasium (MuJoCo C) by more than 1e-6 in qpos
or qvel, next to the first step at which Gymnasium leaves itself started from its seeded reset
with qpos + 1e-12 (its own chaos horizon). Bar: the port never earlier on >= 99% of 100
episodes per env.

Under random actions Hopper, Walker2d and Ant mostly fall (``terminated``) within tens of steps,
before either side parts: their suites pass without comparing anything. Each of them has a
second suite with ``terminate_when_unhealthy=False`` (a v5 argument), whose 1,000-step episodes
do reach both horizons.

Episodes: Gymnasium's seeded reset (``reset(seed)``), uniform random actions in the action space
widened by 10% from ``default_rng(seed)``, to the first episode's end (TimeLimit included).
Run with ``envport verify mjx --levels L3``; reports/mjx/chaos/<suite>.png plots the two
distributions per suite. ``BARS`` also holds a roundoff-scale bar (1e-9 against C + 1e-15)
that is measured, not declared (docs/mjx.md, "Chaos horizon").
"""

from __future__ import annotations

from functools import partial

import numpy as np

from envport.registry import ChaosSuite

FIELDS = ("qpos", "qvel")
# (threshold, eps): the bar (declared), and the same at roundoff scale (measured only)
BARS = {"1e-6 vs C + 1e-12": (1e-6, 1e-12), "1e-9 vs C + 1e-15": (1e-9, 1e-15)}
DECLARED = ("1e-6 vs C + 1e-12",)
# envs whose random-action episodes end before either side parts: also run without that end
LONG_EPISODES = {"Hopper-v5", "Walker2d-v5", "Ant-v5"}
NO_FALL = {"terminate_when_unhealthy": False}


def perturb(state: dict, eps: float) -> dict:
    """Every qpos element moved by ``eps`` (the reset's qvel and step count kept)."""
    return {**state, "qpos": np.asarray(state["qpos"], np.float64) + eps}


def _reference(env_id: str, kwargs: dict | None):
    from mjx_port.backends import GymnasiumMujoco

    return GymnasiumMujoco(1, env_id, kwargs)


def _candidate(env_id: str, kwargs: dict | None):
    from mjx_port.backends import MjxCandidate

    return MjxCandidate(1, env_id, kwargs, dtype="float64")


def chaos_suites(env_id: str, sample_actions, episodes: int = 100,
                 bars: tuple[str, ...] = DECLARED) -> list[ChaosSuite]:
    """``env_id``'s suites at ``bars`` (with Gymnasium's default arguments; for
    ``LONG_EPISODES`` also without the fall's end); ``sample_actions``: the L2/L3 action
    distribution (``port.actions_for``)."""
    variants = [("", None)]
    if env_id in LONG_EPISODES:
        variants.append((" (terminate_when_unhealthy=False)", NO_FALL))
    return [
        ChaosSuite(
            name=f"{env_id}{label}, float64, {bar}",
            make_reference=partial(_reference, env_id, kwargs),
            make_candidate=partial(_candidate, env_id, kwargs),
            perturb=perturb,
            sample_actions=sample_actions,
            episodes=episodes,
            threshold=threshold,
            eps=eps,
            fields=FIELDS,
            max_steps=1000,
        )
        for label, kwargs in variants
        for bar in bars
        for threshold, eps in [BARS[bar]]
    ]
