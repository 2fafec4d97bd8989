"""MuJoCo C 3.17's contacts where MJX 3.17's colliders differ, swapped into MJX's collider table
while the port's step is traced (:func:`c_contacts`).

**Plane-capsule frame (Ant's divergence).** MuJoCo C (``mjc_PlaneCapsule``) gives each of the two
contacts the capsule's axis as the frame's first tangent, and ``mju_makeFrame`` then makes it
orthogonal to the normal and normalizes it, however short the projection is. MJX 3.17's
``plane_capsule`` does the same projection but replaces it by a fixed axis (world y, or z)
whenever the projection's length is below 0.5, i.e. whenever the capsule points more than 60
degrees away from the plane. With pyramidal friction cones the tangent axes are the friction
directions, so the constraint forces then differ: Ant's legs stand steeply on the floor, and the
port parted from C at step 3.

**Capsule-cylinder (Pusher's arm against the object).** C 3.17 has no capsule-cylinder primitive:
the pair goes through ``mjc_Convex`` (native CCD). For a capsule it shrinks the capsule to its
segment and runs GJK between the segment and the cylinder (margin 0 on both supports, the
distance cutoff ``radius + margin``); when the segment stays outside the cylinder (GJK distance
above ``opt.ccd_tolerance``) the witness points are inflated (the capsule's by
``radius + margin/2``, the cylinder's by ``margin/2``, along the witness direction) and give one
contact: ``dist = margin + (gjk_dist - radius - margin)``, ``pos`` the witnesses' midpoint,
normal ``x1 - x2`` normalized. MJX's ``capsule_cylinder`` instead minimizes an SDF from two
starts and makes two contacts (Pusher: -0.003226 and -0.002964 where C has one at -0.0032676).
:func:`capsule_cylinder` is C's GJK (``gjk``, ``subdistance``/``S3D``/``S2D``/``S1D``, the line
and cylinder supports, the Frank-Wolfe stopping test ``x.(x - s) < tol^2/2``, 35 iterations)
written out in JAX, and C's inflation: on Pusher's states it gives C's contact to 1e-16 on
three contacts in four (GJK's iterates are C's), and within dist 1e-10, point 1e-6, normal 6e-5
where its iterate sequence parts from C's by roundoff (one ulp of input moves the port's, and
C's own, contact as much); see docs/mjx.md. Where the segment
enters the cylinder (C runs EPA and clips faces) and where C clips the segment against the
cylinder's flat face (two contacts with the face's normal), MJX's own collider is kept (segment
inside) or one contact is given (face): neither is C's yet.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
from jax import lax
from mujoco.mjx._src import collision_driver, collision_sdf
from mujoco.mjx._src.collision_primitive import _plane_sphere, collider
from mujoco.mjx._src.types import GeomType

MINVAL = 1e-15
MINVAL2 = MINVAL * MINVAL
MAX_LIMIT = 1e10  # mjMAX_LIMIT (only compared with small squared distances here)
FAR = 1e10  # dist of an empty contact slot: beyond any margin, so inactive
# C's opt.ccd_tolerance and opt.ccd_iterations defaults (every Gymnasium v5 model keeps them;
# mjx.Model does not carry them)
CCD_TOLERANCE = 1e-6
CCD_ITERATIONS = 35


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a, b):
    return jnp.stack(
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    )


def _det3(v1, v2, v3):
    return (
        v1[0] * (v2[1] * v3[2] - v2[2] * v3[1])
        + v1[1] * (v2[2] * v3[0] - v2[0] * v3[2])
        + v1[2] * (v2[0] * v3[1] - v2[1] * v3[0])
    )


def _matT_vec(mat, v):  # mat^T v, C's mulMatTVec3
    return jnp.stack(
        [
            mat[0, 0] * v[0] + mat[1, 0] * v[1] + mat[2, 0] * v[2],
            mat[0, 1] * v[0] + mat[1, 1] * v[1] + mat[2, 1] * v[2],
            mat[0, 2] * v[0] + mat[1, 2] * v[1] + mat[2, 2] * v[2],
        ]
    )


def _mat_vec(mat, v):  # mat v, C's mju_mulMatVec3
    return jnp.stack([mat[i, 0] * v[0] + mat[i, 1] * v[1] + mat[i, 2] * v[2] for i in range(3)])


def _normalize(v):  # mju_normalize3
    norm = jnp.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    small = norm < MINVAL
    inv = 1 / jnp.where(small, 1.0, norm)
    return jnp.where(small, jnp.array([1.0, 0.0, 0.0], v.dtype), v * inv)


def _same_sign(a, b):
    return ((a > 0) & (b > 0)) | ((a < 0) & (b < 0))


def _s1d(s1, s2):
    diff = s2 - s1
    scl = -(_dot(s2, diff) / _dot(diff, diff))
    p_o = s2 + scl * diff
    mu = s1 - s2
    i1 = jnp.abs(mu[1]) >= jnp.abs(mu[0])
    idx = jnp.where(i1, 1, 0)
    mu_max = jnp.where(i1, mu[1], mu[0])
    i2 = jnp.abs(mu[2]) >= jnp.abs(mu_max)
    idx = jnp.where(i2, 2, idx)
    mu_max = jnp.where(i2, mu[2], mu_max)
    c1 = p_o[idx] - s2[idx]
    c2 = s1[idx] - p_o[idx]
    same = _same_sign(mu_max, c1) & _same_sign(mu_max, c2)
    return jnp.stack([jnp.where(same, c1 / mu_max, 0.0), jnp.where(same, c2 / mu_max, 1.0)])


def _project_origin_plane(v1, v2, v3):
    d21, d31, d32 = v2 - v1, v3 - v1, v3 - v2
    out = []
    for n, v in ((_cross(d32, d21), v2), (_cross(d21, d31), v1), (_cross(d31, d32), v3)):
        nv, nn = _dot(n, v), _dot(n, n)
        out.append((nn == 0, (nv != 0) & (nn > MINVAL), n * (nv / nn)))
    (z1, ok1, r1), (z2, ok2, r2), (_, _, r3) = out
    fail = z1 | (~ok1 & z2)
    res = jnp.where(ok1, r1, jnp.where(ok2, r2, r3))
    return fail, res


def _s2d(s1, s2, s3):
    fail, p_o = _project_origin_plane(s1, s2, s3)
    m14 = (
        s2[1] * s3[2]
        - s2[2] * s3[1]
        - s1[1] * s3[2]
        + s1[2] * s3[1]
        + s1[1] * s2[2]
        - s1[2] * s2[1]
    )
    m24 = (
        s2[0] * s3[2]
        - s2[2] * s3[0]
        - s1[0] * s3[2]
        + s1[2] * s3[0]
        + s1[0] * s2[2]
        - s1[2] * s2[0]
    )
    m34 = (
        s2[0] * s3[1]
        - s2[1] * s3[0]
        - s1[0] * s3[1]
        + s1[1] * s3[0]
        + s1[0] * s2[1]
        - s1[1] * s2[0]
    )
    mu1, mu2, mu3 = jnp.abs(m14), jnp.abs(m24), jnp.abs(m34)
    drop_x = (mu1 >= mu2) & (mu1 >= mu3)
    drop_y = ~drop_x & (mu2 >= mu3)
    m_max = jnp.where(drop_x, m14, jnp.where(drop_y, m24, m34))
    a = jnp.where(drop_x, 1, 0)
    b = jnp.where(drop_x | drop_y, 2, 1)
    p0, p1 = p_o[a], p_o[b]
    a1, a2 = s1[a], s1[b]
    b1, b2 = s2[a], s2[b]
    c1, c2 = s3[a], s3[b]
    c31 = p0 * b2 + p1 * c1 + b1 * c2 - p0 * c2 - p1 * b1 - c1 * b2
    c32 = p0 * c2 + p1 * a1 + c1 * a2 - p0 * a2 - p1 * c1 - a1 * c2
    c33 = p0 * a2 + p1 * b1 + a1 * b2 - p0 * b2 - p1 * a1 - b1 * a2
    comp1, comp2, comp3 = (_same_sign(m_max, c) for c in (c31, c32, c33))
    inside = jnp.stack([c31 / m_max, c32 / m_max, c33 / m_max])
    zero = jnp.zeros((), s1.dtype)
    lam = jnp.zeros(3, s1.dtype)
    dmin = jnp.asarray(MAX_LIMIT, s1.dtype)
    for comp, (u, v), place in (
        (comp1, (s2, s3), (1, 2)),
        (comp2, (s1, s3), (0, 2)),
        (comp3, (s1, s2), (0, 1)),
    ):
        l1 = _s1d(u, v)
        x = l1[0] * u + l1[1] * v
        dd = _dot(x, x)
        take = ~comp & (dd < dmin)
        cand = jnp.zeros(3, s1.dtype).at[place[0]].set(l1[0]).at[place[1]].set(l1[1])
        lam = jnp.where(take, cand, lam)
        dmin = jnp.where(take, dd, dmin)
    lam = jnp.where(comp1 & comp2 & comp3, inside, lam)
    l_fail = jnp.concatenate([_s1d(s1, s2), zero[None]])
    return jnp.where(fail, l_fail, lam)


def _s3d(s1, s2, s3, s4):
    c41 = -_det3(s2, s3, s4)
    c42 = _det3(s1, s3, s4)
    c43 = -_det3(s1, s2, s4)
    c44 = _det3(s1, s2, s3)
    m_det = c41 + c42 + c43 + c44
    comps = [_same_sign(m_det, c) for c in (c41, c42, c43, c44)]
    inside = jnp.stack([c41 / m_det, c42 / m_det, c43 / m_det, c44 / m_det])
    s = (s1, s2, s3, s4)
    lam = jnp.zeros(4, s1.dtype)
    dmin = jnp.asarray(MAX_LIMIT, s1.dtype)
    for drop in range(4):
        keep = [i for i in range(4) if i != drop]
        l2 = _s2d(*(s[i] for i in keep))
        x = l2[0] * s[keep[0]] + l2[1] * s[keep[1]] + l2[2] * s[keep[2]]
        dd = _dot(x, x)
        take = ~comps[drop] & (dd < dmin)
        cand = jnp.zeros(4, s1.dtype).at[jnp.array(keep)].set(l2)
        lam = jnp.where(take, cand, lam)
        dmin = jnp.where(take, dd, dmin)
    return jnp.where(comps[0] & comps[1] & comps[2] & comps[3], inside, lam)


def _subdistance(n, simplex):
    """C's subdistance for the first n (1..4) vertices of simplex (4, 3)."""
    s1, s2, s3, s4 = simplex
    z = jnp.zeros(4, simplex.dtype)
    l1 = z.at[0].set(1.0)
    l2 = z.at[:2].set(_s1d(s1, s2))
    l3 = z.at[:3].set(_s2d(s1, s2, s3))
    l4 = _s3d(s1, s2, s3, s4)
    return jnp.select([n == 2, n == 3, n == 4], [l2, l3, l4], l1)


