"""tcgjax's translation plan: the JAX modules ``envport generate`` would write, in dependency
order, each from the reference modules (``tcgjax.reference``) and the written specification
that define its behaviour. Not registered yet: ``tcgjax.port`` (which would carry it as
``EnvPort.plan``) is still to be written (docs/tcgjax.md "Status")."""

from __future__ import annotations

from pathlib import Path

from envport.plan import ModulePlan, TranslationPlan, read_sources

PACKAGE_DIR = Path(__file__).resolve().parents[2]  # packages/tcgjax
SRC = PACKAGE_DIR / "src" / "tcgjax"


def _sources(*paths: str):
    def read():
        return read_sources({p: SRC / p for p in paths})

    return read


CONSTRAINTS = """\
- Bit-exact with tcgjax.reference: the state is the reference's `to_arrays` layout (same field
  names, shapes and dtypes), and after every action every field and the legal mask are equal.
- Every random number comes from the reference's counter RNG (fmix32(seed, counter)), drawn in
  exactly the documented order (docs/tcgjax.md "RNG and draw order"), in uint32 arithmetic.
- Cards, attacks and effects are data tables (tables.py); effect steps are op codes run under
  lax.switch; no Python control flow on traced values; jit and vmap over a batch of games.
- D5: a pending choice with a single option is taken automatically, as the reference does."""

PLAN = TranslationPlan(
    package_dir=PACKAGE_DIR,
    language="jax",
    constraints=CONSTRAINTS,
    modules=[
        ModulePlan(
            name="tables",
            target="src/tcgjax/engine/tables.py",
            reference_sources=_sources(
                "reference/cards.py", "reference/state.py", "spec/EFFECTS.md"
            ),
            contract="`TABLES` (numpy, per card index), `OPS`/`OP`, `STEP_COLS`/`SC`, `COND`, "
            "`MODS`, `DAMAGE_PHASE`; steps addressed [card, source, slot].",
            tests=["tests/test_engine_legal.py"],
        ),
        ModulePlan(
            name="rng",
            target="src/tcgjax/engine/rng.py",
            reference_sources=_sources("reference/rng.py"),
            contract="`fmix32`, `raw_u32`, `mulhi_lo`, `coin(seed, ctr)`, "
            "`uniform(seed, ctr, n, active)`, `shuffle(seed, ctr, xs, length)`; uint32 counters.",
            tests=["tests/test_engine_rng.py"],
        ),
        ModulePlan(
            name="state",
            target="src/tcgjax/engine/state.py",
            reference_sources=_sources("reference/arrays.py"),
            contract="`from_reference`, `to_reference`, `to_numpy`, `stack_states`, `diff`.",
            tests=["tests/test_engine_legal.py"],
        ),
        ModulePlan(
            name="legal",
            target="src/tcgjax/engine/legal.py",
            reference_sources=_sources("reference/engine.py", "reference/actions.py"),
            contract="`legal_mask(state) -> bool[76]` and the helpers `top_cards`, `matches`, "
            "`target_slots`, `step_row`, `can_pay`, `has_kind`, `card`, `T`, `KIND`.",
            tests=["tests/test_engine_legal.py"],
            depends_on=["tables", "state"],
        ),
        ModulePlan(
            name="setup",
            target="src/tcgjax/engine/setup.py",
            reference_sources=_sources("reference/engine.py"),
            contract="`new_game(deck_cards, energy_types, seed)`, `deck_arrays(a, b)`, `_BLANK`.",
            tests=["tests/test_engine_setup.py"],
            depends_on=["rng", "tables"],
        ),
        ModulePlan(
            name="step",
            target="src/tcgjax/engine/step.py",
            reference_sources=_sources("reference/engine.py", "spec/RULES.md", "spec/EFFECTS.md"),
            contract="`step(state, action) -> state` for a legal action of the decider.",
            tests=["tests/test_engine_step.py"],
            depends_on=["legal", "setup", "rng"],
        ),
        ModulePlan(
            name="observe",
            target="src/tcgjax/engine/observe.py",
            reference_sources=_sources("reference/observe.py", "spec/RULES.md"),
            contract="`observe(state, player) -> float32[OBS_SIZE]`, `OBS_SIZE`.",
            tests=["tests/test_tcgjax_env.py"],
            depends_on=["legal"],
        ),
    ],
)
