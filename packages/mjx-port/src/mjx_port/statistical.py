"""The statistical L4 suites: episode returns under a fixed uniformly random policy, Gymnasium
(MuJoCo C) against the port, TOST on the mean return.

Why: L3 compares step by step only up to each env's chaos horizon (the port's roundoff, like a
1e-12 nudge of C, grows past any fixed bound within tens to hundreds of steps; docs/mjx.md).
Past it, what a user relies on is that whole episodes are distributed alike: same returns,
same falls, same episode lengths. Each suite plays one episode per env on 1,000 envs a side
(actions uniform in the action space, independent seeds a side) and asks whether the mean
returns are equivalent within a declared margin.

Margin: 0.2 standard deviations of the reference's per-episode return (a "small" standardized
difference), from the standard deviations below, measured on Gymnasium alone by
``python -m mjx_port.statistical`` (1,000 episodes per env, seeds other than the suites').
With 1,000 episodes a side the standard error of the difference is 0.045 sd and TOST passes
when the measured difference is within 0.127 sd: an exact port passes with probability 0.995,
a gap of 0.2 sd fails with probability 0.95 (tests/test_mjx_statistical.py plants one). The
port runs in float64, as in L1-L3 (the verify process enables x64 for them).
"""

from __future__ import annotations

import argparse
import time

from envport.registry import L4Suite, PolicyTransfer
from envport.verify.fixed_policy import play_episodes, random_policy_suite

MARGIN_SD = 0.2
# env -> standard deviation of the episode return under uniformly random actions, Gymnasium
# 1.4 / MuJoCo 3.17, 1,000 episodes each (python -m mjx_port.statistical, 2026-12-07, 2-vCPU
# VM; in brackets the seconds it took, where over a minute)
RETURN_SD = {
    "HalfCheetah-v5": 79.832,  # mean -288.7; every episode 1,000 steps (95 s)
    "Hopper-v5": 18.563,  # mean 17.6; ~23 steps
    "Walker2d-v5": 5.961,  # mean 1.5; ~22 steps
    "Ant-v5": 93.702,  # mean -53.7; ~157 steps, some to 1,000 (338 s)
    "Swimmer-v5": 10.968,  # mean 0.6; 1,000 steps (99 s)
    "Reacher-v5": 3.831,  # mean -42.8; 50 steps
    "Pusher-v5": 7.461,  # mean -149.6; 100 steps
    "InvertedPendulum-v5": 3.687,  # mean 5.3; ~6 steps
    "InvertedDoublePendulum-v5": 17.717,  # mean 48.5; ~6 steps
}


# env -> standard deviation of the episode return of a PPO policy trained on the port, sampling
# its actions, on Gymnasium: HalfCheetah-v5's seed-0 run of `envport train mjx` (1M steps,
# training return 1,204), 1,000 episodes (scripts/evaluate_accel.py --gymnasium --seed 100000,
# 2026-12-07: mean 1,204.0, sd 268.0; another 1,000 on other seeds: mean 1,202, sd 248)
TRAINED_RETURN_SD = {"HalfCheetah-v5": 267.977}


def margin(env_id: str, sd: dict[str, float] = RETURN_SD) -> float:
    return round(MARGIN_SD * sd[env_id], 3)


def random_policy_l4(env_id: str, make_reference, make_candidate,
                     episodes: int = 1000) -> L4Suite:
    """The suite for one env: ``make_reference(n)`` / ``make_candidate(n)`` give the two
    backends of ``n`` envs (the port's verify module passes Gymnasium and the float64 port; a
    test passes a planted one)."""
    sd = RETURN_SD[env_id]
    return random_policy_suite(
        f"{env_id}, uniformly random actions", make_reference, make_candidate,
        margin=margin(env_id), episodes=episodes,
        metric="episode return (sum of the env's rewards over its first episode)",
        note=(f"One episode per env, {episodes:,} envs a side, actions uniform in the action "
              f"space (numpy default_rng, independent seeds a side). Margin {margin(env_id)} "
              f"= {MARGIN_SD} x the reference's return sd {sd} (python -m "
              f"mjx_port.statistical; mjx_port/statistical.py says why)."))


def trained_policy_transfer(env_id: str, make_reference, make_candidate) -> PolicyTransfer:
    """L4 with trained policies for one training target (``mjx_port.train``): five PPO
    policies trained on the float32 port (its training settings, seeds 0-4) and five trained on
    Gymnasium through the host loop, each playing 1,000 episodes on Gymnasium and on
    ``make_candidate(n)`` -- the float64 port, which ``envport verify mjx`` steps on the host
    (the float32 env in one vmapped loop of 1,000 episodes does not finish in an hour on a
    2-core CPU; ``scripts/evaluate_accel.py`` plays it on an accelerator)."""
    m = margin(env_id, TRAINED_RETURN_SD)
    sd = TRAINED_RETURN_SD[env_id]
    return PolicyTransfer(
        name=f"{env_id} PPO policies", target=env_id, make_reference=make_reference,
        make_candidate_backend=make_candidate, margin=m, reference_train={}, max_steps=1000,
        metric="episode return (sum of the env's rewards over its first episode)",
        margin_note=(f"{MARGIN_SD} x the return sd {sd} of the seed-0 policy trained on the "
                     f"port, on Gymnasium (mjx_port/statistical.py); 1,000 episodes a side, the "
                     f"policy sampling its actions; the port side in float64"))


def pilot(env_ids, episodes: int = 1000) -> None:
    """Gymnasium alone: mean, sd and length of the random policy's returns (the margins)."""
    from mjx_port.backends import GymnasiumMujoco

    for env_id in env_ids:
        t = time.time()
        backend = GymnasiumMujoco(episodes, env_id)
        returns = play_episodes(backend, seed=10_000)
        backend.close()
        print(f"{env_id}: {episodes} episodes, return mean {returns.mean():.3f} sd "
              f"{returns.std(ddof=1):.3f} (stored sd {RETURN_SD[env_id]}), "
              f"{time.time() - t:.1f} s", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=pilot.__doc__)
    ap.add_argument("--envs", default=",".join(RETURN_SD))
    ap.add_argument("--episodes", type=int, default=1000)
    args = ap.parse_args(argv)
    pilot(args.envs.split(","), args.episodes)


if __name__ == "__main__":
    main()