def _lincomb(lam, v):
    return lam[0] * v[0] + lam[1] * v[1] + lam[2] * v[2] + lam[3] * v[3]


def _line_support(pos, mat, length, d):
    z = _matT_vec(mat, d)[2]
    t = jnp.where(z >= 0, length, -length)
    return jnp.stack([mat[i, 2] * t for i in range(3)]) + pos


def _cylinder_support(pos, mat, radius, height, margin, d):
    loc = _matT_vec(mat, d)
    n = loc[0] * loc[0] + loc[1] * loc[1]
    big = n > MINVAL2
    s = radius / jnp.sqrt(jnp.where(big, n, 1.0))
    t0 = jnp.where(big, loc[0] * s, 0.0)
    t1 = jnp.where(big, loc[1] * s, 0.0)
    t2 = jnp.where(loc[2] >= 0, height, -height)
    res = jnp.stack([mat[i, 0] * t0 + mat[i, 1] * t1 + mat[i, 2] * t2 for i in range(3)]) + pos
    return res + d * (0.5 * margin)


def gjk_segment_cylinder(
    cap_pos, cap_mat, length, cyl_pos, cyl_mat, radius, height, margin, cutoff, tolerance, kmax
):
    """C's ``gjk()`` (distance mode: a cutoff is set) for the capsule's segment against the
    cylinder, the cylinder's support pushed out by ``margin/2`` (C 3.17's capsule path passes
    0: both margins go into the inflation after), stopping when ``x.(x - s) < tolerance^2/2``,
    after ``kmax`` iterations, or when the support shows the distance above ``cutoff`` (not
    found). Starts from the two geoms' centers. Returns (found, dist, x1, x2): the witness points
    on the segment and on the cylinder, and ``|x1 - x2|`` (0 where a tetrahedron encloses the
    origin: the shapes overlap)."""
    dtype = cap_pos.dtype
    eps = 0.5 * tolerance * tolerance
    cutoff2 = cutoff * cutoff
    z43 = jnp.zeros((4, 3), dtype)
    # state: k, n, status (0 run, 1 done, 2 no contact), x_k, x_norm, lam, S, S1, S2
    init = (
        jnp.int32(0),
        jnp.int32(0),
        jnp.int32(0),
        cap_pos - cyl_pos,
        jnp.zeros((), dtype),
        jnp.array([1.0, 0, 0, 0], dtype),
        z43,
        z43,
        z43,
    )

    def cond(st):
        return (st[2] == 0) & (st[0] < kmax)

    def body(st):
        k, n, status, x_k, x_norm, lam, S, S1, S2 = st
        xn2 = _dot(x_k, x_k)
        tiny = xn2 < MINVAL2
        x_norm = jnp.where(tiny, xn2, jnp.sqrt(xn2))
        inv = 1 / jnp.where(tiny, 1.0, x_norm)
        dir_neg = x_k * inv
        d = dir_neg * -1
        v1 = _line_support(cap_pos, cap_mat, length, d)
        v2 = _cylinder_support(cyl_pos, cyl_mat, radius, height, margin, dir_neg)
        s_k = v1 - v2
        S_, S1_, S2_ = S.at[n].set(s_k), S1.at[n].set(v1), S2.at[n].set(v2)
        gap = _dot(x_k, x_k - s_k) < eps
        vs = _dot(x_k, s_k)
        far = (vs > 0) & ((vs * vs / _dot(x_k, x_k)) >= cutoff2)
        lam_new = _subdistance(n + 1, S_)
        nz = lam_new != 0
        order = jnp.argsort(~nz, stable=True)
        n_new = jnp.sum(nz).astype(jnp.int32)
        lam_c = jnp.where(jnp.arange(4) < n_new, lam_new[order], 0.0)
        Sc, S1c, S2c = S_[order], S1_[order], S2_[order]
        x_next = _lincomb(lam_c, Sc)
        conv = jnp.all(jnp.abs(x_next - x_k) < MINVAL)
        # outcomes in C's order
        stop_tiny = tiny
        stop_gap = ~stop_tiny & gap
        stop_far = ~stop_tiny & ~gap & far
        stop_empty = ~stop_tiny & ~gap & ~far & (n_new < 1)
        proceed = ~stop_tiny & ~gap & ~far & ~(n_new < 1)
        status_new = jnp.where(
            stop_tiny | stop_gap,
            1,
            jnp.where(stop_far | stop_empty, 2, jnp.where(proceed & (conv | (n_new == 4)), 1, 0)),
        )
        n_out = jnp.where(stop_gap & (k == 0), 1, jnp.where(proceed, n_new, n))
        upd = proceed
        lam_out = jnp.where(upd, lam_c, lam)
        S_out = jnp.where(upd, Sc, S_)
        S1_out = jnp.where(upd, S1c, S1_)
        S2_out = jnp.where(upd, S2c, S2_)
        x_out = jnp.where(proceed & ~conv, x_next, x_k)
        k_out = jnp.where(status_new == 0, k + 1, k)
        return (
            k_out,
            n_out,
            status_new.astype(jnp.int32),
            x_out,
            x_norm,
            lam_out,
            S_out,
            S1_out,
            S2_out,
        )

    k, n, status, x_k, x_norm, lam, S, S1, S2 = lax.while_loop(cond, body, init)
    x_norm = jnp.where(n == 4, 0.0, x_norm)  # origin inside a tetrahedron: penetrating
    lam = jnp.where(jnp.arange(4) < n, lam, 0.0)
    x1 = _lincomb(lam, S1)
    x2 = _lincomb(lam, S2)
    return status != 2, x_norm, x1, x2


