"""MuJoCo C 3.17's Newton constraint solve, for MJX (found on Reacher-v5 and Swimmer-v5, issue 22).

One MJX step from a state where C's Newton solver stops before the exact optimum parts from C
by up to ~1e-4 in qacc (1e-7 in qvel one step later): Reacher with the elbow against its joint
limit, Swimmer with a joint at its limit. Measured on C 3.17 (``mj_forward`` on those states,
``opt.tolerance`` and ``ls_tolerance`` varied; the solver statistics in ``MjData.solver``):

- C 3.17 also stops when the Newton decrement of the new point, ``0.5 * grad . H^-1 grad``
  scaled (the improvement the next Newton step would make), is below ``opt.tolerance``. MJX
  stops on the improvement and gradient only. On Reacher, C stops after one iteration 1.2e-4
  from the optimum in qacc (decrement 3.44e-9; C takes the second step exactly when the
  tolerance is below 3.44e-9), MJX takes that second step. The first step is always taken
  (Swimmer: a first step that improves by 1.9e-9 < 1e-8, taken by C).
- C 3.17 solves per constraint island (``mjDSBL_ISLAND`` is off by default): the kinematic trees
  linked by constraint rows, each island with its own line searches and stopping tests, scaled
  by the island's inertia (the sum of its diagonal of M: C's gradient statistic on Reacher is
  reproduced to the last digit with it). Dofs in no island get ``qacc_smooth``. MJX solves all
  dofs at once, scaled by the trace of the whole M: the same for single-tree models
  (HalfCheetah, Hopper, Walker2d, Ant, Swimmer, the pendulums), not for Reacher (arm and target)
  or Pusher (arm, object, goal).

:func:`solve` is MJX's Newton solve with those two rules (its line search, cost, gradient and
Hessian are MJX's own functions); :func:`c_solver` swaps it in while a step is traced (MJX
looks ``solver.solve`` up when it traces), leaving MJX as it was afterwards. Newton solver and
pyramidal friction cones only (every Gymnasium v5 model the port runs).
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
from mujoco.mjx._src import solver as mjx_solver
from mujoco.mjx._src.types import ConeType, DisableBit, SolverType


def supported(mj_model) -> str | None:
    """Why :func:`solve` cannot stand for C's solver on this model, or None."""
    import mujoco

    if mj_model.opt.solver != mujoco.mjtSolver.mjSOL_NEWTON:
        return "the port reproduces C's Newton solver only"
    if mj_model.opt.cone != mujoco.mjtCone.mjCONE_PYRAMIDAL:
        return "the port reproduces C's solver with pyramidal friction cones only"
    if mj_model.opt.noslip_iterations:
        return "the port does not reproduce C's noslip solver"
    return None


def _islands(m, d) -> tuple[jax.Array, jax.Array]:
    """C's constraint islands as masks over trees: ``(ntree, ntree)`` with row ``r`` the trees of
    the island whose smallest tree is ``r`` (empty when ``r`` starts no island), and ``(nefc,
    ntree)``: the trees each constraint row touches (an inactive row touches none: MJX zeroes
    its Jacobian)."""
    ntree = int(np.max(m.dof_treeid)) + 1
    dof_tree = jnp.asarray(np.eye(ntree, dtype=bool)[np.asarray(m.dof_treeid)])  # (nv, ntree)
    row_tree = (d._impl.efc_J != 0).astype(jnp.int32) @ dof_tree.astype(jnp.int32) > 0
    linked = (row_tree.T.astype(jnp.int32) @ row_tree.astype(jnp.int32)) > 0  # (ntree, ntree)
    reach = linked
    for _ in range(max(1, ntree.bit_length())):  # transitive closure by squaring
        reach = reach | ((reach.astype(jnp.int32) @ reach.astype(jnp.int32)) > 0)
    constrained = jnp.diag(linked)
    first = jnp.argmax(reach, axis=1)  # the smallest tree of each constrained tree's island
    root = constrained & (first == jnp.arange(ntree))
    return (reach & root[:, None]), row_tree


