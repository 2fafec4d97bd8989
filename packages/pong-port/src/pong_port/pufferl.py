"""PufferLib 3.0.0's own trainer (PuffeRL) on puffer_pong: the anchor for our JAX PPO.

``build`` installs the pinned PufferLib sdist, with torch, into a venv of its own (torch stays
out of the repo's uv.lock): ``~/.cache/envport/pufferl/venv-<recipe hash>`` (the cache root
follows ``ENVPORT_CACHE``; ``ENVPORT_PUFFERL_DIR`` moves this folder). The sdist is built
without network (setup.py compiles the Pong binding only and downloads nothing); pip fetches
torch and the trainer's few runtime dependencies from the package index once.

``train`` runs what ``puffer train puffer_pong --train.device cpu --vec.backend Serial`` runs,
in that venv, through a small runner that imports ``pufferlib.pufferl`` and records PuffeRL's
own ``log`` dicts (plus each log's episode count and score sum) as JSON lines instead of
scraping its dashboard, then writes ``DIR/pufferl.json``. ``--hidden-size`` and ``--no-rnn``
change the policy (pong.ini's is PufferLib's ``Default`` MLP of 128 + its LSTM wrapper,
133,764 parameters); PuffeRL's CLI has no flag for either, so the runner sets them in the
config dict that ``pufferl.train`` takes. ``config`` prints the pong.ini/default.ini
hyperparameters without building anything.

CLI: ``python -m pong_port.pufferl {build,train,config}``.
"""

from __future__ import annotations

import argparse
import ast
import configparser
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
from dataclasses import asdict, dataclass
from pathlib import Path

from envport.cache import cache_root
from pong_port import reference_build as rb

ENV_NAME = "puffer_pong"
TORCH = "torch==2.15.0"
# What pufferlib.pufferl imports at run time. PufferLib's own requirements also pull wandb,
# neptune, pettingzoo, shimmy, pynvml and imageio, which only other modes and envs use, so we
# install it with --no-deps and list these instead. heavyball is pinned: with today's release
# PuffeRL's Muon optimiser silently stops Pong from learning.
RUNTIME = (
    "numpy==1.26.4",  # pufferlib 3.0.0 requires numpy<2.0
    "heavyball==1.7.2",
    "gymnasium==0.29.1",
    "gym==0.23.0",  # pufferlib.spaces imports gym; setup.py caps it at 0.23
    "pyro-ppl",  # imported by pufferlib.sweep, which pufferl imports
    "psutil",
    "rich",
    "rich_argparse",
    "setuptools",
    "wheel",
)
# setup.py compiles every ocean env found by this glob; the env var lets us build pong alone.
GLOB_LINE = "glob.glob('pufferlib/ocean/**/binding.c', recursive=True)"
GLOB_PATCH = "glob.glob(os.environ.get('PUFFER_OCEAN_GLOB', 'pufferlib/ocean/**/binding.c'), recursive=True)"
# setup.py downloads raylib/box2d only when these folders are missing; pong needs none of them
# (the linux raylib it links is in the sdist).
EMPTY_DIRS = ("raylib-5.5_webassembly", "box2d-web", "box2d-linux-amd64")
RECIPE = {
    "sdist_sha256": rb.SDIST_SHA256, "torch": TORCH, "runtime": RUNTIME, "patch": GLOB_PATCH,
    "python": f"{sys.version_info.major}.{sys.version_info.minor}",
}
STAMP = "envport-pufferl.json"
BUILD_COMMAND = "python -m pong_port.pufferl build"
# train keys copied into pufferl.json (pong.ini over default.ini, as PuffeRL resolved them)
TRAIN_KEYS = (
    "total_timesteps", "seed", "optimizer", "learning_rate", "anneal_lr", "gamma", "gae_lambda",
    "update_epochs", "clip_coef", "vf_coef", "vf_clip_coef", "max_grad_norm", "ent_coef",
    "adam_beta1", "adam_beta2", "adam_eps", "batch_size", "minibatch_size", "max_minibatch_size",
    "bptt_horizon", "vtrace_rho_clip", "vtrace_c_clip", "prio_alpha", "prio_beta0", "precision",
    "torch_deterministic", "device",
)
# puffer_pong's spaces: 8 float observations, Discrete(3) actions
OBS_DIM, NUM_ACTIONS = 8, 3
GOAL, GOAL_EPISODES = 20.0, 100


