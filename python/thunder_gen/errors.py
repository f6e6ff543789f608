"""The package's exceptions."""


class ThunderGenError(Exception):
    """Base of the errors below."""


class ManifestError(ThunderGenError):
    """manifest.json is missing, unreadable, or says something the loader cannot use."""


class BuildError(ThunderGenError):
    """The generated folder could not be compiled (the message carries the compiler's output)."""


class ExportError(ThunderGenError):
    """An export was refused: by thunder_gen.export, a graph input with no .npy form or inputs
    that do not match the exported graph's; by thunder_gen.thunder_export, a Thunder trace
    holding something trace format v1 cannot say."""


class StatusError(ThunderGenError, RuntimeError):
    """An entry point returned a status other than THUNDER_GEN_SUCCESS; `status` is the code and
    the message carries <trace>_status_string's words."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status
