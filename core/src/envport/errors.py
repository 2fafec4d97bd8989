"""Errors users can hit. Each says what was wrong and, where there is one, how to fix it."""


class EnvportError(Exception):
    """Base class of every error envport raises on purpose."""


class ActionError(EnvportError, ValueError):
    """An action of the wrong shape, dtype or value."""


class UnfinishedEpisodesError(EnvportError, RuntimeError):
    """Some evaluation episodes did not end within the step cap."""


class UnknownEnvError(EnvportError, KeyError):
    """An env name that no installed package registers."""

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return str(self.args[0])


class ReferenceNotInstalledError(EnvportError, RuntimeError):
    """The reference implementation is missing; the message names the install command."""

