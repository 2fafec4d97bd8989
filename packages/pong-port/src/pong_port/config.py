"""Pong's constructor parameters, exactly those of PufferLib 3.0.0 ``ocean/pong``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

FLOAT_FIELDS = (
    "width", "height", "paddle_width", "paddle_height", "ball_width", "ball_height",
    "paddle_speed", "ball_initial_speed_x", "ball_initial_speed_y", "ball_max_speed_y",
    "ball_speed_y_increment",
)


@dataclass(frozen=True)
class PongConfig:
    """Defaults are the reference's. The C code stores the float fields as ``float`` and
    ``max_score``/``frameskip``/``continuous`` as integers; :meth:`f32` gives the former
    exactly as C sees them (double -> float rounding)."""

    width: float = 500
    height: float = 640
    paddle_width: float = 20
    paddle_height: float = 70
    ball_width: float = 32
    ball_height: float = 32
    paddle_speed: float = 8
    ball_initial_speed_x: float = 10
    ball_initial_speed_y: float = 1
    ball_speed_y_increment: float = 3
    ball_max_speed_y: float = 13
    max_score: int = 21
    frameskip: int = 1
    continuous: bool = False

    def __post_init__(self):
        for name in FLOAT_FIELDS:
            v = getattr(self, name)
            if not np.isfinite(v):
                raise ValueError(f"PongConfig.{name} must be finite, got {v}")
        if int(self.max_score) < 1:
            raise ValueError(f"max_score must be >= 1 (the reference divides by it), got {self.max_score}")
        if int(self.frameskip) < 1:
            raise ValueError(f"frameskip must be >= 1, got {self.frameskip}")

    def f32(self, name: str) -> np.float32:
        return np.float32(getattr(self, name))

    @property
    def min_paddle_y(self) -> np.float32:
        return -self.f32("paddle_height") / np.float32(2)

    @property
    def max_paddle_y(self) -> np.float32:
        return self.f32("height") - self.f32("paddle_height") / np.float32(2)

    def kwargs(self) -> dict:
        """Keyword arguments for the reference constructor."""
        return dataclasses.asdict(self)