class PufferlError(RuntimeError):
    """A build or training step failed; the message says what to do."""


@dataclass(frozen=True)
class PufferPolicy:
    """PuffeRL's policy on puffer_pong: PufferLib's ``Default`` (one GELU layer of
    ``hidden_size`` shared by the actor and critic heads), wrapped in its LSTM of the same size
    when ``rnn``. pong.ini's: ``PufferPolicy(128, True)``."""

    hidden_size: int = 128
    rnn: bool = True

    def params(self, obs_dim: int = OBS_DIM, actions: int = NUM_ACTIONS) -> int:
        """The parameter count PuffeRL reports as its model size."""
        h = self.hidden_size
        mlp = (obs_dim + 1) * h + (h + 1) * actions + (h + 1)  # encoder, actor, value
        lstm = 4 * h * (h + h) + 2 * 4 * h  # weight_ih, weight_hh, both biases
        return mlp + (lstm if self.rnn else 0)

    def describe(self) -> str:
        return f"MLP {self.hidden_size}" + (f" + LSTM {self.hidden_size}" if self.rnn else "")


PONG_INI_POLICY = PufferPolicy()


def base_dir() -> Path:
    return Path(os.environ.get("ENVPORT_PUFFERL_DIR") or cache_root() / "pufferl")


def recipe_hash() -> str:
    return hashlib.sha256(json.dumps(RECIPE, sort_keys=True).encode()).hexdigest()[:12]


def venv_dir() -> Path:
    return base_dir() / f"venv-{recipe_hash()}"


def venv_python() -> Path:
    return venv_dir() / "bin" / "python"


def is_current() -> bool:
    """The venv exists and was built, to the end, from this module's recipe."""
    stamp = venv_dir() / STAMP
    try:
        recorded = json.loads(stamp.read_text())["recipe"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    # compare as JSON: the recipe's tuples come back from the stamp as lists
    return venv_python().exists() and recorded == json.loads(json.dumps(RECIPE))


def _say(msg: str) -> None:
    print(f"[pufferl] {msg}", file=sys.stderr, flush=True)


NETWORK_HINT = (
    "This step downloads from the package index (PyPI, or PIP_INDEX_URL / PIP_FIND_LINKS if "
    "set; torch with its CUDA libraries is several GB). Without network: run "
    f"`{BUILD_COMMAND}` once where the index is reachable (the venv is cached), or point "
    "PIP_INDEX_URL at a mirror or PIP_FIND_LINKS at a folder of wheels; then rerun it.")
COMPILE_HINT = ("Building the sdist needs a C compiler and the Python headers (Debian: "
                "apt-get install -y gcc python3-dev); no network is used. Fix and rerun "
                f"`{BUILD_COMMAND}`.")


def _run(cmd: list[str], log: Path, what: str, hint: str, env: dict | None = None,
         cwd: Path | None = None) -> None:
    """Run a build step with its output appended to ``log``; on failure raise with the log's
    tail and ``hint`` (what to do)."""
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(map(str, cmd))}\n")
        out.flush()
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    if rc != 0:
        tail = "".join(log.read_text().splitlines(keepends=True)[-25:])
        raise PufferlError(f"{what} failed (exit {rc}). Last lines of {log}:\n{tail}\n{hint}")


def _sdist() -> Path:
    downloads = cache_root() / "downloads"
    try:
        return rb.download_sdist(downloads)
    except (urllib.error.URLError, OSError, RuntimeError) as exc:
        raise PufferlError(
            f"could not get {rb.SDIST} from {rb._index_url()}: {exc}. Check the network (or "
            f"PIP_INDEX_URL), or put the file (sha256 {rb.SDIST_SHA256}) in {downloads}; then "
            f"rerun `{BUILD_COMMAND}`.") from exc


