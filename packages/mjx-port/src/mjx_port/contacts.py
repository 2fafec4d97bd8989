"""MuJoCo C's plane-capsule contact frame for MJX (the cause of Ant's divergence, issue 22).

MuJoCo C (``mjc_PlaneCapsule``) gives each of the two contacts the capsule's axis as the
frame's first tangent, and ``mju_makeFrame`` then makes it orthogonal to the normal and
normalizes it, however short the projection is. MJX 3.17's ``plane_capsule`` does the same
projection but replaces it by a fixed axis (world y, or z) whenever the projection's length
is below 0.5, i.e. whenever the capsule points more than 60 degrees away from the plane. With
pyramidal friction cones the tangent axes are the friction directions, so the constraint forces
then differ: Ant's legs stand steeply on the floor, and the port parted from C at step 3.

:func:`c_contacts` swaps MJX's collider for this pair for C's while a step is traced (MJX
looks its colliders up when it traces), leaving MJX's table as it was afterwards.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
from mujoco.mjx._src import collision_driver
from mujoco.mjx._src.collision_primitive import _plane_sphere, collider
from mujoco.mjx._src.types import GeomType

MINVAL = 1e-15  # mjMINVAL: mju_normalize3 returns (1, 0, 0) below it


@collider(ncon=2)
def plane_capsule(plane, cap):
    """Two contacts (the capsule's end spheres against the plane) with C's frame."""
    n, axis = plane.mat[:, 2], cap.mat[:, 2]
    b = axis - n * jnp.dot(n, axis)
    norm = jnp.sqrt(jnp.dot(b, b))
    small = norm < MINVAL
    b = jnp.where(small, jnp.array([1.0, 0.0, 0.0], b.dtype), b / jnp.where(small, 1.0, norm))
    frame = jnp.array([[n, b, jnp.cross(n, b)]])
    segment = axis * cap.size[1]
    out = []
    for offset in (segment, -segment):
        dist, pos = _plane_sphere(n, plane.pos, cap.pos + offset, cap.size[0])
        out.append((dist[None], pos[None], frame))
    return jax.tree_util.tree_map(lambda *x: jnp.concatenate(x), *out)


KEY = (GeomType.PLANE, GeomType.CAPSULE)


@contextlib.contextmanager
def c_contacts():
    """While active (wrap the traced code: MJX picks colliders at trace time), plane-capsule
    contacts use :func:`plane_capsule`."""
    table = collision_driver._COLLISION_FUNC
    before = table[KEY]
    table[KEY] = plane_capsule
    try:
        yield
    finally:
        table[KEY] = before
