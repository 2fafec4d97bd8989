"""Gymnasium's MuJoCo v5 locomotion envs as pure JAX envs on MJX.

``make("HalfCheetah-v5", dtype=jnp.float64, **kwargs)`` builds an :class:`MjxEnv` whose
observation, reward, ``terminated``, ``truncated`` (TimeLimit 1000) and ``info`` terms are
Gymnasium 1.4's, from the XML file of the installed gymnasium package. Constructor arguments are
read off Gymnasium's own ``__init__`` signatures, so every v5 argument is accepted with
Gymnasium's default, and an unknown one is refused by name.

What keeps the numbers equal to Gymnasium's (docs/mjx.md):

- the control cost is computed as numpy computes it on a float32 action: squares and sum in
  float32, in numpy's pairwise summation order, times the weight rounded to float32 (NEP 50);
- Ant's forward velocity uses the main body's ``xpos`` as MuJoCo leaves it after ``mj_step``
  (the position at the start of the last physics substep, not after it), before and after;
- ``cfrc_ext`` is recomputed after the physics steps (Gymnasium calls ``mj_rnePostConstraint``);
- a reset zeroes ``qacc_warmstart`` (``mj_resetData``) and runs ``forward`` (``set_state``).
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from envport.env import Env
from envport.errors import EnvportError
from envport.types import Box, EnvSpec, TimeStep
from mjx_port.contacts import c_contacts

GYMNASIUM_VERSION = "1.4.0"
MAX_EPISODE_STEPS = 1000  # Gymnasium registers every v5 locomotion env with TimeLimit(1000)

# Gymnasium's constructor arguments that only concern rendering: accepted, without effect
RENDER_ARGS = frozenset(
    {
        "default_camera_config",
        "render_mode",
        "width",
        "height",
        "camera_id",
        "camera_name",
        "max_geom",
        "visual_options",
    }
)


def _gym_classes() -> dict[str, type]:
    import gymnasium
    from gymnasium.envs.mujoco.ant_v5 import AntEnv
    from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv
    from gymnasium.envs.mujoco.hopper_v5 import HopperEnv
    from gymnasium.envs.mujoco.walker2d_v5 import Walker2dEnv

    if gymnasium.__version__ != GYMNASIUM_VERSION:
        raise EnvportError(
            f"mjx-port reproduces gymnasium {GYMNASIUM_VERSION}'s MuJoCo envs; "
            f"gymnasium {gymnasium.__version__} is installed"
        )
    return {
        "HalfCheetah-v5": HalfCheetahEnv,
        "Hopper-v5": HopperEnv,
        "Walker2d-v5": Walker2dEnv,
        "Ant-v5": AntEnv,
    }


ENV_IDS = ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5")


def gymnasium_defaults(env_id: str) -> dict[str, Any]:
    """Gymnasium's own constructor defaults for ``env_id`` (rendering arguments left out)."""
    classes = _gym_classes()
    if env_id not in classes:
        raise EnvportError(f"unknown env {env_id!r}; mjx-port has {', '.join(ENV_IDS)}")
    params = inspect.signature(classes[env_id].__init__).parameters
    return {
        k: p.default
        for k, p in params.items()
        if k not in ("self", "kwargs") and k not in RENDER_ARGS
    }


def xml_path(xml_file: str) -> str:
    """As Gymnasium's ``expand_model_path``: absolute paths as given, others in its assets."""
    if xml_file.startswith(("/", "~")):
        return os.path.expanduser(xml_file)
    import gymnasium.envs.mujoco as gm

    return os.path.join(os.path.dirname(gm.__file__), "assets", xml_file)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MjxState:
    data: mjx.Data
    t: jax.Array  # steps taken in this episode (TimeLimit's elapsed steps)
    info: dict[str, jax.Array]


def _numpy_pairwise_sum(x: jax.Array, rnd=lambda v: v) -> jax.Array:
    """``np.sum`` of a 1-D array in numpy's order (pairwise_sum in loops_utils.h): below 8
    elements one running sum; up to 128, eight interleaved accumulators combined as
    ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the tail one by one. ``rnd`` rounds each
    partial sum (see :meth:`MjxEnv._ctrl_cost`)."""
    n = x.shape[0]
    if n < 8:
        s = x[0]  # numpy starts from -0.0, and -0.0 + x == x
        for i in range(1, n):
            s = rnd(s + x[i])
        return s
    if n > 128:
        raise NotImplementedError("numpy's blocked summation above 128 elements")
    r = [x[i] for i in range(8)]
    for i in range(8, n - n % 8, 8):
        r = [rnd(r[j] + x[i + j]) for j in range(8)]
    s = rnd(rnd(rnd(r[0] + r[1]) + rnd(r[2] + r[3])) + rnd(rnd(r[4] + r[5]) + rnd(r[6] + r[7])))
    for i in range(n - n % 8, n):
        s = rnd(s + x[i])
    return s


