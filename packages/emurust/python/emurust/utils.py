"""PyBoy 2.8.1's exception classes and WindowEvent numbers (pyboy/utils.py), under the same
names, so code written against ``pyboy`` keeps its ``except`` clauses when it switches to emurust.

Translated from PyBoy 2.8.1 pyboy/utils.py (LGPL-3.0).
"""

from __future__ import annotations


class PyBoyException(Exception):
    """Base class of every error emurust raises on purpose (as in PyBoy)."""


class PyBoyInternalError(PyBoyException):
    pass


class PyBoyAssertException(PyBoyException):
    pass


class PyBoyOutOfBoundsException(PyBoyException):
    pass


class PyBoyNotImplementedException(PyBoyException):
    pass


class PyBoyInvalidInputException(PyBoyException):
    pass


class PyBoyInvalidOperationException(PyBoyException):
    pass


class PyBoyDependencyError(PyBoyException):
    pass


class PyBoyFeatureDisabledError(PyBoyException):
    pass


class EmurustIllegalOpcodeException(PyBoyException):
    """The CPU fetched an opcode the SM83 does not have (D3 DB DD E3 E4 EB EC ED F4 FC FD).
    PyBoy spins forever there; emurust stops the frame with this error instead."""


class WindowEvent:
    """The button events of PyBoy's ``WindowEvent`` (same numbers); emurust's ``send_input``
    accepts only these 16."""

    QUIT = 0
    PRESS_ARROW_UP = 1
    PRESS_ARROW_DOWN = 2
    PRESS_ARROW_RIGHT = 3
    PRESS_ARROW_LEFT = 4
    PRESS_BUTTON_A = 5
    PRESS_BUTTON_B = 6
    PRESS_BUTTON_SELECT = 7
    PRESS_BUTTON_START = 8
    RELEASE_ARROW_UP = 9
    RELEASE_ARROW_DOWN = 10
    RELEASE_ARROW_RIGHT = 11
    RELEASE_ARROW_LEFT = 12
    RELEASE_BUTTON_A = 13
    RELEASE_BUTTON_B = 14
    RELEASE_BUTTON_SELECT = 15
    RELEASE_BUTTON_START = 16


# button name -> index; PRESS event = 1 + index, RELEASE event = 9 + index (WindowEvent order)
BUTTONS = ("up", "down", "right", "left", "a", "b", "select", "start")
