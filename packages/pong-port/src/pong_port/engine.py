"""One Pong env's transition, a line-by-line translation of PufferLib 3.0.0 ``pong.h``.

Every constant is a float32 computed as C computes it, and every branch of ``c_step`` is a
``jnp.where`` evaluated in the same order, so the port is bit-exact on IEEE float32 CPUs.
The glibc draw that ``reset_round`` makes is *not* taken here: a step reports that it needs
one (at most one per step, because a point ends the step) and the caller supplies it. That
split is what lets a batch share one global stream exactly as PufferLib's envs do.

Methods are small on purpose: tests plant bugs by overriding one of them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pong_port.config import PongConfig
from pong_port.types import PongLog, PongState

f32 = jnp.float32


def exact_div(x, divisor):
    """``x / divisor`` as C computes it.

    XLA rewrites ``x / broadcast(c)`` into ``x * broadcast(1 / c)``, which differs in the last
    bit. Making the divisor data-dependent (``x * 0 + c``, exact for finite ``x``) keeps a
    true division; state values are always finite here.
    """
    return x / (x * f32(0) + jnp.asarray(divisor, f32))


def rounded_product(a, b):
    """``a * b`` rounded to float32 before any addition.

    On FMA-capable CPUs XLA contracts ``c + a * b`` into one fused multiply-add (a single
    rounding) while the C reference, built for baseline x86-64, rounds twice. LLVM only
    contracts a multiply that feeds the add directly, so the product goes through a select
    (a no-op for non-NaN ``b``; an optimization barrier does not survive XLA's passes).
    The verifier catches it if a future XLA sees through this.
    """
    return jnp.where(b == b, a * b, f32(0))


def _where(cond, a, b):
    """Select whole pytrees (states) by a scalar condition."""
    return jax.tree.map(lambda x, y: jnp.where(cond, x, y), a, b)


class PongEngine:
    def __init__(self, config: PongConfig):
        c = config
        self.config = c
        self.width, self.height = c.f32("width"), c.f32("height")
        self.paddle_height = c.f32("paddle_height")
        self.ball_width, self.ball_height = c.f32("ball_width"), c.f32("ball_height")
        self.paddle_speed = c.f32("paddle_speed")
        self.speed_x, self.speed_y = c.f32("ball_initial_speed_x"), c.f32("ball_initial_speed_y")
        self.max_speed_y = c.f32("ball_max_speed_y")
        self.speed_y_increment = c.f32("ball_speed_y_increment")
        self.max_score = np.uint32(int(c.max_score))
        self.frameskip = int(c.frameskip)
        self.continuous = bool(c.continuous)
        self.min_paddle_y, self.max_paddle_y = c.min_paddle_y, c.max_paddle_y
        two = np.float32(2)
        self.half_paddle = self.paddle_height / two
        self.paddle_y_range = self.max_paddle_y - self.min_paddle_y
        self.start_paddle_y = self.height / two - self.paddle_height / two
        self.start_ball_x = self.width / np.float32(5)
        self.start_ball_y = self.height / two - self.ball_height / two

    # -- float arithmetic that XLA would otherwise rewrite ---------------------------------------
    def divide(self, x, divisor):
        return exact_div(x, divisor)

    def multiply(self, a, b):
        """A product that is then added to something (see :func:`rounded_product`)."""
        return rounded_product(a, b)

    # -- observation ---------------------------------------------------------------------
    def observe(self, s: PongState) -> jax.Array:
        two = np.float32(2)
        return jnp.stack([
            self.divide(s.paddle_yl - self.min_paddle_y, self.paddle_y_range),
            self.divide(s.paddle_yr - self.min_paddle_y, self.paddle_y_range),
            self.divide(s.ball_x, self.width),
            self.divide(s.ball_y, self.height),
            self.divide(s.ball_vx + self.speed_x, two * self.speed_x),
            self.divide(s.ball_vy + self.max_speed_y, two * self.max_speed_y),
            # unsigned integer division in C, converted to float afterwards
            (s.score_l // self.max_score).astype(f32),
            (s.score_r // self.max_score).astype(f32),
        ]).astype(f32)

    # -- actions ---------------------------------------------------------------------------
    def paddle_direction(self, action: jax.Array) -> jax.Array:
        """The C reads a float action buffer. Continuous: the Python wrapper clips to
        [-1, 1]. Discrete: 1 is up, 2 is down, anything else (0, or out of range) is still."""
        act = jnp.asarray(action).astype(f32).reshape(())
        if self.continuous:
            return jnp.clip(act, f32(-1), f32(1))
        return jnp.where(act == 1, f32(1), jnp.where(act == 2, f32(-1), f32(0)))

    # -- one frame ---------------------------------------------------------------------------
    def opponent_delta(self, s: PongState) -> jax.Array:
        delta = s.ball_y - (s.paddle_yl + self.half_paddle)
        return jnp.minimum(jnp.maximum(delta, -self.paddle_speed), self.paddle_speed)

    def clip_paddle(self, y: jax.Array) -> jax.Array:
        return jnp.minimum(jnp.maximum(y, self.min_paddle_y), self.max_paddle_y)

    def frame(self, s: PongState) -> tuple[PongState, jax.Array]:
        """One iteration of the frameskip loop. Returns the new state and whether a point
        ended the step (then the round is reset, ``ball_vy`` awaits a draw, obs is stale)."""
        paddle_yr = s.paddle_yr + self.multiply(self.paddle_speed, s.paddle_dir)
        paddle_yl = s.paddle_yl + self.opponent_delta(s)
        paddle_yr, paddle_yl = self.clip_paddle(paddle_yr), self.clip_paddle(paddle_yl)
        ball_x, ball_y = s.ball_x + s.ball_vx, s.ball_y + s.ball_vy
        wall = (ball_y < 0) | (ball_y + self.ball_height > self.height)
        ball_vy = jnp.where(wall, -s.ball_vy, s.ball_vy)
        s = s._replace(paddle_yl=paddle_yl, paddle_yr=paddle_yr, ball_x=ball_x, ball_y=ball_y,
                       ball_vy=ball_vy)

        # left side: the opponent's paddle or our point
        at_left = ball_x < 0
        left_block = (ball_y + self.ball_height > paddle_yl) & (ball_y < paddle_yl + self.paddle_height)
        bounce_l = at_left & left_block
        won = at_left & ~left_block
        s = s._replace(ball_vx=jnp.where(bounce_l, -s.ball_vx, s.ball_vx),
                       n_bounces=s.n_bounces + bounce_l.astype(jnp.int32))

        # right side: our paddle or their point (only reached if no point on the left)
        at_right = ~won & (s.ball_x + self.ball_width > self.width)
        right_block = (s.ball_y + self.ball_height > s.paddle_yr) & (s.ball_y < s.paddle_yr + self.paddle_height)
        bounce_r = at_right & right_block
        lost = at_right & ~right_block
        hit = self.bounce_right(s)
        s = _where(bounce_r, hit, s)

        point = won | lost
        scored = s._replace(
            win=jnp.where(won, 1, 0).astype(jnp.int32),
            score_r=s.score_r + won.astype(jnp.uint32),
            score_l=s.score_l + lost.astype(jnp.uint32),
            reward=jnp.where(won, f32(1), f32(-1)),
        )
        # C tests only the scorer's count against max_score
        game_over = (won & (scored.score_r == self.max_score)) | (lost & (scored.score_l == self.max_score))
        s = _where(point, self.end_round(scored, game_over), s)
        s = s._replace(obs=jnp.where(point, s.obs, self.observe(s)))
        return s, point

    def bounce_right(self, s: PongState) -> PongState:
        vy = s.ball_vy + self.multiply(self.speed_y_increment, s.paddle_dir)
        vy = jnp.minimum(jnp.maximum(vy, -self.max_speed_y), self.max_speed_y)
        vy = jnp.where(jnp.abs(vy) < f32(0.01), self.speed_y_increment, vy)
        return s._replace(
            ball_vx=-s.ball_vx,
            n_bounces=s.n_bounces + 1,
            reward=f32(0.1),
            ball_vy=vy,
            ball_x=jnp.minimum(jnp.maximum(s.ball_x, f32(0)), self.width - self.ball_width),
            ball_y=jnp.minimum(jnp.maximum(s.ball_y, f32(0)), self.height - self.ball_height),
        )

    def end_round(self, s: PongState, game_over: jax.Array) -> PongState:
        """After a point: game over (log it, ``c_reset``) or just ``reset_round``."""
        over = self.reset_round(self.add_log(s))._replace(
            score_l=jnp.uint32(0), score_r=jnp.uint32(0), terminal=jnp.bool_(True))
        return _where(game_over, over, self.reset_round(s))

    def add_log(self, s: PongState) -> PongState:
        score_r, score_l = s.score_r.astype(f32), s.score_l.astype(f32)
        score = score_r - score_l
        log = s.log
        return s._replace(log=PongLog(
            perf=log.perf + score_r / (score_l + score_r),
            score=log.score + score,
            episode_return=log.episode_return + score,
            episode_length=log.episode_length + s.tick.astype(f32),
            n=log.n + f32(1),
        ))

    def reset_round(self, s: PongState) -> PongState:
        """``reset_round`` minus its ``rand()``: ``ball_vy`` is set by :meth:`take_draw`."""
        return s._replace(
            paddle_yl=self.start_paddle_y, paddle_yr=self.start_paddle_y,
            ball_x=self.start_ball_x, ball_y=self.start_ball_y, ball_vx=self.speed_x,
            tick=jnp.int32(0), n_bounces=jnp.int32(0),
        )

    # -- a whole step ---------------------------------------------------------------------------
    def step(self, s: PongState, action: jax.Array) -> tuple[PongState, jax.Array]:
        """``c_step`` without its draw. Returns the state and whether it needs one."""
        s = s._replace(tick=s.tick + 1, reward=f32(0), terminal=jnp.bool_(False),
                       paddle_dir=self.paddle_direction(action))

        def body(_, carry):
            s, done = carry
            nxt, point = self.frame(s)
            return _where(done, s, nxt), done | point

        # a rolled loop: unrolling frameskip=8 compiled 8x slower and ran 3x slower on CPU
        return jax.lax.fori_loop(0, self.frameskip, body, (s, jnp.bool_(False)))

    def take_draw(self, s: PongState, needed: jax.Array, draw: jax.Array) -> PongState:
        """Finish ``reset_round`` with a ``rand()`` value; ``c_reset`` then recomputes obs."""
        vy = ((draw % 2).astype(jnp.int32) - 1).astype(f32) * self.speed_y
        s = s._replace(ball_vy=jnp.where(needed, vy, s.ball_vy))
        return s._replace(obs=jnp.where(needed & s.terminal, self.observe(s), s.obs))

    def fresh(self, draw: jax.Array) -> PongState:
        """A newly allocated env after ``c_reset`` (``init`` zeroes the counters and log)."""
        zero = f32(0)
        s = PongState(
            paddle_yl=zero, paddle_yr=zero, ball_x=zero, ball_y=zero, ball_vx=zero, ball_vy=zero,
            score_l=jnp.uint32(0), score_r=jnp.uint32(0), paddle_dir=zero, tick=jnp.int32(0),
            n_bounces=jnp.int32(0), win=jnp.int32(0), obs=jnp.zeros(8, f32), reward=zero,
            terminal=jnp.bool_(False), log=PongLog(zero, zero, zero, zero, zero),
        )
        s = self.reset_round(s)
        s = self.take_draw(s, jnp.bool_(True), draw)
        return s._replace(obs=self.observe(s), terminal=jnp.bool_(False))