def _make_frame(normal):
    """mju_makeFrame on (normal, 0, 0)."""
    x = _normalize(normal)
    y = jnp.where(
        (x[1] < 0.5) & (x[1] > -0.5),
        jnp.array([0.0, 1.0, 0.0], x.dtype),
        jnp.array([0.0, 0.0, 1.0], x.dtype),
    )
    y = _normalize(y - x * _dot(x, y))
    return jnp.stack([x, y, _cross(x, y)])


def one_contact(
    cap_pos, cap_mat, r, length, cyl_pos, cyl_mat, radius, height, margin, tolerance=1e-6, kmax=35
):
    """C's ``mjc_Convex`` contact for a capsule (segment half-length ``length``, ``r``) and a
    cylinder when the segment stays outside it: (found, deep, dist, pos, normal); ``deep``
    where C goes on to EPA instead (segment within ``tolerance`` of the cylinder)."""
    full1 = r + 0.5 * margin
    full2 = 0.5 * margin
    found, dist, x1, x2 = gjk_segment_cylinder(
        cap_pos,
        cap_mat,
        length,
        cyl_pos,
        cyl_mat,
        radius,
        height,
        0.0,
        full1 + full2,
        tolerance,
        kmax,
    )
    deep = found & ~(dist > tolerance)
    n = _normalize(x2 - x1)
    x1 = x1 + full1 * n
    x2 = x2 - full2 * n
    dist = dist - (full1 + full2)
    found = found & ~deep & ~(dist > 0)
    cdist = margin + dist
    normal = _normalize(x1 - x2)
    pos = 0.5 * (x1 + x2)
    return found, deep, cdist, pos, normal


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