def _source() -> Path:
    """The whole sdist, extracted once and patched (reference_build extracts only pong)."""
    src = base_dir() / f"src-{rb.PUFFERLIB_VERSION}"
    if (src / "setup.py").exists():
        return src
    sdist = _sdist()
    tmp = src.with_suffix(".part")
    shutil.rmtree(tmp, ignore_errors=True)  # left over from an interrupted extraction
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp, filter="data")
    root = tmp / f"pufferlib-{rb.PUFFERLIB_VERSION}"
    setup_py = root / "setup.py"
    text = setup_py.read_text()
    if GLOB_LINE not in text:
        raise PufferlError(f"{setup_py}: the ocean glob to patch ({GLOB_LINE}) is not there; "
                           "is this the pinned sdist?")
    setup_py.write_text(text.replace(GLOB_LINE, GLOB_PATCH))
    for name in EMPTY_DIRS:
        (root / name).mkdir(exist_ok=True)
    root.rename(src)
    tmp.rmdir()
    return src


def build(force: bool = False) -> Path:
    """Make the PuffeRL venv if it is not current; return its python."""
    venv = venv_dir()
    if is_current() and not force:
        _say(f"up to date: {venv}")
        return venv_python()
    base_dir().mkdir(parents=True, exist_ok=True)
    src = _source()
    log = base_dir() / f"build-{recipe_hash()}.log"
    log.write_text("")
    (venv / STAMP).unlink(missing_ok=True)
    _say(f"creating {venv} (log: {log})")
    _run([sys.executable, "-m", "venv", "--clear", str(venv)], log, "creating the venv",
         "Is the venv module there (Debian: apt-get install -y python3-venv)?")
    pip = [str(venv_python()), "-m", "pip", "--disable-pip-version-check"]
    install = [*pip, "install", "--progress-bar", "off"]
    _say(f"installing {TORCH} and the trainer's runtime deps (torch's CUDA wheels are large)")
    _run([*install, TORCH, *RUNTIME], log, f"pip install {TORCH} and the runtime deps",
         NETWORK_HINT)
    # --no-build-isolation: setup.py imports torch to build pufferlib._C (the advantage kernel;
    # CPU-only without nvcc) and must see the torch we installed, not a fresh one.
    _say(f"building pufferlib {rb.PUFFERLIB_VERSION} (pong binding + pufferlib._C)")
    env = {**os.environ, "PUFFER_OCEAN_GLOB": "pufferlib/ocean/pong/binding.c"}
    _run([*install, "--no-build-isolation", "--no-deps", str(src)], log,
         f"building pufferlib {rb.PUFFERLIB_VERSION} from {src}", COMPILE_HINT, env)
    # torch first: _C links against libc10, which only loading torch makes findable. cwd:
    # `import pufferlib` leaves a `resources` symlink in the working directory.
    check = "import torch, pufferlib._C, pufferlib.pufferl, pufferlib.ocean.pong.binding"
    _run([str(venv_python()), "-c", check], log, "importing the built trainer",
         f"The build finished but does not import: see {log}; `{BUILD_COMMAND} --force` "
         "starts over.", cwd=base_dir())
    freeze = subprocess.run([*pip, "freeze"], capture_output=True, text=True).stdout.split()
    (venv / STAMP).write_text(json.dumps({"recipe": RECIPE, "freeze": freeze}, indent=1))
    _say(f"built {venv}")
    return venv_python()


