"""Regression for Ant's divergence (issue 22): the plane-capsule contact frame.

A capsule standing 70 degrees from a plane, inside the contact margin: MuJoCo C's contact frame
has the capsule axis (projected on the plane) as its first tangent; MJX 3.17's own collider
falls back to world y there. The port's collider reproduces C's frame.
"""

import jax
import mujoco
import numpy as np
from mujoco import mjx

from mjx_port.contacts import c_contacts

XML = """
<mujoco>
  <option cone="pyramidal"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body pos="0 0 0.3" euler="0 20 35">
      <freejoint/>
      <geom name="leg" type="capsule" size="0.08 0.2" margin="0.02"/>
    </body>
  </worldbody>
</mujoco>
"""


def frames(use_c_collider: bool):
    model = mujoco.MjModel.from_xml_string(XML)
    data = mujoco.MjData(model)
    data.qpos[2] = 0.2 * np.cos(np.radians(20)) + 0.08 + 0.01  # lowest end 0.01 above the floor
    mujoco.mj_forward(model, data)
    c = np.array([data.contact.frame[i] for i in range(data.ncon)])

    def forward(d):
        if use_c_collider:
            with c_contacts():
                return mjx.forward(mjx.put_model(model), d)
        return mjx.forward(mjx.put_model(model), d)

    d = jax.jit(forward)(mjx.put_data(model, data))
    dist = np.asarray(d._impl.contact.dist)
    port = np.asarray(d._impl.contact.frame)[dist < model.geom_margin.max()]
    return c, port.reshape(len(port), 9)


def test_mjx_collider_differs_from_c():
    c, mjx_own = frames(use_c_collider=False)
    assert len(c) == 1 and len(mjx_own) == 1
    assert np.abs(mjx_own - c).max() > 0.1  # MJX's fallback tangent: the MJX behaviour we fix


def test_port_collider_is_cs():
    c, port = frames(use_c_collider=True)
    np.testing.assert_allclose(port, c, atol=1e-6)