def _sphere_sphere(pos1, r1, axis1, pos2, r2, axis2, margin):
    """C's ``mjraw_SphereSphere``: (found, dist, pos, normal); ``axis1``/``axis2`` (the geoms'
    z axes) give the normal when the centres coincide."""
    dif = pos1 - pos2
    cdist_sqr = _dot(dif, dif)
    min_dist = margin + r1 + r2
    found = ~(cdist_sqr > min_dist * min_dist)
    dist = jnp.sqrt(cdist_sqr) - r1 - r2
    v = pos2 - pos1
    length = jnp.sqrt(_dot(v, v))
    normal = jnp.where(length < MINVAL, _normalize(_cross(axis1, axis2)), _normalize(v))
    pos = normal * (r1 + dist / 2) + pos1
    return found, dist, pos, normal


def capsule_capsule_contact(pos1, mat1, size1, pos2, mat2, size2, margin):
    """C's ``mjraw_CapsuleCapsule`` with one contact slot: (found, dist, pos, normal). The
    nearest points of the two segments by C's clipping sequence (MJX's
    ``closest_segment_to_segment_points`` regularizes the lines' determinant by 1e-6, which
    moved Hopper's torso-foot contact by 1e-6 and its normal by 2e-5). Parallel axes
    (``|det| < mjMINVAL``): C's first contact; C may add a second there, which the port's one
    slot (MJX's ``make_data`` sizing) cannot hold."""
    z1, z2 = mat1[:, 2], mat2[:, 2]
    axis1, axis2 = z1 * size1[1], z2 * size2[1]
    dif = pos1 - pos2
    ma, mb, mc = _dot(axis1, axis1), -_dot(axis1, axis2), _dot(axis2, axis2)
    u, v = -_dot(axis1, dif), _dot(axis2, dif)
    det = ma * mc - mb * mb
    r1, r2 = size1[0], size2[0]

    def at(x1, x2):
        return _sphere_sphere(axis1 * x1 + pos1, r1, z1, axis2 * x2 + pos2, r2, z2, margin)

    # general configuration: the lines' nearest points, clipped to the segments in C's order
    safe = jnp.where(jnp.abs(det) >= MINVAL, det, 1.0)
    x1 = (mc * u - mb * v) / safe
    x2 = (ma * v - mb * u) / safe
    x1, x2 = (
        jnp.where(x1 > 1, 1.0, jnp.where(x1 < -1, -1.0, x1)),
        jnp.where(x1 > 1, (v - mb) / mc, jnp.where(x1 < -1, (v + mb) / mc, x2)),
    )
    x1 = jnp.where(
        x2 > 1,
        jnp.clip((u - mb) / ma, -1, 1),
        jnp.where(x2 < -1, jnp.clip((u + mb) / ma, -1, 1), x1),
    )
    x2 = jnp.clip(x2, -1, 1)
    general = at(x1, x2)
    # parallel axes: C tries the segments' ends in this order; the first found is its con[0]
    ends = [
        at(1.0, jnp.clip((v - mb) / mc, -1, 1)),
        at(-1.0, jnp.clip((v + mb) / mc, -1, 1)),
        at(jnp.clip((u - mb) / ma, -1, 1), 1.0),
        at(jnp.clip((u + mb) / ma, -1, 1), -1.0),
    ]
    parallel = ends[-1]
    for end in reversed(ends[:-1]):
        parallel = jax.tree_util.tree_map(lambda a, b, f=end[0]: jnp.where(f, a, b), end, parallel)
    is_general = jnp.abs(det) >= MINVAL
    return jax.tree_util.tree_map(lambda a, b: jnp.where(is_general, a, b), general, parallel)