# Runs inside the PuffeRL venv: argv = [jsonl path, env name, policy JSON or "", *puffer
# flags]. It does what `puffer train ENV FLAGS` does (pufferl.main -> load_config -> train)
# with a logger and a PuffeRL subclass that record the resolved config and every log dict.
RUNNER = r"""
import json, math, random, sys, time
log_path, env_name, policy, *flags = sys.argv[1:]
sys.argv = ['puffer', *flags]
import numpy as np, torch
from pufferlib import pufferl

out = open(log_path, 'w')
def emit(kind, **rec):
    out.write(json.dumps({'kind': kind, 'time': time.time(), **rec}, default=str) + '\n')
    out.flush()

def number(v):
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None

args = pufferl.load_config(env_name)
if policy:  # load_policy builds policy_cls(env, **args['policy']), then rnn_cls(env, it, **args['rnn'])
    policy = json.loads(policy)
    h = policy['hidden_size']
    args['policy'] = {'hidden_size': h}
    if policy['rnn']:
        args['rnn'] = {'input_size': h, 'hidden_size': h}
    else:
        args['rnn_name'] = None
        args['train']['use_rnn'] = False
# PuffeRL 3.0 comments out its own seeding; seed like its sweep() does so --train.seed also
# fixes the policy init and minibatch sampling.
seed = args['train']['seed']
random.seed(seed); np.random.seed(seed); torch.manual_seed(seed)
emit('args', args=args)
phase = ['setup']
episodes = [None, None]  # the coming log's episode count and score sum

class Recorder(pufferl.PuffeRL):
    def __init__(self, config, vecenv, policy, logger=None):
        super().__init__(config, vecenv, policy, logger)
        emit('trainer', config=self.config, model_size=self.model_size,
             total_agents=self.total_agents, segments=self.segments,
             minibatch_size=self.minibatch_size, total_minibatches=self.total_minibatches,
             total_epochs=self.total_epochs, torch=torch.__version__,
             policy_repr=repr(self.uncompiled_policy))

    def train(self):
        phase[0] = 'train'
        try:
            return super().train()
        finally:
            phase[0] = 'final_eval'  # the logs after the last train() are train()'s last eval

    def mean_and_log(self):
        # before the lists become means: each C log is one (n, mean score) pair of an interval
        n, score = self.stats.get('n', []), self.stats.get('score', [])
        if len(n) == len(score):
            episodes[:] = [float(sum(n)), float(sum(a * b for a, b in zip(n, score)))]
        else:
            episodes[:] = [None, None]
        return super().mean_and_log()

class Logger(pufferl.NoLogger):
    def log(self, logs, step):
        rec = {k: number(v) for k, v in logs.items()}
        emit('log', phase=phase[0], step=step, logs=rec, episodes=episodes[0],
             score_sum=episodes[1])
        print(f"[pufferl] {phase[0]} step {step} SPS {rec.get('SPS') or 0:.0f} "
              f"score {rec.get('environment/score')}", file=sys.stderr, flush=True)

pufferl.PuffeRL = Recorder
pufferl.train(env_name, args=args, logger=Logger(args))
emit('done')
"""


def puffer_flags(steps: int, seed: int, data_dir: Path) -> list[str]:
    """The `puffer train` flags: load_config turns ini keys into --section.key-with-dashes."""
    return [
        "--train.device", "cpu", "--vec.backend", "Serial",
        "--train.total-timesteps", str(steps), "--train.seed", str(seed), "--vec.seed", str(seed),
        "--train.data-dir", str(data_dir),
    ]


# -- learning curves: the same rules for PuffeRL's logs and our trainer's updates -----------

def recent_means(points: list[tuple[int, float, float]],
                 episodes: int = GOAL_EPISODES) -> list[tuple[int, float | None]]:
    """``points``: (env step, episodes finished in the interval, sum of their scores), one per
    log interval (a PuffeRL log, one of our updates). For each point: (step, the mean score of
    the latest whole intervals that hold at least ``episodes`` episodes), None until that many
    episodes have finished. envport's trainer reports its goal step by the same rule."""
    out = []
    for i, (step, _, _) in enumerate(points):
        count = total = 0.0
        for _, n, s in reversed(points[:i + 1]):
            count, total = count + n, total + s
            if count >= episodes:
                break
        out.append((step, total / count if count >= episodes else None))
    return out


