"""Exercise checks, one module per lesson (e.g. `from mha_lesson.exercises import lesson02 as ex`).

Every check returns a `Feedback`: right or wrong with a hint that helps without giving the answer away.
"""

from ._base import Feedback, right, wrong

__all__ = ["Feedback", "right", "wrong"]
