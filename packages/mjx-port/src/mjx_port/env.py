"""Gymnasium's MuJoCo v5 envs as pure JAX envs on MJX.

``make("HalfCheetah-v5", dtype=jnp.float64, **kwargs)`` builds an :class:`MjxEnv` whose
observation, reward, ``terminated``, ``truncated`` (TimeLimit at Gymnasium's registered
``max_episode_steps``) and ``info`` terms are Gymnasium 1.4's, from the XML file of the installed
gymnasium package. Constructor arguments are read off Gymnasium's own ``__init__`` signatures, so
every v5 argument is accepted with Gymnasium's default, and an unknown one is refused by name.

:class:`MjxEnv` does what every env shares (arguments, model, resets, the physics step, the
TimeLimit); one subclass per env gives what differs: its reset draws
(:meth:`MjxEnv._draw_qpos_qvel`, written once for numpy's and JAX's generators), observation,
reward, termination and info terms. :class:`_Locomotion` holds what the forward-moving envs
(HalfCheetah, Hopper, Walker2d, Ant, Swimmer) share.

What keeps the numbers equal to Gymnasium's (docs/mjx.md):

- the control cost is computed as numpy computes it on a float32 action: squares and sum in
  float32, in numpy's pairwise summation order, times the weight rounded to float32 (NEP 50);
- body and site positions (Ant's velocity, Reacher's and Pusher's distances, the inverted
  double pendulum's tip) are read as MuJoCo leaves them after ``mj_step``: computed before the
  last substep's integration (Euler) or at RK4's last stage, not at the new ``qpos``;
- ``cfrc_ext`` is recomputed after the physics steps (Gymnasium calls ``mj_rnePostConstraint``);
- constraints are solved as C 3.17 solves them: per island, with C's stopping tests
  (:mod:`mjx_port.solver`; MJX's own solve stops elsewhere when C stops short of the optimum);
- a reset zeroes ``qacc_warmstart`` (``mj_resetData``) and runs ``forward`` (``set_state``);
- ``mj_step``'s checks, which MJX's ``step`` lacks: a NaN or huge qpos, qvel or qacc resets the
  data and the physics goes on from there (:meth:`MjxEnv._physics_step`).
"""

from __future__ import annotations

import abc
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
from envport.errors import ActionError, EnvportError
from envport.types import Box, EnvSpec, TimeStep
from mjx_port.contacts import c_contacts
from mjx_port.solver import c_solver, supported

GYMNASIUM_VERSION = "1.4.0"
MJ_MAXVAL = 1e10  # mujoco's mjMAXVAL: mju_isBad's bound in mj_step's checks
# mjx.step's integrators (the port runs forward and the integrator itself, with C's checks)
_INTEGRATORS = {
    mjx.IntegratorType.EULER: mjx.euler,
    mjx.IntegratorType.RK4: mjx.rungekutta4,
    mjx.IntegratorType.IMPLICITFAST: mjx.implicit,
}

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


ENV_IDS = (
    "HalfCheetah-v5",
    "Hopper-v5",
    "Walker2d-v5",
    "Ant-v5",
    "Swimmer-v5",
    "Reacher-v5",
    "Pusher-v5",
    "InvertedPendulum-v5",
    "InvertedDoublePendulum-v5",
)


def _gym_classes() -> dict[str, type]:
    import gymnasium
    from gymnasium.envs.mujoco.ant_v5 import AntEnv
    from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv
    from gymnasium.envs.mujoco.hopper_v5 import HopperEnv
    from gymnasium.envs.mujoco.inverted_double_pendulum_v5 import InvertedDoublePendulumEnv
    from gymnasium.envs.mujoco.inverted_pendulum_v5 import InvertedPendulumEnv
    from gymnasium.envs.mujoco.pusher_v5 import PusherEnv
    from gymnasium.envs.mujoco.reacher_v5 import ReacherEnv
    from gymnasium.envs.mujoco.swimmer_v5 import SwimmerEnv
    from gymnasium.envs.mujoco.walker2d_v5 import Walker2dEnv

    if gymnasium.__version__ != GYMNASIUM_VERSION:
        raise EnvportError(
            f"mjx-port reproduces gymnasium {GYMNASIUM_VERSION}'s MuJoCo envs; "
            f"gymnasium {gymnasium.__version__} is installed"
        )
    classes = (
        HalfCheetahEnv,
        HopperEnv,
        Walker2dEnv,
        AntEnv,
        SwimmerEnv,
        ReacherEnv,
        PusherEnv,
        InvertedPendulumEnv,
        InvertedDoublePendulumEnv,
    )
    return dict(zip(ENV_IDS, classes, strict=True))