def first_at_goal(means: list[tuple[int, float | None]], goal: float = GOAL) -> int | None:
    """The first step whose recent mean reaches ``goal``."""
    return next((step for step, m in means if m is not None and m >= goal), None)


def steady_sps(points: list[tuple[int, float]], skip: float = 0.2) -> float | None:
    """Env steps per second between the first point past ``skip`` of the run and the last
    one (warm-up, compilation and the first logs left out); ``points``: (step, seconds)."""
    if not points:
        return None
    last_step, last_t = points[-1]
    step0, t0 = next(p for p in points if p[0] >= skip * last_step)
    return (last_step - step0) / (last_t - t0) if last_t > t0 else None


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summarize(records: list[dict], goal: float = GOAL, goal_episodes: int = GOAL_EPISODES) -> dict:
    """pufferl.json's content from the runner's records."""
    by_kind: dict[str, list[dict]] = {}
    for rec in records:
        by_kind.setdefault(rec["kind"], []).append(rec)
    if "trainer" not in by_kind:
        raise PufferlError("PuffeRL never started training: see pufferl_stderr.log next to "
                           "the log")
    args = by_kind["args"][0]["args"]
    trainer = by_kind["trainer"][0]
    logs = [r for r in by_kind.get("log", []) if r["phase"] == "train"]
    final = [r for r in by_kind.get("log", []) if r["phase"] == "final_eval"]
    cfg = trainer["config"]
    timed = [(int(r["logs"]["agent_steps"]), r["logs"]["uptime"]) for r in logs]
    curve = [[s, r["logs"]["environment/score"]] for (s, _), r in zip(timed, logs, strict=True)
             if r["logs"].get("environment/score") is not None]
    counted = [(s, r.get("episodes") or 0.0, r.get("score_sum") or 0.0)
               for (s, _), r in zip(timed, logs, strict=True)]
    means = recent_means(counted, goal_episodes)
    steps, uptime = timed[-1] if timed else (0, 0.0)
    return {
        "env": ENV_NAME,
        "torch": trainer.get("torch"),
        "config": {
            **{key: cfg.get(key) for key in TRAIN_KEYS},
            "policy_params": trainer["model_size"],
            "policy": args.get("policy_name"), "policy_kwargs": args.get("policy"),
            "rnn": args.get("rnn_name"), "rnn_kwargs": args.get("rnn"),
            "num_agents": trainer["total_agents"],
            "vec": args.get("vec"), "env_kwargs": args.get("env"),
            "segments": trainer["segments"],
            "minibatches_per_epoch": trainer["total_minibatches"],
            "epochs": trainer["total_epochs"],
        },
        "train_steps": steps,
        "train_time_s": uptime,
        "sps": steps / uptime if uptime else None,
        "sps_steady": steady_sps(timed),
        "score_curve": curve,  # PuffeRL's environment/score per log
        "recent_curve": [[s, m] for s, m in means],  # mean of the latest >= goal_episodes
        "episodes": sum(n for _, n, _ in counted),
        "goal": goal, "goal_episodes": goal_episodes,
        "goal_reached_at_step": first_at_goal(means, goal),
        "final_score": means[-1][1] if means else None,
        "final_eval_score": final[-1]["logs"].get("environment/score") if final else None,
        "finished": "done" in by_kind,
    }


