"""Planted bugs: engines that differ from the reference in one small, realistic way."""

import dataclasses

import jax.numpy as jnp
import numpy as np

from pong_port.backends import PongCandidate
from pong_port.engine import PongEngine


class FasterPaddles(PongEngine):
    def __init__(self, config):
        super().__init__(config)
        self.paddle_speed = self.paddle_speed + np.float32(1)


class UnclampedOpponent(PongEngine):
    def opponent_delta(self, s):
        return s.ball_y - (s.paddle_yl + self.half_paddle)


class FlippedRngParity(PongEngine):
    def take_draw(self, s, needed, draw):
        return super().take_draw(s, needed, draw + jnp.uint32(1))


class FreshObsAfterPoint(PongEngine):
    def frame(self, s):
        s, point = super().frame(s)
        return s._replace(obs=self.observe(s)), point


class XlaFma(PongEngine):
    """What XLA does to ``vy + inc * dir`` without the guard: one rounding instead of two."""

    def multiply(self, a, b):
        return a * b


class XlaReciprocal(PongEngine):
    """What XLA does to ``x / c`` without the guard: ``x * (1 / c)``."""

    def divide(self, x, divisor):
        return x / divisor


# name -> (engine, a field the first divergence must name, index of the L3 suite that shows it)
BUGS = {
    "paddle speed": (FasterPaddles, "paddle_y", 0),
    "opponent clamp": (UnclampedOpponent, "paddle_yl", 0),
    "rng parity": (FlippedRngParity, "ball_vy", 0),
    "stale obs": (FreshObsAfterPoint, "obs", 0),
    # continuous actions: with discrete ones the fused product is exact
    "xla fma contraction": (XlaFma, "ball_vy", 2),
    "xla reciprocal division": (XlaReciprocal, "obs", 0),
}


def mutant_suite(suite, engine_cls):
    def make_candidate(suite=suite):
        honest = suite.make_candidate()
        n, config = honest.num_envs, honest.jax_env.config
        return PongCandidate(n, config, allow_out_of_range=honest.allow_out_of_range,
                             engine_cls=engine_cls)

    return dataclasses.replace(suite, make_candidate=make_candidate)