def _known(env_id: str) -> None:
    if env_id not in ENV_IDS:
        raise EnvportError(f"unknown env {env_id!r}; mjx-port has {', '.join(ENV_IDS)}")


def registered_max_episode_steps(env_id: str) -> int:
    """Gymnasium's registered TimeLimit for ``env_id`` (Reacher 50, Pusher 100, others 1000)."""
    import gymnasium

    _known(env_id)
    _gym_classes()  # the version check
    return int(gymnasium.spec(env_id).max_episode_steps)


def gymnasium_defaults(env_id: str) -> dict[str, Any]:
    """Gymnasium's own constructor defaults for ``env_id`` (rendering arguments left out)."""
    _known(env_id)
    params = inspect.signature(_gym_classes()[env_id].__init__).parameters
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
    # MuJoCo C's automatic resets this episode (a NaN or |x| > 1e10 in qpos, qvel or qacc at
    # a physics step: mj_step's checks, ``mjWARN_BADQPOS/QVEL/QACC``); see ``_physics_step``
    autoresets: jax.Array = field(default_factory=lambda: jnp.zeros((), jnp.int32))


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


class _NumpyDraws:
    """Gymnasium's ``np_random`` (``numpy.random.default_rng(seed)``), called as its
    ``reset_model`` calls it: the same calls in the same order give the same numbers."""

    xp = np

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def uniform(self, low, high, size: int):
        return self.rng.uniform(low=low, high=high, size=size)

    def normal(self, size: int):
        return self.rng.standard_normal(size)

    def until(self, draw, accept):
        """Gymnasium's rejection loops: ``draw(self)`` again until ``accept`` takes it."""
        while True:
            value = draw(self)
            if accept(value):
                return value


class _JaxDraws:
    """The same draws from a JAX key (a fresh split per call), for the jittable
    :meth:`MjxEnv.reset`; a rejection loop is a ``lax.while_loop``."""

    xp = jnp

    def __init__(self, key: jax.Array, dtype):
        self.key, self.dtype = key, dtype

    def _next(self) -> jax.Array:
        self.key, key = jax.random.split(self.key)
        return key

    def uniform(self, low, high, size: int):
        return jax.random.uniform(self._next(), (size,), self.dtype, low, high)

    def normal(self, size: int):
        return jax.random.normal(self._next(), (size,), self.dtype)

    def until(self, draw, accept):
        def body(carry):
            key, _ = carry
            key, sub = jax.random.split(key)
            return key, draw(_JaxDraws(sub, self.dtype))

        return jax.lax.while_loop(lambda c: ~accept(c[1]), body, body((self._next(), None)))[1]


_LAST_X64: list[bool | None] = [None]  # the jax_enable_x64 MJX last ran under here


def enter_precision() -> None:
    """Call before MJX work (an env built, a backend's call): clears JAX's caches when
    jax_enable_x64 differs from the last MJX work in this process. JAX 0.10.2 reuses the staged
    program of a jitted helper called with a numpy constant across x64 settings -- MJX's RK4
    step calls ``jnp.tril`` on a numpy float64 tableau -- and then fails to lower the step
    ("'func.call' op operand type mismatch") for InvertedPendulum, Reacher and the other RK4
    models. ``envport verify mjx`` runs float64 and float32 envs in one process (float32 L2
    suites, PPO policies for L4). A switch recompiles what runs next (the persistent
    compilation cache makes that short); tests/test_mjx_float32.py steps both in turn."""
    x64 = bool(jax.config.jax_enable_x64)
    if _LAST_X64[0] is not None and _LAST_X64[0] != x64:
        jax.clear_caches()
    _LAST_X64[0] = x64