def train(steps: int = 12_000_000, seed: int = 42, out: Path | str = "reports/pufferl",
          policy: PufferPolicy | None = None) -> dict:
    """Run PuffeRL on puffer_pong (``policy``: pong.ini's when None); write and return
    ``out/pufferl.json``."""
    python = build()
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "pufferl_log.jsonl"
    flags = puffer_flags(steps, seed, out / "experiments")
    policy_arg = json.dumps(asdict(policy)) if policy is not None else ""
    cmd = [str(python), "-c", RUNNER, str(jsonl), ENV_NAME, policy_arg, *flags]
    _say(f"puffer train {ENV_NAME} {' '.join(flags)}"
         + (f" (policy {policy.describe()})" if policy else ""))
    start = time.time()
    # cwd=out: `import pufferlib` drops a resources symlink into the working directory; the
    # dashboard (stdout) goes to a file, the runner's one-line progress and errors to stderr.
    err_path = out / "pufferl_stderr.log"
    with open(out / "pufferl_dashboard.log", "w") as dash, open(err_path, "w") as err:
        proc = subprocess.Popen(cmd, cwd=out, stdout=dash, stderr=subprocess.PIPE, text=True)
        for line in proc.stderr:
            err.write(line)
            if line.startswith("[pufferl]"):
                print(line, end="", file=sys.stderr)
        rc = proc.wait()
    wall = time.time() - start
    if rc != 0:
        tail = "".join(err_path.read_text().splitlines(keepends=True)[-15:])
        raise PufferlError(f"PuffeRL exited {rc}; last lines of {err_path}:\n{tail}")
    result = {"steps_requested": steps, "seed": seed, "wall_time_s": wall,
              "policy_requested": asdict(policy or PONG_INI_POLICY),
              **summarize(read_records(jsonl))}
    (out / "pufferl.json").write_text(json.dumps(result, indent=1))
    return result


def ini_config(default_ini: str, env_ini: str) -> dict[str, dict]:
    """The sections pufferl.load_config builds from default.ini overlaid by the env's ini."""
    parser = configparser.ConfigParser()
    parser.read_string(default_ini)
    parser.read_string(env_ini)
    config: dict[str, dict] = {}
    for section in parser.sections():
        for key, raw in parser[section].items():
            try:
                value = ast.literal_eval(raw)
            except (ValueError, SyntaxError):
                value = raw  # e.g. muon, cuda, Serial: bare words stay strings
            config.setdefault(section, {})[key] = value
    return config


def sdist_ini_config() -> dict[str, dict]:
    """pong.ini over default.ini straight from the pinned sdist (no build needed)."""
    prefix = f"pufferlib-{rb.PUFFERLIB_VERSION}/pufferlib/config/"
    with tarfile.open(_sdist()) as tar:
        def read(name: str) -> str:
            return tar.extractfile(prefix + name).read().decode()

        return ini_config(read("default.ini"), read("ocean/pong.ini"))


SUMMARY_KEYS = ("train_steps", "train_time_s", "wall_time_s", "sps", "sps_steady",
                "goal_reached_at_step", "final_score", "final_eval_score")


def _cmd_build(args) -> str:
    return str(build(force=args.force))


def _cmd_train(args) -> str:
    policy = None
    if args.hidden_size is not None or args.no_rnn:
        policy = PufferPolicy(args.hidden_size or PONG_INI_POLICY.hidden_size, not args.no_rnn)
    res = train(args.steps, args.seed, args.out, policy)
    return json.dumps({k: res[k] for k in SUMMARY_KEYS}, indent=1)


def _cmd_config(args) -> str:
    return json.dumps(sdist_ini_config(), indent=1)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pong_port.pufferl",
                                description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="make the PuffeRL venv (a no-op when current)")
    b.add_argument("--force", action="store_true", help="rebuild even when current")
    b.set_defaults(run=_cmd_build)
    t = sub.add_parser("train", help="run PuffeRL on puffer_pong and write DIR/pufferl.json")
    t.add_argument("--steps", type=int, default=12_000_000, help="total timesteps (pong.ini's)")
    t.add_argument("--seed", type=int, default=42)
    t.add_argument("--out", default="reports/pufferl", help="DIR")
    t.add_argument("--hidden-size", type=int, help="the policy's width (pong.ini: 128)")
    t.add_argument("--no-rnn", action="store_true", help="no LSTM (pong.ini has one)")
    t.set_defaults(run=_cmd_train)
    c = sub.add_parser("config", help="print pong.ini over default.ini as JSON")
    c.set_defaults(run=_cmd_config)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        print(args.run(args))
    except PufferlError as exc:
        sys.exit(f"error: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