def _cast_floats(tree, dtype):
    def cast(x):
        if isinstance(x, jax.Array | np.ndarray) and jnp.issubdtype(x.dtype, jnp.floating):
            return jnp.asarray(x, dtype)
        return x

    return jax.tree_util.tree_map(cast, tree)


@dataclass
class MjxEnv(Env[MjxState]):
    """One of Gymnasium's v5 locomotion envs on MJX (unbatched; batch with ``jax.vmap``)."""

    env_id: str
    dtype: Any = jnp.float32
    max_episode_steps: int = MAX_EPISODE_STEPS
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        self.dtype = jnp.dtype(self.dtype)
        if self.dtype not in (jnp.float32, jnp.float64):
            raise EnvportError(f"dtype must be float32 or float64, got {self.dtype}")
        if self.dtype == jnp.float64 and not jax.config.jax_enable_x64:
            raise EnvportError(
                "float64 mode needs jax_enable_x64: call "
                "jax.config.update('jax_enable_x64', True) before building the env"
            )
        defaults = gymnasium_defaults(self.env_id)
        unknown = sorted(set(self.kwargs) - set(defaults) - RENDER_ARGS)
        if unknown:
            raise EnvportError(
                f"{self.env_id} has no argument {', '.join(map(repr, unknown))}; "
                f"its arguments: {', '.join(defaults)}"
            )
        self.cfg = {**defaults, **{k: v for k, v in self.kwargs.items() if k not in RENDER_ARGS}}
        self.frame_skip = int(self.cfg["frame_skip"])
        if self.frame_skip < 1:
            raise EnvportError(f"frame_skip must be >= 1, got {self.frame_skip}")
        self.mj_model = mujoco.MjModel.from_xml_path(xml_path(self.cfg["xml_file"]))
        if self.mj_model.opt.solver == mujoco.mjtSolver.mjSOL_PGS:
            raise EnvportError(
                f"{self.cfg['xml_file']} uses the PGS solver, which MJX does not implement"
            )
        self.model = _cast_floats(mjx.put_model(self.mj_model), self.dtype)
        # (reset_to runs forward on it, so a reset's integer tendon fields have the dtypes a
        # step returns: make_data's alone differ under x64)
        self._data0 = _cast_floats(mjx.make_data(self.model), self.dtype)
        probe = mujoco.MjData(self.mj_model)
        self.init_qpos = np.array(probe.qpos)
        self.init_qvel = np.array(probe.qvel)
        # Gymnasium's dt: a Python float product, used as the divisor of the velocity
        self.dt = float(self.mj_model.opt.timestep) * self.frame_skip
        self.nq, self.nv, self.nu = self.mj_model.nq, self.mj_model.nv, self.mj_model.nu
        self.kind = self.env_id.split("-")[0]
        if self.kind == "Ant":
            mb = self.cfg["main_body"]
            self.main_body = (
                mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_BODY, mb)
                if isinstance(mb, str)
                else int(mb)
            )
            if not 0 <= self.main_body < self.mj_model.nbody:
                raise EnvportError(f"main_body {mb!r} is not a body of {self.cfg['xml_file']}")
        self.skip = (2 if self.kind == "Ant" else 1) * bool(
            self.cfg["exclude_current_positions_from_observation"]
        )
        obs_size = self.nq + self.nv - self.skip
        if self.kind == "Ant" and self.cfg["include_cfrc_ext_in_observation"]:
            obs_size += (self.mj_model.nbody - 1) * 6
        low, high = self.mj_model.actuator_ctrlrange.astype(np.float32).T
        self._spec = EnvSpec(
            self.env_id,
            f"mjx-port (gymnasium {GYMNASIUM_VERSION})",
            Box(-np.inf, np.inf, (obs_size,), np.dtype(self.dtype).type),
            Box(_one(low), _one(high), (self.nu,), np.float32),
            terminated_and_truncated=True,
        )

    @property
    def spec(self) -> EnvSpec:
        return self._spec

    # -- resets ---------------------------------------------------------------------------
    def reset(self, key: jax.Array) -> tuple[MjxState, TimeStep]:
        """Gymnasium's noise distributions drawn with ``jax.random`` (not its numpy stream:
        :meth:`gymnasium_reset_qpos_qvel` gives that one)."""
        s = self.cfg["reset_noise_scale"]
        kq, kv = jax.random.split(key)
        qpos = self.init_qpos + jax.random.uniform(kq, (self.nq,), self.dtype, -s, s)
        if self.kind in ("HalfCheetah", "Ant"):
            qvel = self.init_qvel + s * jax.random.normal(kv, (self.nv,), self.dtype)
        else:
            qvel = self.init_qvel + jax.random.uniform(kv, (self.nv,), self.dtype, -s, s)
        return self.reset_to(qpos, qvel)

    def gymnasium_reset_qpos_qvel(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The qpos/qvel that Gymnasium's ``reset_model`` draws from its ``np_random`` (a
        ``numpy.random.default_rng(seed)``, continued by unseeded resets): qpos noise first."""
        s = self.cfg["reset_noise_scale"]
        qpos = self.init_qpos + rng.uniform(low=-s, high=s, size=self.nq)
        if self.kind in ("HalfCheetah", "Ant"):
            qvel = self.init_qvel + s * rng.standard_normal(self.nv)
        else:
            qvel = self.init_qvel + rng.uniform(low=-s, high=s, size=self.nv)
        return qpos, qvel

    def reset_to(self, qpos, qvel, warmstart=None, t=0) -> tuple[MjxState, TimeStep]:
        """Start from ``qpos``/``qvel`` as Gymnasium's ``set_state`` after ``mj_resetData``
        (``warmstart`` and ``t`` set a mid-episode state, for matched single steps)."""
        qpos = jnp.asarray(qpos, self.dtype).reshape(self.nq)
        qvel = jnp.asarray(qvel, self.dtype).reshape(self.nv)
        ws = (
            jnp.zeros(self.nv, self.dtype)
            if warmstart is None
            else jnp.asarray(warmstart, self.dtype).reshape(self.nv)
        )
        d = self._data0.replace(
            qpos=qpos,
            qvel=qvel,
            qacc_warmstart=ws,
            ctrl=jnp.zeros_like(self._data0.ctrl),
            time=jnp.zeros((), self.dtype),
        )
        # MJX's forward writes the free joints' quaternions back normalized; MuJoCo C's
        # mj_forward leaves qpos as set (Gymnasium's reset observation shows the noisy,
        # unnormalized quaternion). The integrator normalizes it in both at the first step.
        with c_contacts():
            d = mjx.forward(self.model, d).replace(qpos=qpos)
        # the same info keys as a step's (a pytree of one structure through resets and steps)
        _, info, _ = self._reward(d, self._position(d) * 0, jnp.zeros(self.nu, jnp.float32))
        info = {k: jnp.zeros_like(v) for k, v in info.items()} | self._reset_info(d)
        state = MjxState(data=d, t=jnp.asarray(t, jnp.int32), info=info)
        zero = jnp.zeros((), self.dtype)
        return state, TimeStep(self._obs(d), zero, jnp.bool_(False), jnp.bool_(False))

    # -- step -----------------------------------------------------------------------------
    def step(self, state: MjxState, action) -> tuple[MjxState, TimeStep]:
        action = jnp.asarray(action, jnp.float32).reshape(self.nu)
        d = state.data
        before = self._position(d)
        # MuJoCo C clamps ctrl to the actuator range, then zeroes the whole ctrl vector for the
        # step when a value is still bad (a NaN: mjWARN_BADCTRL) and goes on; MJX would carry the
        # NaN into the state. The reward keeps Gymnasium's NaN (its control cost uses the action).
        ctrl = jnp.where(jnp.any(jnp.isnan(action)), 0.0, action).astype(self.dtype)
        d = d.replace(ctrl=ctrl)
        with c_contacts():  # MuJoCo C's plane-capsule contact frame (mjx_port.contacts)
            d = jax.lax.fori_loop(0, self.frame_skip, lambda _, x: mjx.step(self.model, x), d)
        if self.kind == "Ant":
            d = mjx.rne_postconstraint(self.model, d)
        after = self._position(d)
        velocity = (after - before) / self.dt
        obs = self._obs(d)
        reward, info, healthy = self._reward(d, velocity, action)
        terminated = (
            ~healthy & bool(self.cfg["terminate_when_unhealthy"])
            if healthy is not None
            else jnp.bool_(False)
        )
        t = state.t + 1
        truncated = t >= self.max_episode_steps
        return (MjxState(data=d, t=t, info=info), TimeStep(obs, reward, terminated, truncated))

    def _position(self, d):
        if self.kind == "Ant":
            return d.xpos[self.main_body, :2]
        return d.qpos[0]

    def _contact_forces(self, d):
        lo, hi = self.cfg["contact_force_range"]
        return jnp.clip(d.cfrc_ext, lo, hi)

    def _obs(self, d):
        qpos = d.qpos[self.skip :]
        qvel = d.qvel
        if self.kind in ("Hopper", "Walker2d"):
            qvel = jnp.clip(qvel, -10, 10)
        parts = [qpos, qvel]
        if self.kind == "Ant" and self.cfg["include_cfrc_ext_in_observation"]:
            parts.append(self._contact_forces(d)[1:].ravel())
        return jnp.concatenate(parts)

    def _healthy(self, d):
        c = self.cfg
        if self.kind == "Hopper":
            z, angle = d.qpos[1], d.qpos[2]
            state = jnp.concatenate([d.qpos, d.qvel])[2:]
            lo, hi = c["healthy_state_range"]
            zlo, zhi = c["healthy_z_range"]
            alo, ahi = c["healthy_angle_range"]
            return (
                jnp.all((lo < state) & (state < hi))
                & (zlo < z)
                & (z < zhi)
                & (alo < angle)
                & (angle < ahi)
            )
        if self.kind == "Walker2d":
            z, angle = d.qpos[1], d.qpos[2]
            zlo, zhi = c["healthy_z_range"]
            alo, ahi = c["healthy_angle_range"]
            return (zlo < z) & (z < zhi) & (alo < angle) & (angle < ahi)
        if self.kind == "Ant":
            state = jnp.concatenate([d.qpos, d.qvel])
            zlo, zhi = c["healthy_z_range"]
            return jnp.all(jnp.isfinite(state)) & (zlo <= state[2]) & (state[2] <= zhi)
        return None

    def _ctrl_cost(self, action):
        # numpy on Gymnasium's float32 action: float32 squares and sum, the Python-float
        # weight taken as float32 (NEP 50 weak scalar), the product rounded to float32
        # XLA's CPU code fuses float32 squares and adds (fused multiply-adds, folded
        # conversions) so a plain float32 expression differs from numpy by an ulp now and then.
        # With x64 every operation is done in float64 and rounded to float32 explicitly
        # (reduce_precision is bit arithmetic, nothing fuses across it); float64 carries more
        # than 2*24+2 bits, so rounding an exact float64 sum or product to float32 gives the
        # float32 operation's result.
        w = float(np.float32(self.cfg["ctrl_cost_weight"]))
        if jax.config.jax_enable_x64:

            def rnd(v):
                return jax.lax.reduce_precision(v, exponent_bits=8, mantissa_bits=23)

            wide = action.astype(jnp.float64)
            cost = rnd(w * _numpy_pairwise_sum(rnd(wide * wide), rnd))
        else:
            cost = jnp.float32(w) * _numpy_pairwise_sum(jnp.square(action))  # docs/mjx.md
        return cost.astype(self.dtype)

    def _reward(self, d, velocity, action):
        c, dt = self.cfg, self.dtype
        ctrl_cost = self._ctrl_cost(action)
        if self.kind == "Ant":
            x_velocity, y_velocity = velocity[0], velocity[1]
        else:
            x_velocity = velocity
        forward = jnp.asarray(c["forward_reward_weight"], dt) * x_velocity
        info = {"x_velocity": x_velocity, "reward_forward": forward, "reward_ctrl": -ctrl_cost}
        healthy = self._healthy(d)
        if healthy is None:
            reward = forward - ctrl_cost
        else:
            survive = healthy.astype(dt) * jnp.asarray(c["healthy_reward"], dt)
            info["reward_survive"] = survive
            costs = ctrl_cost
            if self.kind == "Ant":
                contact = jnp.asarray(c["contact_cost_weight"], dt) * jnp.sum(
                    jnp.square(self._contact_forces(d))
                )
                info["reward_contact"] = -contact
                costs = ctrl_cost + contact
            reward = (forward + survive) - costs
        info.update(self._reset_info(d))
        if self.kind == "Ant":
            info["y_velocity"] = y_velocity
        return reward, info, healthy

    def _reset_info(self, d) -> dict[str, jax.Array]:
        info = {"x_position": d.qpos[0]}
        if self.kind in ("Hopper", "Walker2d"):
            info["z_distance_from_origin"] = d.qpos[1] - jnp.asarray(self.init_qpos[1], self.dtype)
        if self.kind == "Ant":
            info["y_position"] = d.qpos[1]
            info["distance_from_origin"] = jnp.linalg.norm(d.qpos[0:2])
        return info

    def __hash__(self):  # jit's static self
        return id(self)

    def __eq__(self, other):
        return self is other


def _one(b: np.ndarray):
    return float(b[0]) if np.all(b == b[0]) else b


def make(
    env_id: str, dtype=jnp.float32, max_episode_steps: int = MAX_EPISODE_STEPS, **kwargs
) -> MjxEnv:
    """``make("Hopper-v5", dtype=jnp.float64, healthy_reward=2.0)``: Gymnasium's argument
    names and defaults (see :func:`gymnasium_defaults`)."""
    if env_id not in ENV_IDS:
        raise EnvportError(f"unknown env {env_id!r}; mjx-port has {', '.join(ENV_IDS)}")
    return MjxEnv(env_id, dtype, max_episode_steps, dict(kwargs))
