"""pong-port's translation plan: the modules ``envport generate pong`` writes, in dependency
order, from PufferLib 3.0.0's ``ocean/pong`` sources (pong.h holds the whole game)."""

from __future__ import annotations

from pathlib import Path

from envport.plan import ModulePlan, TranslationPlan, read_sources
from pong_port import reference_build

PACKAGE_DIR = Path(__file__).resolve().parents[2]  # packages/pong-port


def _sources(*members: str):
    def read():
        root = reference_build.source_dir()
        return read_sources({f"pufferlib/{m}": root / "pufferlib" / m for m in members})
    return read


def _no_sources():
    return {}


CONSTRAINTS = """\
- Pong is bit-exact (tolerance 0): every float is float32 and rounds as the C code (built for
  baseline x86-64, no FMA) rounds; integer scores are uint32 as in `struct Pong`.
- `rand()` is glibc's global generator shared by all envs of a vec env, drawn in env order."""

PLAN = TranslationPlan(
    package_dir=PACKAGE_DIR,
    language="jax",
    constraints=CONSTRAINTS,
    modules=[
        ModulePlan(
            name="glibc_rand",
            target="src/pong_port/glibc_rand.py",
            reference_sources=_no_sources,  # glibc's random_r.c: a documented algorithm, not vendored
            contract="""\
A numpy model of glibc `srand`/`rand` (TYPE_3 additive feedback, degree 31): `GlibcRand(seed)`
with `.rand()`; `seed_words(seed)` (r[0..30] after srand); `DEG`, `FIRST`; row matrices for
skipping ahead (`jump_rows(start, count)`, `seeded_rows(start, count)`); `window_after(seed, draws)` (the raw words a stream needs after `draws` calls).""",
            tests=["tests/test_glibc_rand.py"],
        ),
        ModulePlan(
            name="stream",
            target="src/pong_port/stream.py",
            reference_sources=_no_sources,
            contract="""\
The glibc stream in JAX: `seed_words`, `srand_window`, `first_rand`, and `SharedStream` (a
buffer of upcoming words shared by N envs; env i that needs a value gets the k-th next, k the
number of envs before it that need one), with `.from_window(words)` and `.draw(stream, needed)`.""",
            tests=["tests/test_glibc_rand.py"],
            depends_on=["glibc_rand"],
        ),
        ModulePlan(
            name="engine",
            target="src/pong_port/engine.py",
            reference_sources=_sources("ocean/pong/pong.h"),
            contract="""\
`PongEngine(config)` over `PongState` (pong_port.types): `observe(s)`, `step(s, action) ->
(s, needs_draw)` = c_step without its rand() call, `take_draw(s, needed, draw)` finishing
reset_round with a rand() value, `fresh(draw)` = a new env after c_reset. Small overridable
methods (`frame`, `bounce_right`, `end_round`, `reset_round`, `paddle_direction`,
`opponent_delta`, `divide`, `multiply`): tests plant bugs by overriding one.""",
            tests=["tests/test_regressions.py"],
            depends_on=["glibc_rand"],
        ),
        ModulePlan(
            name="env",
            target="src/pong_port/env.py",
            reference_sources=_sources("ocean/pong/pong.h", "ocean/pong/pong.py",
                                       "ocean/pong/binding.c"),
            contract="""\
`Pong(config)` (one env, own stream; `reset(key)`, `reset_from_seed(seed)`, `step`) and
`PufferVecPong(num_envs, config)` (N envs sharing one stream, PufferLib's vec env bit for bit);
`PongEnvState(game, rng)`, `pong_spec`, `check_seed`, `MAX_SEED`.""",
            tests=["tests/test_env.py"],
            depends_on=["stream", "engine"],
        ),
    ],
)