def capsule_capsule(m, d, key, geom):
    """MJX collider (one contact slot per pair, as MJX's own): C's capsule-capsule contact
    (:func:`capsule_capsule_contact`) with C's frame; an inactive slot where C finds none."""
    g1, g2 = geom.T
    margin = m.geom_margin[g1] + m.geom_margin[g2]

    def one(p1, m1, s1, p2, m2, s2, mg):
        found, dist, pos, normal = capsule_capsule_contact(p1, m1, s1, p2, m2, s2, mg)
        return jnp.where(found, dist, FAR), pos, _make_frame(normal)

    return jax.vmap(one)(
        d.geom_xpos[g1], d.geom_xmat[g1], m.geom_size[g1],
        d.geom_xpos[g2], d.geom_xmat[g2], m.geom_size[g2], margin,
    )  # fmt: skip


capsule_capsule.ncon = 1


def capsule_cylinder(m, d, key, geom):
    """MJX collider (two contact slots per pair, as MJX's own, so the data's shapes stay):
    C's single contact in the first slot and an inactive second slot where the capsule's segment
    stays outside the cylinder; MJX's own two contacts where it enters it (C's EPA: not ported)."""
    g1, g2 = geom.T
    margin = m.geom_margin[g1] + m.geom_margin[g2]
    tolerance = jnp.asarray(CCD_TOLERANCE, d.geom_xpos.dtype)
    kmax = CCD_ITERATIONS

    def one(p1, m1, s1, p2, m2, s2, mg):
        found, deep, dist, pos, normal = one_contact(
            p1, m1, s1[0], s1[1], p2, m2, s2[0], s2[1], mg, tolerance, kmax
        )
        return found, deep, jnp.where(found, dist, FAR), pos, _make_frame(normal)

    found, deep, dist, pos, frame = jax.vmap(one)(
        d.geom_xpos[g1],
        d.geom_xmat[g1],
        m.geom_size[g1],
        d.geom_xpos[g2],
        d.geom_xmat[g2],
        m.geom_size[g2],
        margin,
    )
    npair = geom.shape[0]
    c_dist = jnp.stack([dist, jnp.full_like(dist, FAR)], axis=1)
    c_pos = jnp.stack([pos, pos], axis=1)
    c_frame = jnp.stack([frame, frame], axis=1)
    s_dist, s_pos, s_frame = MJX_CAPSULE_CYLINDER(m, d, key, geom)
    s_dist = s_dist.reshape(npair, 2)
    s_pos = s_pos.reshape(npair, 2, 3)
    s_frame = s_frame.reshape(npair, 2, 3, 3)
    dist = jnp.where(deep[:, None], s_dist, c_dist)
    pos = jnp.where(deep[:, None, None], s_pos, c_pos)
    frame = jnp.where(deep[:, None, None, None], s_frame, c_frame)
    return dist.reshape(-1), pos.reshape(-1, 3), frame.reshape(-1, 3, 3)