def _solve_island(m, d, qacc0, dof_mask, row_mask):
    """Newton iterations on one island: rows and dofs outside it are held at zero force and
    ``qacc_smooth`` (the cost separates over islands, M is block-diagonal over trees)."""
    d = d.tree_replace(
        {
            "_impl.efc_J": d._impl.efc_J * row_mask[:, None],
            "_impl.efc_aref": d._impl.efc_aref * row_mask,
        }
    ).replace(qacc=jnp.where(dof_mask, qacc0, d.qacc_smooth))
    inertia = jnp.maximum(1e-15, jnp.sum(jnp.where(dof_mask, jnp.diagonal(_full_m(m, d)), 0)))

    def scaled(x):
        return x / inertia

    trace_m = mjx_solver._trace_m
    mjx_solver._trace_m = lambda m_, d_: inertia  # the line search's tolerance, C's scale
    try:
        ctx = mjx_solver.Context.create(m, d)

        def cond(carry):
            ctx, done = carry
            return ~done & (ctx.solver_niter < m.opt.iterations)

        def body(carry):
            ctx, _ = carry
            new = mjx_solver._linesearch(m, d, ctx)
            new = mjx_solver._update_constraint(m, d, new)
            new = mjx_solver._update_gradient(m, d, new)
            improvement = scaled(ctx.cost - new.cost)
            gradient = scaled(jnp.linalg.norm(new.grad))
            decrement = 0.5 * scaled(jnp.dot(new.grad, new.Mgrad))  # C 3.17's third test
            tol = m.opt.tolerance
            done = (improvement < tol) | (gradient < tol) | (decrement < tol)
            return new.replace(search=-new.Mgrad, solver_niter=ctx.solver_niter + 1), done

        ctx, _ = jax.lax.while_loop(cond, body, (ctx, jnp.bool_(False)))
    finally:
        mjx_solver._trace_m = trace_m
    return ctx.qacc, ctx.efc_force


def _full_m(m, d):
    from mujoco.mjx._src import support

    return support.full_m(m, d)


def solve(m, d):
    """C 3.17's Newton solve (see the module's docstring), in place of MJX's ``solver.solve``."""
    if m.opt.solver != SolverType.NEWTON or m.opt.cone != ConeType.PYRAMIDAL:
        raise NotImplementedError("mjx_port.solver: Newton with pyramidal cones only")
    # warm start: C keeps qacc_warmstart unless qacc_smooth costs less
    qacc = d.qacc_smooth
    if not m.opt.disableflags & DisableBit.WARMSTART:
        warm = mjx_solver.Context.create(m, d.replace(qacc=d.qacc_warmstart), grad=False)
        smth = mjx_solver.Context.create(m, d.replace(qacc=d.qacc_smooth), grad=False)
        qacc = jnp.where(warm.cost > smth.cost, d.qacc_smooth, d.qacc_warmstart)
    islands, row_tree = _islands(m, d)
    dof_tree = np.asarray(m.dof_treeid)

    def one(island):  # island: (ntree,) bool
        dof_mask = island[dof_tree]
        row_mask = jnp.any(row_tree & island, axis=1)
        qacc_i, force_i = _solve_island(m, d, qacc, dof_mask, row_mask)
        return jnp.where(dof_mask, qacc_i, 0), jnp.where(row_mask, force_i, 0), dof_mask

    if islands.shape[0] == 1:
        qaccs, forces, masks = jax.tree_util.tree_map(lambda x: x[None], one(islands[0]))
    else:
        qaccs, forces, masks = jax.lax.map(one, islands)
    in_island = jnp.any(masks, axis=0)
    qacc = jnp.where(in_island, jnp.sum(qaccs, axis=0), d.qacc_smooth)
    efc_force = jnp.sum(forces, axis=0)
    return d.tree_replace(
        {
            "qfrc_constraint": d._impl.efc_J.T @ efc_force,
            "qacc": qacc,
            "_impl.efc_force": efc_force,
        }
    )


@contextlib.contextmanager
def c_solver():
    """While active (wrap the traced code), MJX's forward solves constraints with
    :func:`solve`."""
    mjx_own = mjx_solver.solve
    mjx_solver.solve = solve
    try:
        yield
    finally:
        mjx_solver.solve = mjx_own