@dataclass
class MjxEnv(Env[MjxState]):
    """One of Gymnasium's v5 MuJoCo envs on MJX (unbatched; batch with ``jax.vmap``), built by
    :func:`make`. This class does what all share; a subclass per env gives its reset draws
    (:meth:`_draw_qpos_qvel`), :meth:`_obs`, :meth:`_reward` (with ``info`` and
    ``terminated``) and :meth:`_reset_info`."""

    env_id: str
    dtype: Any = jnp.float32
    max_episode_steps: int | None = None  # None: Gymnasium's registered TimeLimit
    kwargs: dict[str, Any] = field(default_factory=dict)

    # class settings of the subclasses (not dataclass fields)
    normal_qvel_noise = False  # qvel noise reset_noise_scale * N(0, 1), else U(-s, s)
    needs_cfrc_ext = False  # recompute cfrc_ext after the step (mj_rnePostConstraint)

    def __post_init__(self):
        enter_precision()
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
        if self.max_episode_steps is None:
            self.max_episode_steps = registered_max_episode_steps(self.env_id)
        self.cfg = {**defaults, **{k: v for k, v in self.kwargs.items() if k not in RENDER_ARGS}}
        self.frame_skip = int(self.cfg["frame_skip"])
        if self.frame_skip < 1:
            raise EnvportError(f"frame_skip must be >= 1, got {self.frame_skip}")
        self.mj_model = mujoco.MjModel.from_xml_path(xml_path(self.cfg["xml_file"]))
        if self.mj_model.opt.solver == mujoco.mjtSolver.mjSOL_PGS:
            raise EnvportError(
                f"{self.cfg['xml_file']} uses the PGS solver, which MJX does not implement"
            )
        unsupported = supported(self.mj_model)
        if unsupported:
            raise EnvportError(f"{self.cfg['xml_file']}: {unsupported}")
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
        self._setup()
        obs_shape = jax.eval_shape(self._obs, self._data0).shape
        low, high = self.mj_model.actuator_ctrlrange.astype(np.float32).T
        self._spec = EnvSpec(
            self.env_id,
            f"mjx-port (gymnasium {GYMNASIUM_VERSION})",
            Box(-np.inf, np.inf, obs_shape, np.dtype(self.dtype).type),
            Box(_one(low), _one(high), (self.nu,), np.float32),
            terminated_and_truncated=True,
        )

    @property
    def spec(self) -> EnvSpec:
        return self._spec

    # -- what differs per env (the subclasses) ---------------------------------------------
    def _setup(self) -> None:
        """Per-env lookups (body ids, ...) once the model is loaded."""

    def _draw_qpos_qvel(self, u) -> tuple[Any, Any]:
        """``reset_model``'s draws from ``u`` (:class:`_NumpyDraws` or :class:`_JaxDraws`):
        by default qpos + U(-s, s), then qvel + U(-s, s) or + s * N(0, 1), ``s`` being
        ``reset_noise_scale``."""
        s = self.cfg["reset_noise_scale"]
        qpos = self.init_qpos + u.uniform(-s, s, self.nq)
        if self.normal_qvel_noise:
            return qpos, self.init_qvel + s * u.normal(self.nv)
        return qpos, self.init_qvel + u.uniform(-s, s, self.nv)

    def _position(self, d):
        """What a step's velocity is taken from (read before and after the physics)."""
        return None

    @abc.abstractmethod
    def _obs(self, d) -> jax.Array: ...

    @abc.abstractmethod
    def _reward(self, d, before, action) -> tuple[jax.Array, dict[str, jax.Array], Any]:
        """(reward, info, terminated) after the physics; ``before``: :meth:`_position` then."""

    def _reset_info(self, d) -> dict[str, jax.Array]:
        """Gymnasium's ``_get_reset_info`` (also part of a step's info where Gymnasium's is)."""
        return {}

    # -- helpers for the subclasses ----------------------------------------------------------
    def _weight(self, name: str) -> jax.Array:
        return jnp.asarray(self.cfg[name], self.dtype)

    def _body(self, body: str | int) -> int:
        """A body's id from its name (Gymnasium's ``data.body(name)``) or id."""
        obj = mujoco.mjtObj.mjOBJ_BODY
        i = mujoco.mj_name2id(self.mj_model, obj, body) if isinstance(body, str) else int(body)
        if not 0 <= i < self.mj_model.nbody:
            raise EnvportError(f"{body!r} is not a body of {self.cfg['xml_file']}")
        return i

    def _distance_reward(self, d, a: int, b: int, weight: str) -> jax.Array:
        """``-np.linalg.norm(get_body_com(a) - get_body_com(b)) * weight``."""
        return -jnp.linalg.norm(d.xpos[a] - d.xpos[b]) * self._weight(weight)

    def _square_cost(self, action, weight) -> jax.Array:
        """``weight * np.sum(np.square(action))`` as numpy computes it on Gymnasium's float32
        action: float32 squares and sum, the Python-number weight taken as float32 (NEP 50
        weak scalar), the product rounded to float32 (``-np.square(a).sum() * weight`` is its
        negation: float32 negation is exact).
        XLA's CPU code fuses float32 squares and adds (fused multiply-adds, folded conversions)
        so a plain float32 expression differs from numpy by an ulp now and then. With x64
        every operation is done in float64 and rounded to float32 explicitly (reduce_precision
        is bit arithmetic, nothing fuses across it); float64 carries more than 2*24+2 bits, so
        rounding an exact float64 sum or product to float32 gives the float32 operation's
        result."""
        w = float(np.float32(weight))
        if jax.config.jax_enable_x64:

            def rnd(v):
                return jax.lax.reduce_precision(v, exponent_bits=8, mantissa_bits=23)

            wide = action.astype(jnp.float64)
            cost = rnd(w * _numpy_pairwise_sum(rnd(wide * wide), rnd))
        else:
            cost = jnp.float32(w) * _numpy_pairwise_sum(jnp.square(action))  # docs/mjx.md
        return cost.astype(self.dtype)

    # -- resets -------------------------------------------------------------------------------
    def reset(self, key: jax.Array) -> tuple[MjxState, TimeStep]:
        """Gymnasium's reset distributions drawn with ``jax.random`` (not its numpy stream:
        :meth:`gymnasium_reset_qpos_qvel` gives that one)."""
        return self.reset_to(*self._draw_qpos_qvel(_JaxDraws(key, self.dtype)))

    def gymnasium_reset_qpos_qvel(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The qpos/qvel that Gymnasium's ``reset_model`` draws from its ``np_random`` (a
        ``numpy.random.default_rng(seed)``, continued by unseeded resets), in its order."""
        qpos, qvel = self._draw_qpos_qvel(_NumpyDraws(rng))
        return np.asarray(qpos, np.float64), np.asarray(qvel, np.float64)

    def _check_precision(self) -> None:
        """float32 physics needs jax_enable_x64 off. Checked when a reset or step is traced, as
        the flag can change after the env is built: under x64 MJX makes its new arrays
        float64, so a float32 step would run partly in float64 and hand back float64 fields
        (the frame loop then fails on its carry's dtypes)."""
        if self.dtype == jnp.float32 and jax.config.jax_enable_x64:
            raise EnvportError(
                f"{self.env_id}: this env's physics is float32 but jax_enable_x64 is on, under "
                "which MJX computes parts of the step in float64: build the env with "
                "dtype='float64', or turn x64 off (jax.config.update('jax_enable_x64', False))"
            )

    def reset_to(self, qpos, qvel, warmstart=None, t=0) -> tuple[MjxState, TimeStep]:
        """Start from ``qpos``/``qvel`` as Gymnasium's ``set_state`` after ``mj_resetData``
        (``warmstart`` and ``t`` set a mid-episode state, for matched single steps)."""
        self._check_precision()
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
        with c_contacts(), c_solver():
            d = mjx.forward(self.model, d).replace(qpos=qpos)
        # the same info keys as a step's (a pytree of one structure through resets and steps)
        _, info, _ = self._reward(d, self._position(d), jnp.zeros(self.nu, jnp.float32))
        info = {k: jnp.zeros_like(v) for k, v in info.items()} | self._reset_info(d)
        state = MjxState(data=d, t=jnp.asarray(t, jnp.int32), info=info)
        zero = jnp.zeros((), self.dtype)
        return state, TimeStep(self._obs(d), zero, jnp.bool_(False), jnp.bool_(False))

    # -- step ---------------------------------------------------------------------------------
    def _check_action(self, action) -> jax.Array:
        """The action as Gymnasium's ``do_simulation`` takes it, or ActionError (at trace time:
        shape and dtype are static). Values are not checked: a jitted step cannot raise, and
        MuJoCo C takes any value (clamped to the actuator range; a NaN zeroes ctrl)."""
        try:
            a = jnp.asarray(action)
        except TypeError as e:
            raise ActionError(
                f"{self.env_id}: the action must be a float array of shape ({self.nu},), "
                f"got {type(action).__name__}: {e}"
            ) from None
        if a.shape != (self.nu,):
            # Gymnasium refuses it too ("Action dimension mismatch")
            raise ActionError(
                f"{self.env_id}: the action must have shape ({self.nu},), got {a.shape}"
            )
        if not jnp.issubdtype(a.dtype, jnp.floating):
            raise ActionError(
                f"{self.env_id}: actions are continuous: a float array, got dtype {a.dtype}"
            )
        return a.astype(jnp.float32)

    def _reset_forwarded(self) -> mjx.Data:
        """``mj_resetData`` then ``mj_forward``: the data an automatic reset leaves before its
        integration, the same for every env of a batch. Computed once, when the step is first
        traced (a constant of the compiled step, not a forward pass per step)."""
        if not hasattr(self, "_reset_fwd"):
            with jax.ensure_compile_time_eval(), c_contacts(), c_solver():
                self._reset_fwd = jax.jit(lambda d: mjx.forward(self.model, d))(self._data0)
        return self._reset_fwd

    def _physics_step(self, d: mjx.Data, resets: jax.Array) -> tuple[mjx.Data, jax.Array]:
        """One ``mj_step``, with its checks: a bad qpos or qvel (NaN, or |x| > mjMAXVAL = 1e10)
        resets the data (``mj_resetData``: the model's qpos0, zero velocities, ctrl and
        warm start, time 0) before ``forward``; a bad qacc after ``forward`` resets it and runs
        ``forward`` again; then the integrator. MJX's ``step`` has none of these checks, so a
        blown-up state would carry NaN on; C goes on from the reset pose (and prints a
        warning), and so does the port (``MjxState.autoresets`` counts them). The ctrl stays
        zero for the rest of the env step, as in C (Gymnasium sets ctrl once per env step)."""

        def bad(x):
            return jnp.any(~(jnp.abs(x) <= MJ_MAXVAL))  # NaN compares False

        def reset_if(flag, data, fresh):
            # (astype: make_data's tendon index fields are int32 where a step's are int64)
            return jax.tree.map(lambda a, b: jnp.where(flag, a, b).astype(b.dtype), fresh, data)

        bad_state = bad(d.qpos) | bad(d.qvel)
        d = reset_if(bad_state, d, self._data0)
        d = mjx.forward(self.model, d)
        bad_acc = bad(d.qacc)
        d = reset_if(bad_acc, d, self._reset_forwarded())
        d = _INTEGRATORS[self.model.opt.integrator](self.model, d)
        return d, resets + (bad_state | bad_acc).astype(jnp.int32)

    def step(self, state: MjxState, action) -> tuple[MjxState, TimeStep]:
        action = self._check_action(action)
        self._check_precision()
        d = state.data
        before = self._position(d)
        # MuJoCo C clamps ctrl to the actuator range, then zeroes the whole ctrl vector for the
        # step when a value is still bad (a NaN: mjWARN_BADCTRL) and goes on; MJX would carry the
        # NaN into the state. The reward keeps Gymnasium's NaN (its control cost uses the action).
        ctrl = jnp.where(jnp.any(jnp.isnan(action)), 0.0, action).astype(self.dtype)
        d = d.replace(ctrl=ctrl)
        # MuJoCo C's plane-capsule contact frame and constraint solve (mjx_port.contacts,
        # mjx_port.solver)
        with c_contacts(), c_solver():
            d, resets = jax.lax.fori_loop(
                0, self.frame_skip, lambda _, c: self._physics_step(*c), (d, state.autoresets)
            )
        if self.needs_cfrc_ext:
            d = mjx.rne_postconstraint(self.model, d)
        obs = self._obs(d)
        reward, info, terminated = self._reward(d, before, action)
        t = state.t + 1
        truncated = t >= self.max_episode_steps
        return (
            MjxState(data=d, t=t, info=info, autoresets=resets),
            TimeStep(
                obs, jnp.asarray(reward, self.dtype), jnp.asarray(terminated, bool), truncated
            ),
        )

    def __hash__(self):  # jit's static self
        return id(self)

    def __eq__(self, other):
        return self is other


# -- the locomotion envs ---------------------------------------------------------------------
class _Locomotion(MjxEnv):
    """HalfCheetah, Hopper, Walker2d, Ant, Swimmer: ``forward_reward_weight`` times the x
    velocity of :meth:`_position` minus the control cost; the envs that can fall
    (:meth:`_healthy`) add ``healthy_reward`` and end when unhealthy; Ant subtracts a contact
    cost. Planar envs (Ant, Swimmer) move in x and y: both positions are left out of the
    observation, and ``info`` has the y terms."""

    planar = False
    clip_qvel = False  # the observation's qvel clipped to [-10, 10] (Hopper, Walker2d)

    def _position(self, d):
        return d.qpos[:2] if self.planar else d.qpos[:1]

    def _obs(self, d):
        skip = (2 if self.planar else 1) * bool(
            self.cfg["exclude_current_positions_from_observation"]
        )
        qvel = jnp.clip(d.qvel, -10, 10) if self.clip_qvel else d.qvel
        return jnp.concatenate([d.qpos[skip:], qvel])

    def _healthy(self, d) -> jax.Array | None:
        return None

    def _contact_cost(self, d) -> jax.Array | None:
        return None

    def _ctrl_cost(self, action):
        return self._square_cost(action, self.cfg["ctrl_cost_weight"])

    def _reward(self, d, before, action):
        velocity = (self._position(d) - before) / self.dt
        forward = self._weight("forward_reward_weight") * velocity[0]
        ctrl_cost = self._ctrl_cost(action)
        info = {"x_velocity": velocity[0], "reward_forward": forward, "reward_ctrl": -ctrl_cost}
        if self.planar:
            info["y_velocity"] = velocity[1]
        healthy = self._healthy(d)
        if healthy is None:
            reward, terminated = forward - ctrl_cost, False
        else:
            survive = healthy.astype(self.dtype) * self._weight("healthy_reward")
            info["reward_survive"] = survive
            costs = ctrl_cost
            contact = self._contact_cost(d)
            if contact is not None:
                info["reward_contact"] = -contact
                costs = ctrl_cost + contact
            reward = (forward + survive) - costs
            terminated = ~healthy & bool(self.cfg["terminate_when_unhealthy"])
        return reward, info | self._reset_info(d), terminated

    def _reset_info(self, d):
        info = {"x_position": d.qpos[0]}
        if self.planar:
            info["y_position"] = d.qpos[1]
            info["distance_from_origin"] = jnp.linalg.norm(d.qpos[0:2])
        return info


class HalfCheetah(_Locomotion):
    normal_qvel_noise = True


class Swimmer(_Locomotion):
    """Three links in a viscous fluid (MJX's inertia-box fluid model, as C's)."""

    planar = True


class Hopper(_Locomotion):
    clip_qvel = True

    def _healthy(self, d):
        c = self.cfg
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

    def _reset_info(self, d):
        z0 = jnp.asarray(self.init_qpos[1], self.dtype)
        return super()._reset_info(d) | {"z_distance_from_origin": d.qpos[1] - z0}


class Walker2d(Hopper):
    """Hopper's observation and info; healthy on height and angle only."""

    def _healthy(self, d):
        z, angle = d.qpos[1], d.qpos[2]
        zlo, zhi = self.cfg["healthy_z_range"]
        alo, ahi = self.cfg["healthy_angle_range"]
        return (zlo < z) & (z < zhi) & (alo < angle) & (angle < ahi)


class Ant(_Locomotion):
    """Velocity of the main body's ``xpos`` (as MuJoCo leaves it after ``mj_step``); the
    clipped external contact forces ``cfrc_ext`` in the observation and the contact cost."""

    planar = True
    normal_qvel_noise = True
    needs_cfrc_ext = True

    def _setup(self):
        self.main_body = self._body(self.cfg["main_body"])

    def _position(self, d):
        return d.xpos[self.main_body, :2]

    def _contact_forces(self, d):
        lo, hi = self.cfg["contact_force_range"]
        return jnp.clip(d.cfrc_ext, lo, hi)

    def _obs(self, d):
        obs = super()._obs(d)
        if self.cfg["include_cfrc_ext_in_observation"]:
            obs = jnp.concatenate([obs, self._contact_forces(d)[1:].ravel()])
        return obs

    def _healthy(self, d):
        state = jnp.concatenate([d.qpos, d.qvel])
        zlo, zhi = self.cfg["healthy_z_range"]
        return jnp.all(jnp.isfinite(state)) & (zlo <= state[2]) & (state[2] <= zhi)

    def _contact_cost(self, d):
        return self._weight("contact_cost_weight") * jnp.sum(jnp.square(self._contact_forces(d)))


# -- the arms and the pendulums ----------------------------------------------------------------
class Reacher(MjxEnv):
    """A two-joint arm and a target placed uniformly in the disc of radius 0.2 (Gymnasium's
    rejection loop over the square); reward: minus the fingertip's distance to the target,
    minus ``reward_control_weight`` times the squared action."""

    def _setup(self):
        self.fingertip, self.target = self._body("fingertip"), self._body("target")

    def _draw_qpos_qvel(self, u):
        xp = u.xp
        qpos = u.uniform(-0.1, 0.1, self.nq) + self.init_qpos
        goal = u.until(lambda v: v.uniform(-0.2, 0.2, 2), lambda g: xp.linalg.norm(g) < 0.2)
        qvel = self.init_qvel + u.uniform(-0.005, 0.005, self.nv)
        return xp.concatenate([qpos[:-2], goal]), xp.concatenate([qvel[:-2], xp.zeros(2)])

    def _obs(self, d):
        theta = d.qpos[:2]
        to_target = d.xpos[self.fingertip] - d.xpos[self.target]
        return jnp.concatenate(
            [jnp.cos(theta), jnp.sin(theta), d.qpos[2:], d.qvel[:2], to_target[:2]]
        )

    def _reward(self, d, before, action):
        dist = self._distance_reward(d, self.fingertip, self.target, "reward_dist_weight")
        ctrl = -self._square_cost(action, self.cfg["reward_control_weight"])
        return dist + ctrl, {"reward_dist": dist, "reward_ctrl": ctrl}, False


class Pusher(MjxEnv):
    """A 7-joint arm pushing a cylinder (placed by Gymnasium's rejection loop, more than 0.17
    from the goal at the origin) to the goal; reward: minus the distances object-goal and (times
    ``reward_near_weight``) object-arm tip, minus the control term."""

    def _setup(self):
        self.tips_arm, self.object, self.goal = map(self._body, ("tips_arm", "object", "goal"))

    def _draw_qpos_qvel(self, u):
        xp = u.xp
        cylinder = u.until(
            lambda v: xp.concatenate([v.uniform(-0.3, 0, 1), v.uniform(-0.2, 0.2, 1)]),
            lambda c: xp.linalg.norm(c) > 0.17,  # its distance from the goal (0, 0)
        )
        qvel = self.init_qvel + u.uniform(-0.005, 0.005, self.nv)
        qpos = xp.concatenate([self.init_qpos[:-4], cylinder, xp.zeros(2)])
        return qpos, xp.concatenate([qvel[:-4], xp.zeros(4)])

    def _obs(self, d):
        bodies = [d.xpos[b] for b in (self.tips_arm, self.object, self.goal)]
        return jnp.concatenate([d.qpos[:7], d.qvel[:7], *bodies])

    def _reward(self, d, before, action):
        near = self._distance_reward(d, self.object, self.tips_arm, "reward_near_weight")
        dist = self._distance_reward(d, self.object, self.goal, "reward_dist_weight")
        ctrl = -self._square_cost(action, self.cfg["reward_control_weight"])
        info = {"reward_dist": dist, "reward_ctrl": ctrl, "reward_near": near}
        return (dist + ctrl) + near, info, False


class InvertedPendulum(MjxEnv):
    """A pole on a cart; reward 1 per step until the pole leaves +-0.2 rad (or a value is not
    finite), which ends the episode (that step's reward is 0)."""

    def _obs(self, d):
        return jnp.concatenate([d.qpos, d.qvel])

    def _reward(self, d, before, action):
        obs = self._obs(d)
        terminated = ~jnp.all(jnp.isfinite(obs)) | (jnp.abs(obs[1]) > 0.2)
        reward = (~terminated).astype(self.dtype)
        return reward, {"reward_survive": reward}, terminated


class InvertedDoublePendulum(MjxEnv):
    """Two poles on a cart; ends when the tip site's height is <= 1. Reward: ``healthy_reward``
    while alive, minus the tip's distance and the joints' velocity penalties. The observation
    has the slider's constraint force (``qfrc_constraint``, clipped), as MuJoCo leaves it."""

    normal_qvel_noise = True

    def _obs(self, d):
        return jnp.concatenate(
            [
                d.qpos[:1],
                jnp.sin(d.qpos[1:]),
                jnp.cos(d.qpos[1:]),
                jnp.clip(d.qvel, -10, 10),
                jnp.clip(d.qfrc_constraint, -10, 10)[:1],
            ]
        )

    def _reward(self, d, before, action):
        x, _, y = d.site_xpos[0]
        terminated = y <= 1
        v1, v2 = d.qvel[1], d.qvel[2]
        dist_penalty = 0.01 * x**2 + (y - 2) ** 2
        vel_penalty = 1e-3 * v1**2 + 5e-3 * v2**2
        alive = self._weight("healthy_reward") * (~terminated).astype(self.dtype)
        info = {
            "reward_survive": alive,
            "distance_penalty": -dist_penalty,
            "velocity_penalty": -vel_penalty,
        }
        return alive - dist_penalty - vel_penalty, info, terminated


_CLASSES: dict[str, type[MjxEnv]] = dict(
    zip(
        ENV_IDS,
        (
            HalfCheetah,
            Hopper,
            Walker2d,
            Ant,
            Swimmer,
            Reacher,
            Pusher,
            InvertedPendulum,
            InvertedDoublePendulum,
        ),
        strict=True,
    )
)


def _one(b: np.ndarray):
    return float(b[0]) if np.all(b == b[0]) else b


def make(env_id: str, dtype=jnp.float32, max_episode_steps: int | None = None, **kwargs) -> MjxEnv:
    """``make("Hopper-v5", dtype=jnp.float64, healthy_reward=2.0)``: Gymnasium's argument
    names and defaults (see :func:`gymnasium_defaults`); ``max_episode_steps`` defaults to
    Gymnasium's registered TimeLimit (:func:`registered_max_episode_steps`)."""
    _known(env_id)
    return _CLASSES[env_id](env_id, dtype, max_episode_steps, dict(kwargs))