MJX_CAPSULE_CYLINDER = collision_sdf.capsule_cylinder
capsule_cylinder.ncon = MJX_CAPSULE_CYLINDER.ncon  # 2: make_data sized the contacts with MJX's

PLANE_CAPSULE = (GeomType.PLANE, GeomType.CAPSULE)
CAPSULE_CYLINDER = (GeomType.CAPSULE, GeomType.CYLINDER)
CAPSULE_CAPSULE = (GeomType.CAPSULE, GeomType.CAPSULE)
KEY = PLANE_CAPSULE  # the first pair swapped (kept for callers of the earlier module)
SWAPS = {
    PLANE_CAPSULE: plane_capsule,
    CAPSULE_CYLINDER: capsule_cylinder,
    CAPSULE_CAPSULE: capsule_capsule,
}


@contextlib.contextmanager
def c_contacts():
    """While active (wrap the traced code: MJX picks colliders at trace time), plane-capsule
    contacts use :func:`plane_capsule`, capsule-cylinder contacts :func:`capsule_cylinder` and
    capsule-capsule contacts :func:`capsule_capsule`."""
    table = collision_driver._COLLISION_FUNC
    before = {k: table[k] for k in SWAPS}
    table.update(SWAPS)
    try:
        yield
    finally:
        table.update(before)
